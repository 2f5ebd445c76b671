// Micro-benchmarks of each CPU kernel against its scalar reference: for every weight type
// and every kernel set the running CPU supports (scalar = quant/vec_dot.hpp, avx2,
// avx512_vnni, neon, neon+dotprod), a gemv (one activation row) over a cache-resident
// weight block (64 rows x 4096 columns: 64-560 KiB, so the kernel's arithmetic is
// measured, not memory bandwidth: bench_matmul and genie-cli bench measure that), and the
// activation quantizers. bytes_per_second counts the weight bytes (gemv) or the input
// floats (quantize) processed. Single-threaded.
//   build/bin/genie_bench_kernels [--benchmark_filter=Q4_K]
// The ratio of a set's time to the scalar one of the same type is its speedup
// (docs/performance.md, "Kernels").
#include "backend/cpu/kernels/kernels.hpp"
#include "quant/quant.hpp"
#include "quant/vec_dot.hpp"

#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

using namespace genie;

namespace {

constexpr int64_t kK = 4096, kRows = 64;

struct Gemv {
    std::vector<uint8_t> w, a;
    size_t wrow = 0, arow = 0;
};

Gemv make_gemv(DType type) {
    Gemv g;
    g.wrow = quant::row_bytes(type, kK);
    std::mt19937 rng(1);
    std::normal_distribution<float> dist(0.0f, 0.05f);
    std::vector<float> row(static_cast<size_t>(kK));
    g.w.resize(g.wrow * kRows);
    for (int64_t j = 0; j < kRows; ++j) {
        for (auto& v : row) v = dist(rng);
        quant::quantize_row(type, row.data(), g.w.data() + static_cast<size_t>(j) * g.wrow, kK);
    }
    const DType dt = quant::vec_dot_type(type);
    g.arow = quant::row_bytes(dt, kK);
    g.a.resize(g.arow);
    for (auto& v : row) v = dist(rng) * 20.0f;
    if (dt == DType::Q8_1) cpu::quantize_q8_1_ggml_x86(row.data(), g.a.data(), kK);
    else if (dt == DType::Q8_0) cpu::quantize_q8_0_ggml_x86(row.data(), g.a.data(), kK);
    else quant::quantize_row(dt, row.data(), g.a.data(), kK);
    return g;
}

void bm_gemv(benchmark::State& state, const cpu::KernelSet* ks, DType type) {
    const Gemv g = make_gemv(type);
    std::vector<float> y(kRows);
    const cpu::GemmFn gemm = ks->gemm[static_cast<int>(type)];
    for (auto _ : state) {
        gemm(kK, g.w.data(), g.wrow, kRows, g.a.data(), g.arow, 1, y.data(), kRows);
        benchmark::DoNotOptimize(y.data());
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(g.w.size()));
    state.counters["elements/s"] =
        benchmark::Counter(static_cast<double>(state.iterations()) * static_cast<double>(kK * kRows), benchmark::Counter::kIsRate);
}

void bm_quantize(benchmark::State& state, const cpu::KernelSet* ks, DType dt) {
    std::vector<float> x(static_cast<size_t>(kK));
    std::mt19937 rng(2);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    for (auto& v : x) v = dist(rng);
    std::vector<uint8_t> out(quant::row_bytes(dt, kK));
    const cpu::QuantizeFn q = ks->quantize[static_cast<int>(dt)];
    for (auto _ : state) {
        if (q) q(x.data(), out.data(), kK);
        else quant::quantize_row(dt, x.data(), out.data(), kK);
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kK * static_cast<int64_t>(sizeof(float)));
}

const int kRegistered = [] {
    const DType types[] = {DType::Q4_K, DType::Q6_K, DType::Q5_K, DType::Q8_0, DType::Q4_0, DType::Q2_K, DType::Q3_K,
                           DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::F16,  DType::BF16, DType::F32};
    const cpu::KernelSet& scalar = cpu::scalar_kernels();
    for (DType t : types)
        for (const cpu::KernelSet* ks : cpu::available_kernel_sets()) {
            const cpu::GemmFn fn = ks->gemm[static_cast<int>(t)];
            // A SIMD set's entry inherited from the scalar set is not its own kernel.
            if (!fn || (ks != &scalar && fn == scalar.gemm[static_cast<int>(t)])) continue;
            const std::string name = "gemv/" + std::string(dtype_name(t)) + "/" + ks->isa;
            benchmark::RegisterBenchmark(name.c_str(), bm_gemv, ks, t);
        }
    for (DType dt : {DType::Q8_K, DType::Q8_0, DType::Q8_1, DType::F16})
        for (const cpu::KernelSet* ks : cpu::available_kernel_sets()) {
            const cpu::QuantizeFn q = ks->quantize[static_cast<int>(dt)];
            if (ks != &scalar && q == scalar.quantize[static_cast<int>(dt)]) continue;
            const std::string name = "quantize/" + std::string(dtype_name(dt)) + "/" + ks->isa;
            benchmark::RegisterBenchmark(name.c_str(), bm_quantize, ks, dt);
        }
    return 0;
}();

}  // namespace

BENCHMARK_MAIN();
