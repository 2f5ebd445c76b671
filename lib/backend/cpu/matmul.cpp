#include "backend/cpu/matmul.hpp"

#include "backend/cpu/kernels/kernels.hpp"
#include "quant/quant.hpp"
#include "quant/vec_dot.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

namespace genie::backend::cpu {

namespace {

/// Activation rows per panel in prefill: a panel of quantized activations stays in L2
/// while a thread streams its weight rows past it.
constexpr int64_t kPanelRows = 64;
/// Output rows are handed to threads in multiples of this (the kernels' tile height).
constexpr int64_t kRowGrain = 4;

void round_activations(DType dot_type, const float* x, float* out, int64_t n, std::vector<uint8_t>& scratch) {
    switch (dot_type) {
        case DType::F32: std::memcpy(out, x, static_cast<size_t>(n) * sizeof(float)); return;
        default: {
            const DType q = dot_type == DType::Q8_1 ? DType::Q8_0 : dot_type;
            scratch.resize(quant::row_bytes(q, n));
            quant::quantize_row(q, x, scratch.data(), n);
            quant::dequantize_row(q, scratch.data(), out, n);
        }
    }
}

}  // namespace

void matmul_reference(ThreadPool& pool, const Weight& w, const Tensor& x, Tensor& y) {
    const int64_t n = x.rows, k = w.n_in;
    const DType dot_type = quant::vec_dot_type(w.type);
    std::vector<float> xr(static_cast<size_t>(n * k));
    std::vector<uint8_t> scratch;
    for (int64_t r = 0; r < n; ++r) round_activations(dot_type, x.row(r), xr.data() + r * k, k, scratch);
    pool.parallel_for(w.n_out, [&](int64_t begin, int64_t end) {
        std::vector<float> wrow(static_cast<size_t>(k));
        for (int64_t j = begin; j < end; ++j) {
            quant::dequantize_row(w.type, static_cast<const uint8_t*>(w.data) + static_cast<size_t>(j) * w.row_bytes,
                                  wrow.data(), k);
            for (int64_t r = 0; r < n; ++r) {
                const float* xv = xr.data() + r * k;
                double sum = 0.0;
                for (int64_t i = 0; i < k; ++i) sum += static_cast<double>(wrow[i]) * xv[i];
                y.row(r)[j] = static_cast<float>(sum);
            }
        }
    });
}

void matmul(ThreadPool& pool, const Weight& w, const Tensor& x, Tensor& y) {
    const genie::cpu::KernelSet& ks = genie::cpu::kernel_set();
    const int idx = static_cast<int>(w.type);
    const genie::cpu::GemmFn gemm = idx < genie::cpu::kTypeSlots ? ks.gemm[idx] : nullptr;
    if (!gemm) {
        matmul_reference(pool, w, x, y);
        return;
    }
    const int64_t n = x.rows, k = w.n_in;
    const DType dot_type = quant::vec_dot_type(w.type);

    // Activations in the dot type, one row each (F32: used in place).
    const void* a = x.data;
    size_t a_stride = static_cast<size_t>(x.cols) * sizeof(float);
    if (dot_type != DType::F32) {
        thread_local std::vector<uint8_t> scratch;
        a_stride = quant::row_bytes(dot_type, k);
        if (scratch.size() < a_stride * static_cast<size_t>(n)) scratch.resize(a_stride * static_cast<size_t>(n));
        const genie::cpu::QuantizeFn quantize = ks.quantize[static_cast<int>(dot_type)];
        uint8_t* dst = scratch.data();
        auto quantize_rows = [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
                if (quantize) quantize(x.row(r), dst + static_cast<size_t>(r) * a_stride, k);
                else quant::quantize_row(dot_type, x.row(r), dst + static_cast<size_t>(r) * a_stride, k);
            }
        };
        if (n >= 8) pool.parallel_for(n, quantize_rows);
        else quantize_rows(0, n);
        a = dst;
    }

    const auto* W = static_cast<const uint8_t*>(w.data);
    const auto* A = static_cast<const uint8_t*>(a);
    const size_t ldy = static_cast<size_t>(y.cols);
    const int64_t groups = (w.n_out + kRowGrain - 1) / kRowGrain;
    pool.parallel_for(groups, [&](int64_t g0, int64_t g1) {
        const int64_t j0 = g0 * kRowGrain, j1 = std::min(w.n_out, g1 * kRowGrain);
        for (int64_t i0 = 0; i0 < n; i0 += kPanelRows) {
            const int64_t rows = std::min(kPanelRows, n - i0);
            gemm(k, W + static_cast<size_t>(j0) * w.row_bytes, w.row_bytes, j1 - j0, A + static_cast<size_t>(i0) * a_stride,
                 a_stride, rows, y.data + static_cast<size_t>(i0) * ldy + static_cast<size_t>(j0), ldy);
        }
    });
}

}  // namespace genie::backend::cpu
