// The scale searches of ggml's reference k-quant quantizers (ggml-quants.c):
// they pick a block's scale (and min) and its integer quants. Reproduced with the
// same float operations in the same order, because a single differently rounded
// sum can flip a comparison and change the quantized bytes.
#pragma once

#include "core/fp16.hpp"

#include <cstdint>

namespace genie::quant {

/// Round to nearest, ties to even, for |value| <= 4194303 (ggml's nearest_int):
/// adding 1.5 * 2^23 pushes the fraction out of the mantissa, so the FPU's
/// round-to-nearest-even does the rounding and the integer is read from the bits.
inline int nearest_int(float value) {
    const float shifted = value + 12582912.f;
    return static_cast<int>(f32_bits(shifted) & 0x007fffffu) - 0x00400000;
}

/// ggml's make_qx_quants: symmetric quants L[i] in 0..2*nmax-1 (stored with +nmax
/// offset) for x[0..n), returning the scale. rmse_type 0 takes the plain
/// max-based scale; 1 weighs errors by x^2 (or by `weights` when not null) and
/// tries 18 nearby scales, keeping the one with the best weighted fit.
/// Returns 0 and all-zero L for an (almost) all-zero group.
float make_qx_quants(int n, int nmax, const float* x, int8_t* L, int rmse_type, const float* weights);

/// ggml's make_q3_quants (Q3_K): symmetric quants with an optional iterative
/// per-element refinement (do_rmse). L gets the +nmax offset. Returns the scale.
float make_q3_quants(int n, int nmax, const float* x, int8_t* L, bool do_rmse);

/// ggml's make_qkx2_quants: asymmetric quants L[i] in 0..nmax with x ~ scale*L - the_min.
/// Starts from the min/max fit, then tries nstep+1 scales (rmin + rdelta*is + nmax)
/// / (max - min), each with its weighted least-squares scale and min, keeping the
/// one with the lowest weighted error (absolute if use_mad, squared otherwise).
/// Writes -min (>= 0) to *the_min and returns the scale. `scratch` holds n bytes.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min,
                       uint8_t* scratch, float rmin, float rdelta, int nstep, bool use_mad);

}  // namespace genie::quant
