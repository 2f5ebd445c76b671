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
/// Output rows are handed to threads in multiples of this (the tallest kernel tile: AMX's
/// 16 rows), so a row is computed by the same kernel whichever range it falls in.
constexpr int64_t kRowGrain = 16;

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

namespace {

/// x's rows in the activation format `dot_type` (F32: x itself), in per-thread scratch
/// `slot` (0 or 1, so two formats can be live at once).
const uint8_t* quantized_activations(ThreadPool& pool, const Tensor& x, int64_t k, DType dot_type, size_t& a_stride, int slot) {
    if (dot_type == DType::F32) {
        a_stride = static_cast<size_t>(x.cols) * sizeof(float);
        return reinterpret_cast<const uint8_t*>(x.data);
    }
    const genie::cpu::KernelSet& ks = genie::cpu::kernel_set();
    const int64_t n = x.rows;
    thread_local std::vector<uint8_t> scratch[2];
    std::vector<uint8_t>& buf = scratch[slot];
    a_stride = quant::row_bytes(dot_type, k);
    if (buf.size() < a_stride * static_cast<size_t>(n)) buf.resize(a_stride * static_cast<size_t>(n));
    const genie::cpu::QuantizeFn quantize = ks.quantize[static_cast<int>(dot_type)];
    uint8_t* dst = buf.data();
    const size_t stride = a_stride;
    auto quantize_rows = [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            if (quantize) quantize(x.row(r), dst + static_cast<size_t>(r) * stride, k);
            else quant::quantize_row(dot_type, x.row(r), dst + static_cast<size_t>(r) * stride, k);
        }
    };
    if (n >= 8) pool.parallel_for(n, quantize_rows);
    else quantize_rows(0, n);
    return dst;
}

/// Output rows [j0, j1) of one weight for every activation row, panel by panel.
void run_rows(genie::cpu::GemmFn gemm, const Weight& w, const uint8_t* A, size_t a_stride, int64_t n, Tensor& y, int64_t j0,
              int64_t j1) {
    const auto* W = static_cast<const uint8_t*>(w.data);
    const size_t ldy = static_cast<size_t>(y.cols);
    // Up to 2 panels' worth is one panel: a typical prompt (~100 tokens) then has its
    // K-quant weights decoded once instead of twice (4B TTFT(100) 5-10 % faster, A/B on
    // Zen 3); longer prefills keep 64-row panels.
    const genie::cpu::KernelSet& ks = genie::cpu::kernel_set();
    int64_t panel_rows = kPanelRows;
    if (ks.panel_bytes > 0)  // a set that decodes per call: as many rows as fit the budget, in 16s
        panel_rows = std::max<int64_t>(16, static_cast<int64_t>(ks.panel_bytes / a_stride) & ~int64_t{15});
    const int64_t panel = n <= 2 * panel_rows ? n : panel_rows;
    for (int64_t i0 = 0; i0 < n; i0 += panel) {
        const int64_t rows = std::min(panel, n - i0);
        gemm(w.n_in, W + static_cast<size_t>(j0) * w.row_bytes, w.row_bytes, j1 - j0, A + static_cast<size_t>(i0) * a_stride,
             a_stride, rows, y.data + static_cast<size_t>(i0) * ldy + static_cast<size_t>(j0), ldy);
    }
}

genie::cpu::GemmFn gemm_for(DType type) {
    const int idx = static_cast<int>(type);
    return idx < genie::cpu::kTypeSlots ? genie::cpu::kernel_set().gemm[idx] : nullptr;
}

}  // namespace

void matmul(ThreadPool& pool, const Weight& w, const Tensor& x, Tensor& y) {
    if (!gemm_for(w.type)) {
        matmul_reference(pool, w, x, y);
        return;
    }
    // One weight is the shared-input case with one output (no second copy of the driver).
    const Backend::MatmulOut out[] = {{&w, &y}};
    matmul_shared_input(pool, x, out);
}

void matmul_shared_input(ThreadPool& pool, const Tensor& x, std::span<const Backend::MatmulOut> outs) {
    // Fused only when every weight has a kernel and at most two activation formats are needed.
    constexpr size_t kMax = 4;
    bool fusable = !outs.empty() && outs.size() <= kMax;
    DType formats[2] = {};
    int n_formats = 0;
    int slot_of[kMax] = {};
    for (size_t i = 0; fusable && i < outs.size(); ++i) {
        if (!gemm_for(outs[i].w->type) || outs[i].w->n_in != outs[0].w->n_in) {
            fusable = false;
            break;
        }
        const DType dt = quant::vec_dot_type(outs[i].w->type);
        int slot = -1;
        for (int f = 0; f < n_formats; ++f)
            if (formats[f] == dt) slot = f;
        if (slot < 0) {
            if (n_formats == 2) {
                fusable = false;
                break;
            }
            formats[n_formats] = dt;
            slot = n_formats++;
        }
        slot_of[i] = slot;
    }
    if (!fusable) {
        for (const Backend::MatmulOut& o : outs) matmul(pool, *o.w, x, *o.y);
        return;
    }
    const int64_t n = x.rows, k = outs[0].w->n_in;
    const uint8_t* A[2] = {};
    size_t a_stride[2] = {};
    for (int f = 0; f < n_formats; ++f) A[f] = quantized_activations(pool, x, k, formats[f], a_stride[f], f);
    // Row groups of all weights, one after another.
    int64_t first_group[kMax + 1] = {};
    for (size_t i = 0; i < outs.size(); ++i)
        first_group[i + 1] = first_group[i] + (outs[i].w->n_out + kRowGrain - 1) / kRowGrain;
    pool.parallel_for(first_group[outs.size()], [&](int64_t g0, int64_t g1) {
        for (size_t i = 0; i < outs.size(); ++i) {
            const int64_t b = std::max(g0, first_group[i]), e = std::min(g1, first_group[i + 1]);
            if (b >= e) continue;
            const Weight& w = *outs[i].w;
            const int64_t j0 = (b - first_group[i]) * kRowGrain, j1 = std::min(w.n_out, (e - first_group[i]) * kRowGrain);
            run_rows(gemm_for(w.type), w, A[slot_of[i]], a_stride[slot_of[i]], n, *outs[i].y, j0, j1);
        }
    });
}

}  // namespace genie::backend::cpu
