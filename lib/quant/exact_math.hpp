// Float helpers that pin down rounding so host and device agree bit for bit.
//
// ggml's reference dequantization computes `a*b + c` as two separately rounded
// operations. A compiler may fuse that into one FMA (a different result in the
// last bit): nvcc does so by default (--fmad=true), and g++ does on targets with
// FMA (aarch64, -march=native) unless -ffp-contract=off. On the device the
// __fmul_rn intrinsic is never fused, so these helpers are exact there whatever
// the flags; on the host they rely on the build not contracting (x86-64 without
// FMA in the target ISA cannot; elsewhere build with -ffp-contract=off).
#pragma once

#include "core/hd.hpp"

namespace genie::quant {

/// a*b + c, each operation rounded to nearest even on its own (never an FMA).
GENIE_HD float mul_add_rounded(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
    return __fadd_rn(__fmul_rn(a, b), c);
#else
    return a * b + c;
#endif
}

/// a*b - c, each operation rounded on its own (never an FMA).
GENIE_HD float mul_sub_rounded(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
    return __fsub_rn(__fmul_rn(a, b), c);
#else
    return a * b - c;
#endif
}

}  // namespace genie::quant
