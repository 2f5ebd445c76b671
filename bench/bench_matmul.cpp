// Micro-benchmarks of the CPU matmul kernels: every kernel set this CPU supports
// (scalar reference, avx2, avx512_vnni, ...) per weight type, for a decode-shaped
// product (one activation row) and a prefill tile (64 rows), single-threaded.
// Counters: weight GB/s (bytes of weights streamed per second) and GFLOP/s (2 k n_out n).
// Plus the activation quantizers, the threaded decode product (matmul_threads: the pool,
// the row split and the barrier included; NOUT, K and WINDOW set its shape), decode
// attention at depth (attention_decode) and a prompt's last 64 rows at depth 2048
// (attention_prompt). Run: build/bin/genie_bench_matmul [--benchmark_filter=Q4_K]
// NOUT=512 (environment) sets the number of weight rows (default 4096 for decode, 512 for
// prefill): with 512 a decode problem fits in L2, which times the arithmetic alone.
// The weights sit on transparent huge pages (huge_buffer.hpp), as the model file's
// mapping has them; HUGE=0 leaves them on 4 KiB pages.
#include "backend/cpu/kernels/kernels.hpp"
#include "quant/quant.hpp"
#include "quant/vec_dot.hpp"
#include "backend/backend.hpp"
#include "backend/cpu/matmul.hpp"
#include "genie/session.hpp"
#include "core/thread_pool.hpp"
#include "huge_buffer.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace genie;

namespace {

struct Problem {
    int64_t k, n_out;
    DType type;
    std::unique_ptr<bench::HugeBuffer> w;
    size_t wrow;
    std::vector<uint8_t> a;
    size_t arow;
};

Problem make_problem(DType type, int64_t k, int64_t n_out, int64_t n) {
    Problem p{k, n_out, type, {}, quant::row_bytes(type, k), {}, 0};
    std::mt19937 rng(1);
    std::normal_distribution<float> dist(0.0f, 0.05f);
    std::vector<float> row(static_cast<size_t>(k));
    const char* huge = getenv("HUGE");
    p.w = std::make_unique<bench::HugeBuffer>(p.wrow * static_cast<size_t>(n_out), !huge || atoi(huge) != 0);
    // 4096 distinct rows, repeated past that (NOUT in the millions sets up in seconds).
    constexpr int64_t kDistinct = 4096;
    for (int64_t j = 0; j < n_out; ++j) {
        uint8_t* dst = p.w->data() + static_cast<size_t>(j) * p.wrow;
        if (j >= kDistinct) {
            std::memcpy(dst, p.w->data() + static_cast<size_t>(j % kDistinct) * p.wrow, p.wrow);
            continue;
        }
        for (auto& v : row) v = dist(rng);
        quant::quantize_row(type, row.data(), dst, k);
    }
    const DType dt = quant::vec_dot_type(type);
    p.arow = quant::row_bytes(dt, k);
    p.a.resize(p.arow * static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) {
        for (auto& v : row) v = dist(rng) * 20.0f;
        quant::quantize_row(dt == DType::Q8_1 ? DType::Q8_0 : dt, row.data(), p.a.data() + static_cast<size_t>(r) * p.arow, k);
    }
    return p;
}

void bm_gemm(benchmark::State& state, const cpu::KernelSet* ks, DType type, int64_t n) {
    const int64_t k = 1024, n_out = getenv("NOUT") ? atoi(getenv("NOUT")) : (n == 1 ? 4096 : 512);
    Problem p = make_problem(type, k, n_out, n);
    std::vector<float> y(static_cast<size_t>(n_out * n));
    const cpu::GemmFn gemm = ks->gemm[static_cast<int>(type)];
    for (auto _ : state) {
        gemm(k, p.w->data(), p.wrow, n_out, p.a.data(), p.arow, n, y.data(), static_cast<size_t>(n_out));
        benchmark::DoNotOptimize(y.data());
        benchmark::ClobberMemory();
    }
    const double iters = static_cast<double>(state.iterations());
    state.counters["weight_GB/s"] = benchmark::Counter(iters * static_cast<double>(p.w->size()) / 1e9, benchmark::Counter::kIsRate);
    state.counters["GFLOP/s"] =
        benchmark::Counter(iters * 2.0 * static_cast<double>(k * n_out * n) / 1e9, benchmark::Counter::kIsRate);
}

// The whole decode product as the model runs it: backend::cpu::matmul on a pool of
// `threads` (activation quantization, the row split and the barrier included), from DRAM
// when NOUT is large (NOUT=150000 K=1024 is the 0.6B output projection). The rate to set
// against genie_bench_bandwidth's figure at the same thread count.
void bm_matmul_threads(benchmark::State& state, DType type, int threads) {
    const int64_t k = getenv("K") ? atoi(getenv("K")) : 1024, n_out = getenv("NOUT") ? atoi(getenv("NOUT")) : 150000;
    // WINDOW=W: each call multiplies the next W rows of the NOUT (a model's small matrices
    // one after another, from DRAM when NOUT is large), so the per-call costs show.
    const int64_t window = getenv("WINDOW") ? std::min<int64_t>(atoi(getenv("WINDOW")), n_out) : n_out;
    Problem p = make_problem(type, k, n_out, 1);
    ThreadPool pool(threads);
    std::vector<float> x(static_cast<size_t>(k)), y(static_cast<size_t>(n_out));
    std::mt19937 rng(3);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    for (auto& v : x) v = dist(rng);
    backend::Weight w;
    w.type = type;
    w.n_in = k;
    w.n_out = window;
    w.row_bytes = p.wrow;
    const backend::Tensor xt{x.data(), 1, k};
    backend::Tensor yt{y.data(), 1, window};
    int64_t at = 0;
    for (auto _ : state) {
        if (at + window > n_out) at = 0;
        w.data = p.w->data() + static_cast<size_t>(at) * p.wrow;
        at += window;
        backend::cpu::matmul(pool, w, xt, yt);
        benchmark::DoNotOptimize(y.data());
        benchmark::ClobberMemory();
    }
    const double iters = static_cast<double>(state.iterations());
    state.counters["weight_GB/s"] =
        benchmark::Counter(iters * static_cast<double>(p.wrow * static_cast<size_t>(window)) / 1e9, benchmark::Counter::kIsRate);
}

// Attention over F16 caches `depth` cells deep: `rows` query rows of n_head heads (KV
// heads 8, head size 128) at the last positions, against every layer's cache in turn.
// rows = 1 is a decode step (n_layer x 8 heads x depth x 512 bytes: from DRAM once that
// passes the caches; rate: KV bytes read per second); more rows are the end of a prompt's
// evaluation at that depth, the prefill blocks (rate: rows per second). 16 heads: the
// 0.6B shape (GQA 2, 28 layers), 32: the 4B shape (GQA 4, 36 layers).
void bm_attention(benchmark::State& state, int depth, int n_head, int n_layer, int threads, int rows) {
    constexpr int kHeadsKv = 8, kHeadDim = 128, kKvDim = kHeadsKv * kHeadDim;
    auto be = backend::make_cpu_backend(threads);
    auto cache = be->create_kv_cache(backend::KvLayout{n_layer, depth + 1, kHeadsKv, kHeadDim, KvType::F16});
    std::mt19937 rng(4);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> kv(static_cast<size_t>(depth) * kKvDim);
    for (auto& v : kv) v = dist(rng);
    const backend::Tensor kt{kv.data(), depth, kKvDim};
    for (int l = 0; l < n_layer; ++l) be->kv_store(*cache, l, kt, kt, 0);
    std::vector<float> q(static_cast<size_t>(rows) * n_head * kHeadDim), out(q.size());
    for (auto& v : q) v = dist(rng);
    const backend::Tensor qt{q.data(), rows, n_head * kHeadDim};
    backend::Tensor ot{out.data(), rows, n_head * kHeadDim};
    const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
    for (auto _ : state) {
        for (int l = 0; l < n_layer; ++l) be->attention(qt, *cache, l, depth - rows, n_head, scale, 0, ot);
        benchmark::DoNotOptimize(out.data());
    }
    if (rows > 1) {
        state.counters["rows/s"] = benchmark::Counter(static_cast<double>(state.iterations()) * rows, benchmark::Counter::kIsRate);
        return;
    }
    // K and V: 2 x F16 per dimension, per cell, KV head and layer
    const double kv_bytes = static_cast<double>(n_layer) * kKvDim * depth * 2 * sizeof(uint16_t);
    state.counters["kv_GB/s"] = benchmark::Counter(static_cast<double>(state.iterations()) * kv_bytes / 1e9, benchmark::Counter::kIsRate);
}

void bm_quantize(benchmark::State& state, const cpu::KernelSet* ks, DType dt) {
    const int64_t k = 4096;
    std::vector<float> x(static_cast<size_t>(k));
    std::mt19937 rng(2);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    for (auto& v : x) v = dist(rng);
    std::vector<uint8_t> out(quant::row_bytes(dt, k));
    const cpu::QuantizeFn q = ks->quantize[static_cast<int>(dt)];
    for (auto _ : state) {
        if (q) q(x.data(), out.data(), k);
        else quant::quantize_row(dt, x.data(), out.data(), k);
        benchmark::DoNotOptimize(out.data());
    }
    state.counters["floats/s"] = benchmark::Counter(static_cast<double>(state.iterations() * k), benchmark::Counter::kIsRate);
}

const int kRegistered = [] {
    const DType types[] = {DType::Q4_K, DType::Q6_K, DType::Q5_K, DType::Q8_0, DType::Q4_0, DType::F16, DType::F32,
                           DType::BF16, DType::Q2_K, DType::Q3_K, DType::Q4_1, DType::Q5_0, DType::Q5_1};
    for (const cpu::KernelSet* ks : cpu::available_kernel_sets()) {
        for (DType t : types) {
            if (!ks->gemm[static_cast<int>(t)]) continue;
            // Skip entries a SIMD set only inherits from the scalar set.
            if (ks != &cpu::scalar_kernels() && ks->gemm[static_cast<int>(t)] == cpu::scalar_kernels().gemm[static_cast<int>(t)])
                continue;
            for (int64_t n : {int64_t{1}, int64_t{64}}) {
                const std::string name = std::string("gemm/") + std::string(dtype_name(t)) + "/" + ks->isa +
                                         (n == 1 ? "/decode_k1024_n4096" : "/prefill_k1024_n512_m64");
                benchmark::RegisterBenchmark(name.c_str(), bm_gemm, ks, t, n);
            }
        }
        for (DType dt : {DType::Q8_K, DType::Q8_0, DType::F16}) {
            const std::string name = std::string("quantize/") + std::string(dtype_name(dt)) + "/" + ks->isa;
            benchmark::RegisterBenchmark(name.c_str(), bm_quantize, ks, dt);
        }
    }
    for (int depth : {1024, 4096})
        for (int heads : {16, 32}) {
            const int layers = heads == 16 ? 28 : 36;
            const std::string name = "attention_decode/heads:" + std::to_string(heads) + "/8/depth:" + std::to_string(depth) + "/threads:2";
            benchmark::RegisterBenchmark(name.c_str(), bm_attention, depth, heads, layers, 2, 1)->UseRealTime();
        }
    for (int heads : {16, 32}) {  // the last 64 rows of a prompt at depth 2048
        const int layers = heads == 16 ? 28 : 36;
        const std::string name = "attention_prompt/heads:" + std::to_string(heads) + "/8/depth:2048/rows:64/threads:2";
        benchmark::RegisterBenchmark(name.c_str(), bm_attention, 2048, heads, layers, 2, 64)->UseRealTime();
    }
    // The best set only (matmul runs the dispatched one), 1 and 2 threads.
    for (DType t : types)
        for (int threads : {1, 2}) {
            const std::string name = std::string("matmul_threads/") + std::string(dtype_name(t)) + "/decode/threads:" +
                                     std::to_string(threads);
            benchmark::RegisterBenchmark(name.c_str(), bm_matmul_threads, t, threads)->UseRealTime();
        }
    return 0;
}();

}  // namespace

BENCHMARK_MAIN();
