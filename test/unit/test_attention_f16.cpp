// The CPU backend's F16 KV cache (per head, keys and values cell-major) and its attention:
// against a double-precision reference computed here from the cells as read_cells
// returns them (cell rows, the KV file's format), for grouped and plain multi-head
// shapes, single-row decode and multi-row prefill blocks, long causal ranges, sliding
// windows; and
// write_cells of cell rows into a second cache gives the same attention bit for bit.
#include "backend/backend.hpp"
#include "core/fp16.hpp"

#include <genie/error.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace genie;

namespace {

float f16_round(float x) { return fp16_to_fp32(fp32_to_fp16(x)); }

/// Attention of query rows [0, n_q) at positions first_pos + r over the F16 cells K, V
/// (cell rows), in double, with q and the probabilities rounded through F16 as the kernel
/// (and ggml) does.
std::vector<double> reference(const std::vector<float>& q, int32_t n_q, int32_t first_pos, const std::vector<float>& K,
                              const std::vector<float>& V, int32_t n_head, int32_t n_head_kv, int32_t hd, float scale,
                              int32_t window) {
    const int64_t kv_dim = int64_t{n_head_kv} * hd, q_dim = int64_t{n_head} * hd;
    const int32_t group = n_head / n_head_kv;
    std::vector<double> out(static_cast<size_t>(n_q * q_dim));
    for (int32_t r = 0; r < n_q; ++r)
        for (int32_t h = 0; h < n_head; ++h) {
            const int32_t hk = h / group, n_kv = first_pos + r + 1;
            // a sliding window hides a key at p0 from the query at p1 when p1 - p0 >= window
            const int32_t t0 = window > 0 ? std::max(0, n_kv - window) : 0;
            std::vector<double> p(static_cast<size_t>(n_kv), -INFINITY);
            for (int32_t t = t0; t < n_kv; ++t) {
                double dot = 0;
                for (int32_t i = 0; i < hd; ++i)
                    dot += double{K[static_cast<size_t>(t * kv_dim + hk * hd + i)]} *
                           f16_round(q[static_cast<size_t>(r * q_dim + h * hd + i)]);
                p[static_cast<size_t>(t)] = dot * scale;
            }
            const double mx = *std::max_element(p.begin(), p.end());
            double sum = 0;
            for (double& x : p) sum += (x = std::exp(x - mx));
            for (int32_t i = 0; i < hd; ++i) {
                double acc = 0;
                for (int32_t t = t0; t < n_kv; ++t)
                    acc += f16_round(static_cast<float>(p[static_cast<size_t>(t)] / sum)) *
                           double{V[static_cast<size_t>(t * kv_dim + hk * hd + i)]};
                out[static_cast<size_t>(r * q_dim + h * hd + i)] = acc;
            }
        }
    return out;
}

}  // namespace

TEST_CASE("attention f16: equals a double-precision reference, and cells survive read_cells and write_cells", "[attention]") {
    struct Shape {
        int32_t n_head, n_head_kv, head_dim;
    };
    // 16/8: Qwen3-0.6B's grouping; 14/2: Qwen2-0.5B's (groups of 7); 4/4: no grouping (one
    // query per KV head: the decode path's two-column form); head_dim 72: not a multiple of 32.
    // The 16/8 cache (6.8 MB each of K and V) is on the 2 MiB-aligned huge-page allocation,
    // the 4/4 one (0.8 MB) on operator new (core/huge_pages.hpp).
    for (const Shape shape : {Shape{16, 8, 128}, Shape{14, 2, 64}, Shape{4, 4, 32}, Shape{6, 2, 72}}) {
        DYNAMIC_SECTION("heads " << shape.n_head << "/" << shape.n_head_kv << " head_dim " << shape.head_dim) {
            auto be = backend::make_cpu_backend(2);
            const int32_t n_ctx = 1100, n_cells = 1037;
            const backend::KvLayout layout{3, n_ctx, shape.n_head_kv, shape.head_dim, KvType::F16};
            auto cache = be->create_kv_cache(layout);
            std::mt19937 rng(77);
            std::normal_distribution<float> normal(0.0f, 1.0f);
            const int64_t kv_dim = int64_t{shape.n_head_kv} * shape.head_dim, q_dim = int64_t{shape.n_head} * shape.head_dim;
            std::vector<float> kbuf(static_cast<size_t>(n_cells * kv_dim)), vbuf(kbuf.size());
            for (auto& x : kbuf) x = normal(rng) * 0.6f;
            for (auto& x : vbuf) x = normal(rng);
            // Into layer 2 (the others stay zero) in three stores: a prefill of 700 cells, one
            // decode cell, then the rest.
            const int32_t parts[] = {0, 700, 701, n_cells};
            for (int s = 0; s < 3; ++s) {
                const int32_t b = parts[s], n = parts[s + 1] - parts[s];
                backend::Tensor k{kbuf.data() + b * kv_dim, n, kv_dim}, v{vbuf.data() + b * kv_dim, n, kv_dim};
                be->kv_store(*cache, 2, k, v, b);
            }
            // read_cells: cell rows of F16, each the stored float rounded to nearest.
            std::vector<uint16_t> k16(static_cast<size_t>(n_cells * kv_dim)), v16(k16.size());
            cache->read_cells(2, 0, n_cells, k16.data(), v16.data());
            std::vector<float> K(k16.size()), V(v16.size());
            size_t wrong = 0;
            for (size_t i = 0; i < K.size(); ++i) {
                K[i] = fp16_to_fp32(k16[i]);
                V[i] = fp16_to_fp32(v16[i]);
                wrong += K[i] != f16_round(kbuf[i]) || V[i] != f16_round(vbuf[i]);
            }
            REQUIRE(wrong == 0);
            // A second cache restored from those cell rows (KV persistence), cells placed at 0.
            auto restored = be->create_kv_cache(layout);
            restored->write_cells(2, 0, n_cells, k16.data(), v16.data());

            const float scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
            struct Run {
                int32_t first_pos, n_q, window;
            };
            // decode at the end of the cells, decode early, a prefill block continuing the
            // cache, a prefill from the start (rows of different causal ranges); then with a
            // sliding window (gemma3): decode past it, decode within it, prompt blocks whose
            // rows start at different cells, a prompt from the start crossing a small window.
            for (const Run run : {Run{n_cells - 1, 1, 0}, Run{40, 1, 0}, Run{n_cells - 9, 9, 0}, Run{0, 45, 0},
                                  Run{n_cells - 1, 1, 512}, Run{40, 1, 512}, Run{600, 70, 37}, Run{0, 45, 16},
                                  Run{n_cells - 9, 9, 1}}) {
                INFO("first_pos " << run.first_pos << " rows " << run.n_q << " window " << run.window);
                std::vector<float> qbuf(static_cast<size_t>(run.n_q * q_dim)), o1(qbuf.size()), o2(qbuf.size());
                for (auto& x : qbuf) x = normal(rng);
                backend::Tensor q{qbuf.data(), run.n_q, q_dim}, out1{o1.data(), run.n_q, q_dim}, out2{o2.data(), run.n_q, q_dim};
                be->attention(q, *cache, 2, run.first_pos, shape.n_head, scale, run.window, out1);
                be->attention(q, *restored, 2, run.first_pos, shape.n_head, scale, run.window, out2);
                REQUIRE(std::memcmp(o1.data(), o2.data(), o1.size() * sizeof(float)) == 0);
                const std::vector<double> want =
                    reference(qbuf, run.n_q, run.first_pos, K, V, shape.n_head, shape.n_head_kv, shape.head_dim, scale, run.window);
                double max_err = 0;
                for (size_t i = 0; i < want.size(); ++i) max_err = std::max(max_err, std::fabs(want[i] - o1[i]));
                // Float sums of up to ~1000 F16 products of |p| <= 1 and |v| ~ 1, and the
                // probabilities' F16 rounding done in float here and in double there.
                CHECK(max_err < 2e-3);
            }
        }
    }
}

TEST_CASE("attention f16: read_cells and write_cells refuse cells out of range", "[attention]") {
    auto be = backend::make_cpu_backend(1);
    const backend::KvLayout layout{2, 16, 2, 32, KvType::F16};
    auto cache = be->create_kv_cache(layout);
    std::vector<uint16_t> k(17 * 64), v(k.size());
    CHECK_THROWS_AS(cache->read_cells(0, 10, 7, k.data(), v.data()), Error);
    CHECK_THROWS_AS(cache->write_cells(2, 0, 1, k.data(), v.data()), Error);
    CHECK_NOTHROW(cache->write_cells(1, 0, 16, k.data(), v.data()));
}
