// Micro-benchmarks of the CPU matmul kernels: every kernel set this CPU supports
// (scalar reference, avx2, avx512_vnni, ...) per weight type, for a decode-shaped
// product (one activation row) and a prefill tile (64 rows), single-threaded.
// Counters: weight GB/s (bytes of weights streamed per second) and GFLOP/s (2 k n_out n).
// Plus the activation quantizers. Run: build/bin/genie_bench_matmul [--benchmark_filter=Q4_K]
// NOUT=512 (environment) sets the number of weight rows (default 4096 for decode, 512 for
// prefill): with 512 a decode problem fits in L2, which times the arithmetic alone.
// The weights sit on transparent huge pages (huge_buffer.hpp), as the model file's
// mapping has them; HUGE=0 leaves them on 4 KiB pages.
#include "backend/cpu/kernels/kernels.hpp"
#include "quant/quant.hpp"
#include "quant/vec_dot.hpp"
#include "huge_buffer.hpp"

#include <benchmark/benchmark.h>

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
    return 0;
}();

}  // namespace

BENCHMARK_MAIN();
