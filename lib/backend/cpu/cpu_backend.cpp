// The CPU backend. Every op follows ggml's CPU arithmetic (operation order, f16 rounding
// points, activation quantization before a quantized dot product) so that results track
// llama.cpp's closely. Matrix products and attention run on the kernel set of
// backend/cpu/kernels (run-time ISA dispatch); with GENIE_CPU_ISA=scalar everything runs
// the plain reference loops (double accumulation), the oracle the fast paths are tested
// against. Ops are threaded over rows and allocate nothing per call once warm.
#include "backend/backend.hpp"
#include "backend/cpu/attention_q8.hpp"
#include "backend/cpu/kernels/kernels.hpp"
#include "backend/cpu/matmul.hpp"
#include "backend/cpu/simd_math.hpp"

#include "core/fp16.hpp"
#include "core/huge_pages.hpp"
#include "core/thread_pool.hpp"
#include "quant/quant.hpp"

#include <genie/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>
#include <functional>
#include <type_traits>
#include <vector>

namespace genie::backend {

size_t KvLayout::bytes() const noexcept {
    return 2 * static_cast<size_t>(n_layer) * static_cast<size_t>(n_ctx) * row_bytes();
}

namespace {

/// Cells [first, first + n) of one layer between cell rows (n rows of every head's run of
/// `head_bytes`: what kv_store gets and the KV file holds) and a head-major layer (per
/// head, n_ctx runs of `head_bytes`): into the layer when kIntoCache, out of it otherwise;
/// heads [h0, h1) of the n_head.
template <bool kIntoCache>
void copy_head_runs(uint8_t* layer, int32_t n_ctx, int32_t n_head, size_t head_bytes, int32_t first, int32_t n,
                    std::conditional_t<kIntoCache, const uint8_t*, uint8_t*> rows, int32_t h0, int32_t h1) {
    for (int32_t h = h0; h < h1; ++h)
        for (int32_t c = 0; c < n; ++c) {
            uint8_t* cached = layer + cpu_q8::head_cell_offset(h, first + c, n_ctx, head_bytes);
            auto* cell = rows + (static_cast<size_t>(c) * static_cast<size_t>(n_head) + static_cast<size_t>(h)) * head_bytes;
            if constexpr (kIntoCache) std::memcpy(cached, cell, head_bytes);
            else std::memcpy(cell, cached, head_bytes);
        }
}

/// The KV cache. Q8_0: per layer and KV head, n_ctx cells of head_dim / 32 blocks
/// (attention_q8.hpp). F16 / F32: per layer and KV head, K and V each as [n_ctx, head_dim]
/// (a head's cells contiguous, cell-major; llama.cpp's layout with flash attention).
/// Attention streams each head's K and V sequentially (with cell rows holding every
/// head, a head read 256 of every 2048 bytes, which ran at half the speed), and storing a
/// token writes two runs of head_dim per head. (Until 2026-12-06 V was transposed,
/// [head_dim, n_ctx], as llama.cpp keeps it without flash attention: a token's store
/// then touched head_dim lines n_ctx apart per head; docs/kv-cache.md.) KV persistence
/// sees cell rows (read_cells).
class CpuKvCache final : public KvCache {
public:
    explicit CpuKvCache(const KvLayout& layout) : KvCache(layout) {
        const size_t per_layer = static_cast<size_t>(layout.n_ctx) * layout.n_head_kv * layout.head_dim;
        if (layout.type == KvType::Q8_0) cpu_q8::check_head_dim(layout.head_dim);
        try {
            if (layout.type == KvType::Q8_0) {  // INT8: attention_q8.cpp
                k8.resize(static_cast<size_t>(layout.n_ctx) * layout.row_bytes() * layout.n_layer);
                v8.resize(k8.size());
            } else if (layout.type == KvType::F16) {
                k16.resize(per_layer * layout.n_layer);
                v16.resize(per_layer * layout.n_layer);
            } else {
                k32.resize(per_layer * layout.n_layer);
                v32.resize(per_layer * layout.n_layer);
            }
        } catch (const std::bad_alloc&) {
            throw Error(ErrorCode::OutOfMemory, fmt::format("cannot allocate a KV cache of {} bytes", layout.bytes()));
        }
    }
    /// Elements of one cell (every KV head).
    size_t row() const { return static_cast<size_t>(layout_.n_head_kv) * layout_.head_dim; }
    /// First element of KV head `head` of `layer` (F16 / F32): its keys and its values, each
    /// [n_ctx, head_dim], start here in k16/k32 and v16/v32.
    size_t head_base(int32_t layer, int32_t head) const {
        return (static_cast<size_t>(layer) * layout_.n_head_kv + static_cast<size_t>(head)) * layout_.n_ctx * layout_.head_dim;
    }
    // On 2 MiB pages where the system has them (core/huge_pages.hpp); zeroed, and so
    // resident, from the start, as llama.cpp clears its KV buffer.
    template <class T>
    using Cells = std::vector<T, HugePageAllocator<T>>;
    Cells<uint16_t> k16, v16;
    Cells<float> k32, v32;
    Cells<uint8_t> k8, v8;  // Q8_0: per layer n_ctx * row_bytes() (head-major, attention_q8.hpp)
    uint8_t* q8_k(int32_t layer) { return k8.data() + static_cast<size_t>(layer) * layout_.n_ctx * layout_.row_bytes(); }
    uint8_t* q8_v(int32_t layer) { return v8.data() + static_cast<size_t>(layer) * layout_.n_ctx * layout_.row_bytes(); }

    /// Cells [first, first + n) of `layer` between cell rows (n x row() elements each of K
    /// and V, cell-major: what kv_store gets and the KV file holds) and the cache's layout:
    /// into the cache when kIntoCache, out of it otherwise; KV heads [h0, h1) (all by default).
    template <bool kIntoCache, class T>
    void copy_cells(int32_t layer, int32_t first, int32_t n, T* k_rows, T* v_rows, int32_t h0 = 0, int32_t h1 = -1) {
        if (h1 < 0) h1 = layout_.n_head_kv;
        using E = std::remove_const_t<T>;
        E* K = keys<E>().data();
        E* V = values<E>().data();
        const int32_t hd = layout_.head_dim;
        using Bytes = std::conditional_t<kIntoCache, const uint8_t*, uint8_t*>;
        copy_head_runs<kIntoCache>(reinterpret_cast<uint8_t*>(K + head_base(layer, 0)), layout_.n_ctx, layout_.n_head_kv,
                                   hd * sizeof(E), first, n, reinterpret_cast<Bytes>(k_rows), h0, h1);
        copy_head_runs<kIntoCache>(reinterpret_cast<uint8_t*>(V + head_base(layer, 0)), layout_.n_ctx, layout_.n_head_kv,
                                   hd * sizeof(E), first, n, reinterpret_cast<Bytes>(v_rows), h0, h1);
    }

    // KV persistence: raw cell bytes in the cache's element format, cell-major.
    void read_cells(int32_t layer, int32_t first, int32_t n, void* k_dst, void* v_dst) const override {
        auto* self = const_cast<CpuKvCache*>(this);
        check_cells(layer, first, n);
        if (layout_.type == KvType::Q8_0) {
            const size_t hb = layout_.row_bytes() / static_cast<size_t>(layout_.n_head_kv);
            copy_head_runs<false>(self->q8_k(layer), layout_.n_ctx, layout_.n_head_kv, hb, first, n, static_cast<uint8_t*>(k_dst), 0,
                                  layout_.n_head_kv);
            copy_head_runs<false>(self->q8_v(layer), layout_.n_ctx, layout_.n_head_kv, hb, first, n, static_cast<uint8_t*>(v_dst), 0,
                                  layout_.n_head_kv);
        } else if (layout_.type == KvType::F16) {
            self->copy_cells<false>(layer, first, n, static_cast<uint16_t*>(k_dst), static_cast<uint16_t*>(v_dst));
        } else {
            self->copy_cells<false>(layer, first, n, static_cast<float*>(k_dst), static_cast<float*>(v_dst));
        }
    }
    void write_cells(int32_t layer, int32_t first, int32_t n, const void* k_src, const void* v_src) override {
        check_cells(layer, first, n);
        if (layout_.type == KvType::Q8_0) {
            const size_t hb = layout_.row_bytes() / static_cast<size_t>(layout_.n_head_kv);
            copy_head_runs<true>(q8_k(layer), layout_.n_ctx, layout_.n_head_kv, hb, first, n, static_cast<const uint8_t*>(k_src), 0,
                                 layout_.n_head_kv);
            copy_head_runs<true>(q8_v(layer), layout_.n_ctx, layout_.n_head_kv, hb, first, n, static_cast<const uint8_t*>(v_src), 0,
                                 layout_.n_head_kv);
        } else if (layout_.type == KvType::F16) {
            copy_cells<true>(layer, first, n, static_cast<const uint16_t*>(k_src), static_cast<const uint16_t*>(v_src));
        } else {
            copy_cells<true>(layer, first, n, static_cast<const float*>(k_src), static_cast<const float*>(v_src));
        }
    }

private:
    void check_cells(int32_t layer, int32_t cell, int32_t n) const {
        if (layer < 0 || layer >= layout_.n_layer || cell < 0 || n < 0 || cell > layout_.n_ctx - n)
            throw Error(ErrorCode::InvalidArgument,
                        fmt::format("KV cells [{}, {}) of layer {} are out of range", cell, cell + n, layer));
    }
    template <class T>
    Cells<T>& keys() {
        if constexpr (std::is_same_v<T, uint16_t>) return k16;
        else return k32;
    }
    template <class T>
    Cells<T>& values() {
        if constexpr (std::is_same_v<T, uint16_t>) return v16;
        else return v32;
    }
};

/// An arena: the buffers of one forward pass are kept by reset() and handed out again,
/// in the same order, by the next pass (whose shapes are the same or smaller in decode),
/// so a warm forward allocates nothing.
class CpuWorkspace final : public Workspace {
public:
    Tensor allocate(int64_t rows, int64_t cols) override {
        const auto n = static_cast<size_t>(rows * cols);
        if (used_ == blocks_.size()) blocks_.emplace_back();
        std::vector<float>& b = blocks_[used_++];
        if (b.size() < n) {
            b.clear();
            b.shrink_to_fit();
            b.resize(n);
        }
        return {b.data(), rows, cols};
    }
    void reset() noexcept override { used_ = 0; }
    size_t bytes() const noexcept override {
        size_t total = 0;
        for (const auto& b : blocks_) total += b.capacity() * sizeof(float);
        return total;
    }

private:
    std::vector<std::vector<float>> blocks_;
    size_t used_ = 0;
};

class CpuBackend final : public Backend {
public:
    explicit CpuBackend(int32_t threads) : pool_(threads) {}

    std::string name() const override { return fmt::format("cpu (reference, {} threads)", pool_.size()); }

    std::unique_ptr<KvCache> create_kv_cache(const KvLayout& layout) override {
        return std::make_unique<CpuKvCache>(layout);
    }
    std::unique_ptr<Workspace> create_workspace() override { return std::make_unique<CpuWorkspace>(); }

    void embed(const Weight& table, std::span<const int32_t> tokens, Tensor& out) override {
        for (size_t i = 0; i < tokens.size(); ++i) {
            const int32_t t = tokens[i];
            if (t < 0 || t >= table.n_out)
                throw Error(ErrorCode::InvalidArgument, fmt::format("token id {} is outside the vocabulary [0, {})", t, table.n_out));
            quant::dequantize_row(table.type, static_cast<const uint8_t*>(table.data) + static_cast<size_t>(t) * table.row_bytes,
                                  out.row(static_cast<int64_t>(i)), table.n_in);
        }
    }

    void matmul(const Weight& w, const Tensor& x, Tensor& y) override { cpu::matmul(pool_, w, x, y); }
    void matmul_shared_input(const Tensor& x, std::span<const MatmulOut> outs) override {
        cpu::matmul_shared_input(pool_, x, outs);
    }

    void add_bias(Tensor& y, const Weight& bias) override {
        std::vector<float>& b = vec_;  // read by the pool's threads: not thread_local
        b.resize(static_cast<size_t>(bias.n_in));
        quant::dequantize_row(bias.type, bias.data, b.data(), bias.n_in);
        for_rows(y.rows, y.cols, [&](int64_t r) {
            float* yv = y.row(r);
            for (int64_t i = 0; i < y.cols; ++i) yv[i] += b[static_cast<size_t>(i)];
        });
    }

    void rms_norm(const Tensor& x, const Weight& gamma, float eps, Tensor& y) override {
        std::vector<float>& g = vec_;  // read by the pool's threads: not thread_local
        g.resize(static_cast<size_t>(gamma.n_in));
        quant::dequantize_row(gamma.type, gamma.data, g.data(), gamma.n_in);
        const auto sum_squares = genie::cpu::math_fns().sum_squares;
        for_rows(x.rows, x.cols, [&](int64_t r) {
            const float* xv = x.row(r);
            const double sum = sum_squares(x.cols, xv);  // ggml sums the squares in ggml_float (double)
            const float mean = static_cast<float>(sum / static_cast<double>(x.cols));
            const float scale = 1.0f / std::sqrt(mean + eps);
            float* yv = y.row(r);
            for (int64_t i = 0; i < x.cols; ++i) yv[i] = xv[i] * scale * g[static_cast<size_t>(i)];
        });
    }

    void rope(Tensor& x, int32_t n_heads, int32_t head_dim, int32_t first_pos, const RopeParams& p) override {
        const int32_t half = p.n_rot / 2;
        const RopeTable& table = rope_table(x.rows, x.cols, first_pos, p);
        const genie::cpu::MathFns& math = genie::cpu::math_fns();
        for_rows(x.rows, x.cols, [&](int64_t r) {
            const float* cs = table.cos.data() + static_cast<size_t>(r) * static_cast<size_t>(half);
            const float* sn = table.sin.data() + static_cast<size_t>(r) * static_cast<size_t>(half);
            for (int32_t h = 0; h < n_heads; ++h) {
                float* v = x.row(r) + static_cast<int64_t>(h) * head_dim;
                // Neox pairs (i, i + n_rot/2); normal pairs (2i, 2i+1).
                if (p.mode == RopeMode::Neox) math.rotate_pairs(half, v, v + half, 1, cs, sn);
                else math.rotate_pairs(half, v, v + 1, 2, cs, sn);
            }
        });
    }

    /// A table of cos / sin [rows, n_rot / 2] for positions first_pos.. under `params`.
    struct RopeTable {
        std::vector<float> cos, sin;
        RopeParams params;
        int32_t first_pos = 0;
        int64_t rows = -1;  ///< -1: empty
    };

    /// The table for these positions and parameters, filled unless one of the two kept
    /// tables already holds it: q and k of every layer rotate by the same angles, so a
    /// decode step computes its 64 sin/cos pairs once instead of 2 x n_layer times (0.8 % of
    /// a 0.6B decode token's time); two tables, because gemma3's sliding-window and global
    /// layers alternate between two RoPE bases. Values as ggml_rope_cache_init builds them:
    /// theta multiplied step by step, through rope_yarn.
    const RopeTable& rope_table(int64_t rows, int64_t cols, int32_t first_pos, const RopeParams& p) {
        for (int i = 0; i < 2; ++i) {
            const RopeTable& t = rope_tables_[i];
            if (t.rows == rows && t.first_pos == first_pos && t.params == p) {
                rope_next_ = 1 - i;  // the other one is the less recently used
                return t;
            }
        }
        RopeTable& t = rope_tables_[rope_next_];
        rope_next_ ^= 1;
        const int32_t half = p.n_rot / 2;
        const size_t size = static_cast<size_t>(rows) * static_cast<size_t>(half);
        t.rows = -1;  // invalid until filled (an exception below leaves it so)
        if (t.cos.size() < size) {
            t.cos.resize(size);
            t.sin.resize(size);
        }
        const float theta_scale = std::pow(p.freq_base, -2.0f / static_cast<float>(p.n_rot));
        float corr_dims[2];
        yarn_corr_dims(p, corr_dims);
        for_rows(rows, cols, [&](int64_t r) {
            float theta = static_cast<float>(first_pos + r);
            float* cs = t.cos.data() + static_cast<size_t>(r) * static_cast<size_t>(half);
            float* sn = t.sin.data() + static_cast<size_t>(r) * static_cast<size_t>(half);
            for (int32_t i = 0; i < half; ++i) {
                const float ff = p.freq_factors ? p.freq_factors[i] : 1.0f;
                rope_yarn(theta / ff, p, corr_dims, 2 * i, &cs[i], &sn[i]);
                theta *= theta_scale;
            }
        });
        t.params = p;
        t.first_pos = first_pos;
        t.rows = rows;
        return t;
    }

    void kv_store(KvCache& cache, int32_t layer, const Tensor& k, const Tensor& v, int32_t first_pos) override {
        auto& c = static_cast<CpuKvCache&>(cache);
        if (c.layout().type == KvType::Q8_0) {
            cpu_q8::store(pool_, k, v, c.q8_k(layer), c.q8_v(layer), c.layout().n_ctx, c.layout().head_dim, first_pos);
            return;
        }
        const size_t row = c.row();
        const auto n = static_cast<int32_t>(k.rows);
        const int32_t hd = c.layout().head_dim;
        // A prompt's cells are split by KV head over the pool; a few cells (decode: 2 runs of
        // head_dim per head) are stored by the calling thread, without a dispatch.
        auto over_heads = [&](const std::function<void(int64_t, int64_t)>& store) {
            if (n < 8) store(0, c.layout().n_head_kv);
            else pool_.parallel_for(c.layout().n_head_kv, store);
        };
        if (c.layout().type != KvType::F16) {  // F32 rows as they are
            over_heads([&](int64_t h0, int64_t h1) {
                c.copy_cells<true>(layer, first_pos, n, static_cast<const float*>(k.data), static_cast<const float*>(v.data),
                                   static_cast<int32_t>(h0), static_cast<int32_t>(h1));
            });
            return;
        }
        // F32 -> F16 round to nearest even: the kernel set's converter (F16C) or fp32_to_fp16.
        const genie::cpu::QuantizeFn to_f16 = genie::cpu::kernel_set().quantize[static_cast<int>(DType::F16)];
        const size_t count = static_cast<size_t>(n) * row;
        if (kv_rows16_.size() < 2 * count) kv_rows16_.resize(2 * count);  // kept: no allocation per token
        uint16_t* k16 = kv_rows16_.data();
        uint16_t* v16 = k16 + count;
        over_heads([&](int64_t h0, int64_t h1) {
            // This range's heads of each cell row, converted in place in the cell rows.
            const size_t col = static_cast<size_t>(h0) * hd, len = static_cast<size_t>(h1 - h0) * hd;
            for (int32_t r = 0; r < n; ++r) {
                const size_t at = static_cast<size_t>(r) * row + col;
                if (to_f16) {
                    to_f16(k.data + at, k16 + at, static_cast<int64_t>(len));
                    to_f16(v.data + at, v16 + at, static_cast<int64_t>(len));
                } else {
                    for (size_t i = at; i < at + len; ++i) {
                        k16[i] = fp32_to_fp16(k.data[i]);
                        v16[i] = fp32_to_fp16(v.data[i]);
                    }
                }
            }
            c.copy_cells<true>(layer, first_pos, n, static_cast<const uint16_t*>(k16), static_cast<const uint16_t*>(v16),
                               static_cast<int32_t>(h0), static_cast<int32_t>(h1));
        });
    }

    void attention(const Tensor& q, const KvCache& cache, int32_t layer, int32_t first_pos, int32_t n_head, float scale,
                   int32_t window, Tensor& out) override {
        const auto& c = static_cast<const CpuKvCache&>(cache);
        if (c.layout().type == KvType::Q8_0) {
            auto& m = const_cast<CpuKvCache&>(c);
            cpu_q8::attention(pool_, q, m.q8_k(layer), m.q8_v(layer), c.layout().n_ctx, c.layout().n_head_kv,
                              c.layout().head_dim, first_pos, n_head, scale, window, out);
            return;
        }
        const genie::cpu::KernelSet& ks = genie::cpu::kernel_set();
        // The scalar set (GENIE_CPU_ISA=scalar) has no scores_f16: the reference runs.
        if (c.layout().type != KvType::F16 || !ks.scores_f16 || c.layout().head_dim > 512) {
            attention_reference(q, c, layer, first_pos, n_head, scale, window, out);
            return;
        }
        // As ggml with an F16 cache and flash attention off: q converted to F16, K·q
        // accumulated in float, softmax with exp in float (ggml's vectorised expf) and the
        // sum in double, probabilities converted to F16, then V·p as ggml's mul_mat of the
        // transposed V and the F16 probabilities (products and sums in float; the cache
        // keeps V cell-major, so the kernel set's accumulate_f16 sums cell rows in order).
        //
        // Work item: a block of consecutive query rows x one KV head, covering the query
        // heads that share it (GQA), so that each K and V row loaded serves every query of
        // the block: S = Q K^T for the block by scores_f16 (over the causal range of the
        // block's last row; cells past a row's own position get probability 0), softmax
        // per query, then O = P V by accumulate_f16 over the head's V rows. Both stream
        // the head's K and V sequentially (CpuKvCache). In a prompt scores_f16 asks for the
        // V rows into L2 as it reads the keys, so each core has two streams in flight; in
        // decode the x86 kernels prefetch K and V ahead of their own reads instead (faster
        // from DRAM: x86_kernels.inc, V·p; KernelSet::attn_prefetches). A block is sized so that
        // its scores stay in L2 for long contexts. Items go head-major (every block of one KV
        // head, then the next head), so a thread's consecutive items find the head's K and V
        // in L2, and within a head longest first (the causal range grows with the row) so
        // the threads end together. A sliding-window layer's block reads only the cells
        // from its first row's window start (cpu_q8::visible_cells) on.
        const int32_t hd = c.layout().head_dim, n_head_kv = c.layout().n_head_kv;
        const int32_t group = n_head / n_head_kv;
        const genie::cpu::AccumulateF16Fn accumulate = ks.accumulate_f16;
        const genie::cpu::ScoresF16Fn scores_f16 = ks.scores_f16;
        const genie::cpu::QuantizeFn to_f16 = ks.quantize[static_cast<int>(DType::F16)];
        const genie::cpu::MathFns& math = genie::cpu::math_fns();
        const int64_t n = q.rows;
        const int64_t n_kv_all = first_pos + n;
        const genie::cpu::AttnOrder order = n > 1 ? genie::cpu::AttnOrder::Batch : genie::cpu::AttnOrder::Decode;
        // Rows per block: about 32 queries, fewer when the scores of a block ([queries,
        // causal range] floats) would pass 512 KiB.
        const int64_t rows_per_block = cpu_q8::attention_block_rows(group, n_kv_all);
        const int64_t blocks = (n + rows_per_block - 1) / rows_per_block;
        pool_.parallel_for(blocks * n_head_kv, [&](int64_t begin, int64_t end) {
            thread_local std::vector<uint16_t> q16, p16;
            thread_local std::vector<float> scores, o;
            for (int64_t item = begin; item < end; ++item) {
                const int64_t block = blocks - 1 - item % blocks;  // longest first
                const int32_t hk = static_cast<int32_t>(item / blocks), h0 = hk * group;
                const int64_t r0 = block * rows_per_block, r1 = std::min(n, r0 + rows_per_block);
                const int64_t nq = (r1 - r0) * group;
                // cells [lo, lo + n_kv_max) hold the block's causal range (from its first row's
                // window start to its last row's position)
                const int64_t lo = cpu_q8::visible_cells(first_pos + static_cast<int32_t>(r0), window).first;
                const int64_t n_kv_max = first_pos + r1 - lo;
                const uint16_t* K = c.k16.data() + c.head_base(layer, hk) + lo * hd;  // [n_kv_max, hd]
                const uint16_t* V = c.v16.data() + c.head_base(layer, hk) + lo * hd;  // [n_kv_max, hd]
                q16.resize(static_cast<size_t>(nq) * hd);
                for (int64_t r = r0; r < r1; ++r)
                    to_f16(q.row(r) + static_cast<int64_t>(h0) * hd, q16.data() + static_cast<size_t>((r - r0) * group) * hd,
                           static_cast<int64_t>(group) * hd);
                scores.resize(static_cast<size_t>(nq * n_kv_max));
                p16.resize(static_cast<size_t>(nq * n_kv_max));
                // scores[i][t] = K[t] · q[i] (V's rows of the range come into L2 alongside, but
                // not in an x86 decode step)
                scores_f16(n_kv_max, K, static_cast<size_t>(hd), hd, q16.data(), static_cast<size_t>(hd), nq, scores.data(),
                           static_cast<size_t>(n_kv_max), n > 1 || !ks.attn_prefetches ? V : nullptr, order);
                for (int64_t i = 0; i < nq; ++i) {
                    // visible: cells [a, b) of the block's range (causal, and the window)
                    const auto [cell0, cell_end] = cpu_q8::visible_cells(first_pos + static_cast<int32_t>(r0 + i / group), window);
                    const int64_t a = cell0 - lo, b = cell_end - lo, n_kv = b - a;
                    float* sg = scores.data() + static_cast<size_t>(i * n_kv_max) + a;
                    // ggml: scores scaled, max, exp(s - max) summed in double, times 1 / sum,
                    // to F16; here in three passes over the row (scaled_max reads it,
                    // softmax_exp scales on the fly, scale_to_f16 normalises and converts).
                    const float max = genie::cpu::scaled_max(sg, n_kv, scale);
                    const double sum = math.softmax_exp(n_kv, sg, sg, scale, max);
                    uint16_t* pg = p16.data() + static_cast<size_t>(i * n_kv_max);
                    std::fill(pg, pg + a, uint16_t{0});
                    math.scale_to_f16(n_kv, sg, static_cast<float>(1.0 / sum), pg + a);
                    std::fill(pg + b, pg + n_kv_max, uint16_t{0});
                }
                // o[i][d] = sum over cells t of p[i][t] V[t][d]
                o.resize(static_cast<size_t>(nq * hd));
                accumulate(n_kv_max, lo, V, static_cast<size_t>(hd), hd, p16.data(), static_cast<size_t>(n_kv_max), nq, o.data(),
                           static_cast<size_t>(hd), order);
                for (int64_t i = 0; i < nq; ++i)
                    std::memcpy(out.row(r0 + i / group) + static_cast<int64_t>(h0 + i % group) * hd,
                                o.data() + static_cast<size_t>(i * hd), static_cast<size_t>(hd) * sizeof(float));
            }
        });
    }

    /// The reference attention (double accumulation): the oracle, run with GENIE_CPU_ISA=scalar.
    void attention_reference(const Tensor& q, const CpuKvCache& c, int32_t layer, int32_t first_pos, int32_t n_head,
                             float scale, int32_t window, Tensor& out) {
        const int32_t hd = c.layout().head_dim, n_head_kv = c.layout().n_head_kv;
        const int32_t group = n_head / n_head_kv;
        const bool f16 = c.layout().type == KvType::F16;
        pool_.parallel_for(q.rows * n_head, [&](int64_t begin, int64_t end) {
            std::vector<float> qv(static_cast<size_t>(hd)), scores, kv_row(static_cast<size_t>(hd));
            for (int64_t item = begin; item < end; ++item) {
                const int64_t r = item / n_head;
                const int32_t h = static_cast<int32_t>(item % n_head), hk = h / group;
                // causal, and a sliding-window layer's window: cells [t0, t0 + n_kv)
                const auto [t0, t_end] = cpu_q8::visible_cells(first_pos + static_cast<int32_t>(r), window);
                const int32_t n_kv = t_end - t0;
                const float* qh = q.row(r) + static_cast<int64_t>(h) * hd;
                // With an F16 cache ggml converts q to F16 before K·q.
                for (int32_t i = 0; i < hd; ++i) qv[static_cast<size_t>(i)] = f16 ? fp16_to_fp32(fp32_to_fp16(qh[i])) : qh[i];
                scores.assign(static_cast<size_t>(n_kv), 0.0f);
                for (int32_t t = 0; t < n_kv; ++t) {
                    const size_t at = c.head_base(layer, hk) + static_cast<size_t>(t0 + t) * hd;
                    double dot = 0.0;
                    for (int32_t i = 0; i < hd; ++i) {
                        const float kf = f16 ? fp16_to_fp32(c.k16[at + static_cast<size_t>(i)]) : c.k32[at + static_cast<size_t>(i)];
                        dot += static_cast<double>(kf) * qv[static_cast<size_t>(i)];
                    }
                    scores[static_cast<size_t>(t)] = static_cast<float>(dot) * scale;
                }
                // softmax: exp in float, sum in double, then scale by 1/sum (ggml_soft_max_ext).
                const float max = *std::max_element(scores.begin(), scores.end());
                double sum = 0.0;
                for (float& s : scores) {
                    s = std::exp(s - max);
                    sum += s;
                }
                const float inv = static_cast<float>(1.0 / sum);
                for (float& s : scores) {
                    s *= inv;
                    if (f16) s = fp16_to_fp32(fp32_to_fp16(s));  // V·p with an F16 V converts p to F16
                }
                float* o = out.row(r) + static_cast<int64_t>(h) * hd;
                for (int32_t i = 0; i < hd; ++i) {
                    double acc = 0.0;
                    for (int32_t t = 0; t < n_kv; ++t) {
                        const size_t at = c.head_base(layer, hk) + static_cast<size_t>(t0 + t) * hd + static_cast<size_t>(i);
                        const float vf = f16 ? fp16_to_fp32(c.v16[at]) : c.v32[at];
                        acc += static_cast<double>(vf) * scores[static_cast<size_t>(t)];
                    }
                    o[i] = static_cast<float>(acc);
                }
            }
        });
    }

    void swiglu(const Tensor& gate, const Tensor& up, Tensor& out) override {
        // silu(g) * u, exp as ggml's vectorised expf (the reference std::exp with GENIE_CPU_ISA=scalar)
        const auto swiglu_fn = genie::cpu::math_fns().swiglu;
        for_rows(gate.rows, gate.cols, [&](int64_t r) {
            const float* gv = gate.row(r);
            const float* uv = up.row(r);
            float* ov = out.row(r);
            swiglu_fn(gate.cols, gv, uv, ov);
        });
    }

    void geglu(const Tensor& gate, const Tensor& up, Tensor& out) override {
        const auto geglu_fn = genie::cpu::math_fns().geglu;
        for_rows(gate.rows, gate.cols, [&](int64_t r) { geglu_fn(gate.cols, gate.row(r), up.row(r), out.row(r)); });
    }

    void scale(Tensor& x, float s) override {
        for_rows(x.rows, x.cols, [&](int64_t r) {
            float* xv = x.row(r);
            for (int64_t i = 0; i < x.cols; ++i) xv[i] *= s;
        });
    }

    void add(Tensor& x, const Tensor& y) override {
        for_rows(x.rows, x.cols, [&](int64_t r) {
            float* xv = x.row(r);
            const float* yv = y.row(r);
            for (int64_t i = 0; i < x.cols; ++i) xv[i] += yv[i];
        });
    }

    void read_row(const Tensor& t, int64_t row, float* host_dst) override {
        std::memcpy(host_dst, t.row(row), static_cast<size_t>(t.cols) * sizeof(float));
    }
    bool host_tensors() const noexcept override { return true; }

private:
    /// fn(r) for each row r < rows: threaded when the op is large enough to pay for a
    /// dispatch (prefill), inline otherwise (decode's single rows).
    template <class Fn>
    void for_rows(int64_t rows, int64_t cols, Fn&& fn) {
        if (rows < 2 || rows * cols < (1 << 15)) {
            for (int64_t r = 0; r < rows; ++r) fn(r);
            return;
        }
        pool_.parallel_for(rows, [&](int64_t b, int64_t e) {
            for (int64_t r = b; r < e; ++r) fn(r);
        });
    }

    static void yarn_corr_dims(const RopeParams& p, float dims[2]) {
        auto corr_dim = [&](float n_rot) {
            return static_cast<float>(p.n_rot) * std::log(static_cast<float>(p.n_ctx_orig) / (n_rot * 2.0f * static_cast<float>(M_PI))) /
                   (2.0f * std::log(p.freq_base));
        };
        const float start = std::floor(corr_dim(p.beta_fast));
        const float end = std::ceil(corr_dim(p.beta_slow));
        dims[0] = std::max(0.0f, start);
        dims[1] = std::min(static_cast<float>(p.n_rot - 1), end);
    }

    static void rope_yarn(float theta_extrap, const RopeParams& p, const float corr_dims[2], int32_t i0, float* cos_theta,
                          float* sin_theta) {
        const float theta_interp = p.freq_scale * theta_extrap;
        float theta = theta_interp;
        float mscale = p.attn_factor;
        if (p.ext_factor != 0.0f) {
            const float y = (static_cast<float>(i0 / 2) - corr_dims[0]) / std::max(0.001f, corr_dims[1] - corr_dims[0]);
            const float ramp_mix = (1.0f - std::min(1.0f, std::max(0.0f, y))) * p.ext_factor;
            theta = theta_interp * (1.0f - ramp_mix) + theta_extrap * ramp_mix;
            mscale *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
        }
        *cos_theta = std::cos(theta) * mscale;
        *sin_theta = std::sin(theta) * mscale;
    }

    ThreadPool pool_;
    std::vector<float> vec_;  // a dequantized bias or norm weight (one op at a time)
    std::vector<uint16_t> kv_rows16_;  // kv_store: the new cells' K and V rows in F16
    RopeTable rope_tables_[2];  // rope_table's two most recent tables
    int rope_next_ = 0;         // the one rope_table refills next
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int32_t threads) {
    if (threads <= 0) threads = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
    return std::make_unique<CpuBackend>(threads);
}

}  // namespace genie::backend
