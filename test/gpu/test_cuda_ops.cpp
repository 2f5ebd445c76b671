// Op-by-op harness: every CUDA backend op against the CPU reference backend (and, for
// matmul, against the exact product of the dequantized weights) on random inputs,
// several shapes, every weight type the model loader accepts. Tolerances (docs/cuda.md):
//  - embed, kv_store, add: bit-exact (the same GENIE_HD dequantization / F16 rounding);
//  - matmul: |y - exact| <= activation-quantization bound + rel(type) * sum|w x|, where the
//    bound is sum over 32-blocks of |w| * amax(x)/254 (Q8_1, the int8 decode path), the CPU
//    gets its own bound (Q8_K blocks of 256 for k-quants), rel = 2.5e-3 (F16 scales, F16
//    prefill tiles), 9e-3 for BF16 (activations rounded to BF16), 2e-4 for F32;
//  - rms_norm, swiglu, add_bias: 1e-5 relative; rope: (1e-5 + 1e-6 * position) * max|x|
//    (powf vs the CPU's stepwise product for theta); attention: 1e-3 * max|v| (F16 cache:
//    the CPU rounds probabilities to F16) or 1e-4 * max|v| (F32 cache).
#include "test/gpu/gpu_support.hpp"

#include "backend/cuda_entry.hpp"
#include "cuda/check.hpp"
#include "quant/quant.hpp"
#include "quant/vec_dot.hpp"

#include <genie/error.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace genie;
using namespace genie::gpu_test;
using backend::Tensor;
using backend::Weight;

namespace {

struct Backends {
    std::unique_ptr<backend::Backend> cpu;
    std::unique_ptr<backend::Backend> cuda;
    std::unique_ptr<backend::Workspace> ws;  // device tensors
};

Backends make_backends(const WeightArena& arena) {
    Backends b;
    b.cpu = backend::make_cpu_backend(2);
    b.cuda = backend::make_cuda_backend(arena.to_device());
    b.ws = b.cuda->create_workspace();
    return b;
}

/// A weight [n_out rows of n_in] of `type` quantized from `values`; `deq` gets its
/// dequantized values.
Weight make_weight(WeightArena& arena, DType type, int64_t n_in, int64_t n_out, const std::vector<float>& values,
                   std::vector<float>* deq = nullptr) {
    const size_t row_bytes = quant::row_bytes(type, n_in);
    std::vector<uint8_t> bytes(row_bytes * static_cast<size_t>(n_out));
    for (int64_t r = 0; r < n_out; ++r)
        quant::quantize_row(type, values.data() + r * n_in, bytes.data() + static_cast<size_t>(r) * row_bytes, n_in);
    Weight w;
    w.name = std::string("test.") + std::string(dtype_name(type));
    w.type = type;
    w.n_in = n_in;
    w.n_out = n_out;
    w.row_bytes = row_bytes;
    w.data = arena.add(bytes.data(), bytes.size());
    if (deq) {
        deq->resize(static_cast<size_t>(n_in * n_out));
        for (int64_t r = 0; r < n_out; ++r)
            quant::dequantize_row(type, static_cast<const uint8_t*>(w.data) + static_cast<size_t>(r) * row_bytes,
                                  deq->data() + r * n_in, n_in);
    }
    return w;
}

bool is_plain(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

double rel_for(DType t) {
    if (t == DType::F32) return 2e-4;
    if (t == DType::BF16) return 9e-3;
    return 2.5e-3;
}

/// sum over blocks of `block` elements of sum|w| * amax(x)/254: the worst-case error of
/// rounding x to int8 with a scale of amax/127 per block.
double q8_bound(const float* w, const float* x, int64_t n, int64_t block) {
    double b = 0;
    for (int64_t i0 = 0; i0 < n; i0 += block) {
        double amax = 0, wsum = 0;
        for (int64_t i = i0; i < i0 + block && i < n; ++i) {
            amax = std::max(amax, std::fabs(static_cast<double>(x[i])));
            wsum += std::fabs(static_cast<double>(w[i]));
        }
        b += wsum * amax / 254.0;
    }
    return b;
}

}  // namespace

namespace {

struct Shape {
    int64_t n_in, n_out, rows;
};

void check_matmul(std::initializer_list<DType> types, std::initializer_list<Shape> shapes) {
    std::mt19937 rng(7);
    for (DType type : types) {
        for (const Shape& s : shapes) {
            WeightArena arena(quant::row_bytes(DType::F32, s.n_in) * static_cast<size_t>(s.n_out) + 4096);
            std::vector<float> deq;
            const Weight w = make_weight(arena, type, s.n_in, s.n_out, random_floats(static_cast<size_t>(s.n_in * s.n_out), rng, 0.05f), &deq);
            Backends b = make_backends(arena);
            Pair x = make_pair(*b.ws, s.rows, s.n_in, random_floats(static_cast<size_t>(s.rows * s.n_in), rng));
            Pair y = make_pair(*b.ws, s.rows, s.n_out, {});
            b.cpu->matmul(w, x.cpu, y.cpu);
            b.cuda->matmul(w, x.dev, y.dev);
            const std::vector<float> gpu = download(y.dev);
            const bool k_quant = dtype_info(type).block_size == 256;
            double worst = 0, worst_cpu = 0, max_diff_cpu = 0;
            for (int64_t r = 0; r < s.rows; ++r) {
                const float* xr = x.host.data() + r * s.n_in;
                for (int64_t j = 0; j < s.n_out; ++j) {
                    const float* wr = deq.data() + j * s.n_in;
                    double exact = 0, mag = 0;
                    for (int64_t i = 0; i < s.n_in; ++i) {
                        exact += static_cast<double>(wr[i]) * xr[i];
                        mag += std::fabs(static_cast<double>(wr[i]) * xr[i]);
                    }
                    const double tol_gpu = (is_plain(type) ? 0.0 : q8_bound(wr, xr, s.n_in, 32)) + rel_for(type) * mag + 1e-5;
                    const double tol_cpu =
                        (is_plain(type) ? 0.0 : q8_bound(wr, xr, s.n_in, k_quant ? 256 : 32)) + rel_for(type) * mag + 1e-5;
                    const double g = gpu[static_cast<size_t>(r * s.n_out + j)];
                    const double c = y.host[static_cast<size_t>(r * s.n_out + j)];
                    worst = std::max(worst, std::fabs(g - exact) / tol_gpu);
                    worst_cpu = std::max(worst_cpu, std::fabs(g - c) / (tol_gpu + tol_cpu));
                    max_diff_cpu = std::max(max_diff_cpu, std::fabs(g - c));
                }
            }
            INFO(dtype_name(type) << " n_in " << s.n_in << " n_out " << s.n_out << " rows " << s.rows);
            std::printf("matmul %-5s %5lld x %4lld, %2lld rows: |gpu-exact|/tol %.3f, |gpu-cpu| max %.3g (/tol %.3f)\n",
                        std::string(dtype_name(type)).c_str(), static_cast<long long>(s.n_in), static_cast<long long>(s.n_out),
                        static_cast<long long>(s.rows), worst, max_diff_cpu, worst_cpu);
            CHECK(worst <= 1.0);
            CHECK(worst_cpu <= 1.0);
        }
    }
}

}  // namespace

TEST_CASE("CUDA matmul matches the exact product and the CPU backend for every weight type", "[gpu][ops][matmul]") {
    // rows <= 8: the decode mat-vec kernels; above: cuBLAS on F16 tiles (or SGEMM).
    check_matmul({DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K, DType::Q4_K,
                  DType::Q5_K, DType::Q6_K, DType::F16, DType::BF16, DType::F32},
                 {{256, 64, 1}, {512, 96, 3}, {1024, 130, 8}, {768, 200, 17}, {2560, 128, 64}});
}

TEST_CASE("CUDA matmul without cuBLAS (prefill in groups of 8 rows) matches too", "[gpu][ops][matmul]") {
    setenv("GENIE_CUDA_NO_CUBLAS", "1", 1);
    check_matmul({DType::Q4_K, DType::Q6_K, DType::Q8_0, DType::F16}, {{768, 200, 17}, {512, 64, 9}});
    unsetenv("GENIE_CUDA_NO_CUBLAS");
}

TEST_CASE("CUDA embed equals the CPU bit for bit", "[gpu][ops]") {
    std::mt19937 rng(11);
    for (DType type : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q6_K, DType::Q5_K}) {
        const int64_t n_in = 512, n_vocab = 300;
        WeightArena arena(static_cast<size_t>(n_in * n_vocab) * 4 + 4096);
        const Weight table = make_weight(arena, type, n_in, n_vocab, random_floats(static_cast<size_t>(n_in * n_vocab), rng));
        Backends b = make_backends(arena);
        const std::vector<int32_t> tokens = {0, 299, 17, 17, 150};
        Pair out = make_pair(*b.ws, 5, n_in, {});
        b.cpu->embed(table, tokens, out.cpu);
        b.cuda->embed(table, tokens, out.dev);
        INFO(dtype_name(type));
        CHECK(download(out.dev) == out.host);
        const std::vector<int32_t> bad = {300};
        CHECK_THROWS_AS(b.cuda->embed(table, bad, out.dev), Error);
    }
}

TEST_CASE("CUDA rms_norm, add_bias, swiglu, geglu, scale, add match the CPU", "[gpu][ops]") {
    std::mt19937 rng(13);
    struct Shape {
        int64_t rows, cols;
    };
    for (const Shape& s : {Shape{1, 64}, Shape{5, 1024}, Shape{7, 2560}, Shape{48, 128}, Shape{512, 1024}}) {
        INFO("rows " << s.rows << " cols " << s.cols);
        WeightArena arena(static_cast<size_t>(s.cols) * 8 + 4096);
        const Weight gamma = make_weight(arena, DType::F32, s.cols, 1, random_floats(static_cast<size_t>(s.cols), rng));
        const std::vector<float> bias_values = random_floats(static_cast<size_t>(s.cols), rng);
        const Weight bias = make_weight(arena, DType::F32, s.cols, 1, bias_values);
        Backends b = make_backends(arena);
        const size_t n = static_cast<size_t>(s.rows * s.cols);
        auto close = [](const std::vector<float>& gpu, const std::vector<float>& cpu, double rel) {
            double worst = 0;
            for (size_t i = 0; i < gpu.size(); ++i)
                worst = std::max(worst, std::fabs(static_cast<double>(gpu[i]) - cpu[i]) / (rel * (std::fabs(cpu[i]) + 1e-3)));
            return worst;
        };
        Pair x = make_pair(*b.ws, s.rows, s.cols, random_floats(n, rng, 3.0f));
        Pair y = make_pair(*b.ws, s.rows, s.cols, {});
        b.cpu->rms_norm(x.cpu, gamma, 1e-6f, y.cpu);
        b.cuda->rms_norm(x.dev, gamma, 1e-6f, y.dev);
        CHECK(close(download(y.dev), y.host, 1e-5) <= 1.0);
        // in place (qk-norm)
        b.cpu->rms_norm(x.cpu, gamma, 1e-6f, x.cpu);
        b.cuda->rms_norm(x.dev, gamma, 1e-6f, x.dev);
        CHECK(close(download(x.dev), x.host, 1e-5) <= 1.0);

        // add_bias and add are one float addition per element: exact against the host's
        // addition of the same operands (the device's own input: comparing with the CPU's
        // chain instead would measure rms_norm's rounding, magnified where y + bias cancels).
        {
            std::vector<float> expected = download(y.dev);
            for (size_t i = 0; i < expected.size(); ++i) expected[i] += bias_values[i % static_cast<size_t>(s.cols)];
            b.cuda->add_bias(y.dev, bias);
            CHECK(download(y.dev) == expected);
        }

        Pair g = make_pair(*b.ws, s.rows, s.cols, random_floats(n, rng, 4.0f));
        Pair u = make_pair(*b.ws, s.rows, s.cols, random_floats(n, rng));
        b.cpu->swiglu(g.cpu, u.cpu, g.cpu);  // in place, as the forward pass does
        b.cuda->swiglu(g.dev, u.dev, g.dev);
        CHECK(close(download(g.dev), g.host, 1e-5) <= 1.0);

        // geglu: the same F16-rounded GELU (core/gelu.hpp) on both; the device's tanhf may
        // differ from the host's by an ulp, which moves the F16 rounding at a tie only.
        {
            Pair gg = make_pair(*b.ws, s.rows, s.cols, random_floats(n, rng, 12.0f));
            b.cpu->geglu(gg.cpu, u.cpu, gg.cpu);
            b.cuda->geglu(gg.dev, u.dev, gg.dev);
            CHECK(close(download(gg.dev), gg.host, 1e-3) <= 1.0);
            // scale: one float multiply per element, exact against the host's
            std::vector<float> scaled = download(gg.dev);
            for (float& f : scaled) f *= 25.29822f;
            b.cuda->scale(gg.dev, 25.29822f);
            CHECK(download(gg.dev) == scaled);
        }

        std::vector<float> expected = download(g.dev);
        for (size_t i = 0; i < expected.size(); ++i) expected[i] += u.host[i];
        b.cuda->add(g.dev, u.dev);
        const std::vector<float> sum = download(g.dev);
        CHECK(sum == expected);

        // read_row copies one row to the host.
        std::vector<float> row(static_cast<size_t>(s.cols));
        b.cuda->read_row(g.dev, s.rows - 1, row.data());
        CHECK(std::equal(row.begin(), row.end(), sum.end() - s.cols));
    }
}

TEST_CASE("CUDA rope matches the CPU: normal, neox, partial rotation, YaRN, frequency factors", "[gpu][ops]") {
    std::mt19937 rng(17);
    struct Case {
        backend::RopeMode mode;
        int32_t head_dim, n_rot, n_heads, rows, first_pos;
        bool yarn, factors;
    };
    const Case cases[] = {
        {backend::RopeMode::Normal, 64, 64, 8, 3, 0, false, false},   {backend::RopeMode::Neox, 128, 128, 16, 1, 3000, false, false},
        {backend::RopeMode::Neox, 128, 64, 4, 9, 17, false, false},   {backend::RopeMode::Normal, 128, 128, 8, 5, 1000, true, false},
        {backend::RopeMode::Normal, 128, 128, 8, 2, 200, false, true}, {backend::RopeMode::Neox, 256, 256, 2, 40, 0, true, false},
    };
    for (const Case& c : cases) {
        INFO("head_dim " << c.head_dim << " n_rot " << c.n_rot << " first_pos " << c.first_pos << " yarn " << c.yarn);
        WeightArena arena(4096);
        Backends b = make_backends(arena);
        backend::RopeParams p;
        p.mode = c.mode;
        p.n_rot = c.n_rot;
        p.freq_base = 1000000.0f;
        p.n_ctx_orig = 4096;
        std::vector<float> factors(static_cast<size_t>(c.n_rot / 2));
        if (c.yarn) {
            p.freq_scale = 0.25f;
            p.ext_factor = 1.0f;
            p.attn_factor = 0.9f;
        }
        if (c.factors) {
            for (size_t i = 0; i < factors.size(); ++i) factors[i] = 1.0f + static_cast<float>(i % 7);
            p.freq_factors = factors.data();
        }
        const int64_t cols = static_cast<int64_t>(c.n_heads) * c.head_dim;
        Pair x = make_pair(*b.ws, c.rows, cols, random_floats(static_cast<size_t>(c.rows * cols), rng));
        b.cpu->rope(x.cpu, c.n_heads, c.head_dim, c.first_pos, p);
        b.cuda->rope(x.dev, c.n_heads, c.head_dim, c.first_pos, p);
        const std::vector<float> gpu = download(x.dev);
        double max_x = 0, worst = 0;
        for (float v : x.host) max_x = std::max(max_x, std::fabs(static_cast<double>(v)));
        const double tol = (1e-5 + 1e-6 * (c.first_pos + c.rows)) * max_x;
        for (size_t i = 0; i < gpu.size(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(gpu[i]) - x.host[i]));
        std::printf("rope head %3d rot %3d pos %4d%s%s: max |gpu-cpu| %.3g (tol %.3g)\n", c.head_dim, c.n_rot, c.first_pos,
                    c.yarn ? " yarn" : "", c.factors ? " factors" : "", worst, tol);
        CHECK(worst <= tol);
    }
}

TEST_CASE("CUDA kv_store + attention match the CPU: decode splits, prefill, GQA, F16 and F32 caches", "[gpu][ops][attention]") {
    std::mt19937 rng(19);
    struct Case {
        int32_t head_dim, n_head, n_head_kv, first_pos, rows;
        KvType kv;
        int32_t window = 0;  // > 0: a sliding-window layer (gemma3)
    };
    const Case cases[] = {
        {128, 16, 8, 0, 1, KvType::F16},    {128, 16, 8, 5, 1, KvType::F16},   {128, 16, 8, 700, 1, KvType::F16},
        {128, 32, 8, 3000, 1, KvType::F16}, {64, 8, 8, 300, 4, KvType::F16},   {128, 16, 8, 0, 37, KvType::F16},
        {128, 16, 2, 100, 37, KvType::F16}, {256, 8, 4, 50, 3, KvType::F16},   {128, 16, 8, 900, 1, KvType::F32},
        {64, 4, 4, 20, 130, KvType::F32},
        // sliding windows: decode far past the window (splits that fall before it stay
        // empty), a prompt crossing it, a window wider than the context so far
        {256, 4, 1, 3000, 1, KvType::F16, 512}, {256, 4, 1, 20, 60, KvType::F16, 16},
        {64, 8, 2, 5, 40, KvType::F32, 7},      {128, 16, 8, 10, 5, KvType::F16, 512},
    };
    for (const Case& c : cases) {
        INFO("head_dim " << c.head_dim << " heads " << c.n_head << "/" << c.n_head_kv << " first_pos " << c.first_pos << " rows "
                         << c.rows << " kv " << (c.kv == KvType::F16 ? "f16" : "f32") << " window " << c.window);
        WeightArena arena(4096);
        Backends b = make_backends(arena);
        const int32_t n_ctx = c.first_pos + c.rows + 3;
        const backend::KvLayout layout{2, n_ctx, c.n_head_kv, c.head_dim, c.kv};
        auto cpu_cache = b.cpu->create_kv_cache(layout);
        auto dev_cache = b.cuda->create_kv_cache(layout);
        const int64_t kv_dim = static_cast<int64_t>(c.n_head_kv) * c.head_dim, q_dim = static_cast<int64_t>(c.n_head) * c.head_dim;
        double max_v = 0;
        auto store = [&](int32_t first, int32_t n) {  // both layers, like the forward pass
            for (int32_t layer = 0; layer < 2; ++layer) {
                Pair k = make_pair(*b.ws, n, kv_dim, random_floats(static_cast<size_t>(n * kv_dim), rng));
                Pair v = make_pair(*b.ws, n, kv_dim, random_floats(static_cast<size_t>(n * kv_dim), rng, 2.0f));
                for (float f : v.host) max_v = std::max(max_v, std::fabs(static_cast<double>(f)));
                b.cpu->kv_store(*cpu_cache, layer, k.cpu, v.cpu, first);
                b.cuda->kv_store(*dev_cache, layer, k.dev, v.dev, first);
            }
        };
        if (c.first_pos > 0) store(0, c.first_pos);
        store(c.first_pos, c.rows);
        Pair q = make_pair(*b.ws, c.rows, q_dim, random_floats(static_cast<size_t>(c.rows * q_dim), rng));
        Pair out = make_pair(*b.ws, c.rows, q_dim, {});
        const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
        b.cpu->attention(q.cpu, *cpu_cache, 1, c.first_pos, c.n_head, scale, c.window, out.cpu);
        b.cuda->attention(q.dev, *dev_cache, 1, c.first_pos, c.n_head, scale, c.window, out.dev);
        const std::vector<float> gpu = download(out.dev);
        double worst = 0;
        for (size_t i = 0; i < gpu.size(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(gpu[i]) - out.host[i]));
        const double tol = (c.kv == KvType::F16 ? 1e-3 : 1e-4) * max_v + 1e-6;
        std::printf("attention hd %3d heads %2d/%d pos %4d rows %3d %s: max |gpu-cpu| %.3g (tol %.3g)\n", c.head_dim, c.n_head,
                    c.n_head_kv, c.first_pos, c.rows, c.kv == KvType::F16 ? "f16" : "f32", worst, tol);
        CHECK(worst <= tol);
    }
}

TEST_CASE("CUDA errors become genie::Error with the call, file and line", "[gpu][errors]") {
    try {
        GENIE_CUDA_CHECK(cudaSetDevice(1 << 20));
        FAIL("cudaSetDevice of a missing device must fail");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::Device);
        const std::string what = e.what();
        CHECK(what.find("cudaSetDevice(1 << 20)") != std::string::npos);
        CHECK(what.find("test_cuda_ops.cpp") != std::string::npos);
    }
    WeightArena arena(4096);
    Backends b = make_backends(arena);
    // A KV type the CUDA backend does not have, a tensor outside the weights it was given.
    CHECK_THROWS_AS(b.cuda->create_kv_cache(backend::KvLayout{1, 16, 2, 64, KvType::Q8_0}), Error);
    std::vector<float> elsewhere(64, 1.0f);
    Weight stray;
    stray.name = "stray";
    stray.type = DType::F32;
    stray.n_in = 64;
    stray.n_out = 1;
    stray.row_bytes = 256;
    stray.data = elsewhere.data();
    std::mt19937 rng(1);
    Pair x = make_pair(*b.ws, 1, 64, random_floats(64, rng));
    CHECK_THROWS_AS(b.cuda->rms_norm(x.dev, stray, 1e-6f, x.dev), Error);
    // Over the device's free memory: OutOfMemory, not a crash.
    try {
        (void)b.cuda->create_kv_cache(backend::KvLayout{1000, 1 << 20, 64, 256, KvType::F32});
        FAIL("a 128 TiB KV cache must not be allocated");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::OutOfMemory);
    }
}
