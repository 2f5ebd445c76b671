// Vectorised element-wise math of the CPU backend that is not a matrix kernel: the
// exponential of softmax and SiLU (ggml's ggml_v_expf algorithm: ARM's optimized-routines
// expf, at most 1.5 ulp from the exact value, the same arithmetic llama.cpp runs).
// (Attention's K·q and V·p over an F16 cache are kernel-set functions: kernels.hpp.) x86 variants are compiled for AVX2+FMA+F16C with function target attributes and
// chosen at run time together with the kernel set (backend/cpu/kernels); aarch64 has NEON
// variants (the same operations, 4 lanes, as ggml on ARM); with GENIE_CPU_ISA=scalar, or on
// a CPU without them, the reference loops (std::exp) run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace genie::cpu {

struct MathFns {
    const char* isa = "scalar";
    /// y[i] = exp(x[i] * scale - max) for i < n; returns the sum in double
    /// (ggml_vec_soft_max_f32 of the scaled row: x[i] * scale is rounded to float before
    /// the subtraction, as ggml stores the scaled scores first). y may alias x.
    double (*softmax_exp)(int64_t n, float* y, const float* x, float scale, float max) = nullptr;
    /// out[i] = F16(x[i] * s) for i < n (round to nearest even): softmax's normalisation
    /// and the F16 probabilities of attention's V·p in one pass.
    void (*scale_to_f16)(int64_t n, const float* x, float s, uint16_t* out) = nullptr;
    /// out[i] = g[i] / (1 + exp(-g[i])) * u[i] (ggml_vec_swiglu_f32); out may alias g.
    void (*swiglu)(int64_t n, const float* g, const float* u, float* out) = nullptr;
    /// out[i] = gelu(g[i]) * u[i] with ggml-cpu's F16 GELU (core/gelu.hpp; ggml_vec_geglu_f32):
    /// the reference computes each value, the SIMD sets look it up in the F16 table (the
    /// same bits); out may alias g.
    void (*geglu)(int64_t n, const float* g, const float* u, float* out) = nullptr;
    /// The sum of x[i] * x[i] (products in float, as ggml_compute_forward_rms_norm
    /// squares) in double. The SIMD variants add in several double lanes: ggml's one
    /// sequential chain was ~4 cycles per element, 1.5 % of a 0.6B decode token's time
    /// (24 per-head norms and two 1024-wide ones per layer). Doubles hold each float
    /// product exactly and the partial sums to 2^-53 relative, so the order shows in the
    /// float mean only at a rounding tie (tested against the chain: equal on random rows).
    double (*sum_squares)(int64_t n, const float* x) = nullptr;
    /// RoPE's rotation of the pairs (a[i stride], b[i stride]), i < n, by the angles whose
    /// cosines and sines are cs[i], sn[i]: a' = a cos - b sin, b' = a sin + b cos, each with
    /// one fused multiply-add, fma(a, cos, -(b sin)) and fma(a, sin, b cos): ggml's
    /// rotate_pairs as GCC compiles it (its default -ffp-contract=fast fuses the first
    /// product of each expression).
    void (*rotate_pairs)(int64_t n, float* a, float* b, size_t stride, const float* cs, const float* sn) = nullptr;
};

/// The largest s[t] * scale for t < n (-inf for n = 0; NaNs are passed over), s left as
/// it is: for scale > 0 the unscaled maximum times scale (rounding is monotonic, so that is
/// exactly the largest rounded product), so the row is read once and not written; softmax_exp
/// scales again on the fly. Eight running maxima that the compiler vectorises: attention's
/// one dependent chain over a row's cells took ~4 cycles per cell, ~15 % of a 512-token
/// prefill's time at a 2048-token depth (perf). The maximum does not depend on the order: exact.
float scaled_max(const float* s, int64_t n, float scale);

/// The reference functions (std::exp, scalar loops).
const MathFns& reference_math();
/// The functions that go with kernel_set(): SIMD where the kernel set is a SIMD one and
/// this build has a variant for it, the reference otherwise.
const MathFns& math_fns();
/// The variants of every kernel set this CPU runs (available_kernel_sets()), once each:
/// for tests.
std::vector<const MathFns*> available_math();

}  // namespace genie::cpu
