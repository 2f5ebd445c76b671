// IEEE half and bfloat16 conversions, bit-exact with ggml's reference
// (round-to-nearest-even; NaN kept NaN; bf16 from f32 rounds like ggml_compute_fp32_to_bf16).
#pragma once

#include "core/hd.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace genie {

GENIE_HD uint32_t f32_bits(float f) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
#endif
}

GENIE_HD float f32_from_bits(uint32_t u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
#endif
}

/// IEEE binary16 bits -> float (exact; subnormals, inf and NaN handled).
GENIE_HD float fp16_to_fp32(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1fu;
    uint32_t mantissa = h & 0x3ffu;
    if (exponent == 0) {
        if (mantissa == 0) return f32_from_bits(sign);
        // subnormal: normalise
        int shift = 0;
        while ((mantissa & 0x400u) == 0) {
            mantissa <<= 1;
            ++shift;
        }
        mantissa &= 0x3ffu;
        const uint32_t e32 = static_cast<uint32_t>(127 - 15 + 1 - shift);
        return f32_from_bits(sign | (e32 << 23) | (mantissa << 13));
    }
    if (exponent == 0x1f) return f32_from_bits(sign | 0x7f800000u | (mantissa << 13));
    return f32_from_bits(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
}

/// float -> IEEE binary16 bits, round to nearest even (what F16C's
/// _cvtss_sh(x, 0) and ggml's reference conversion produce).
GENIE_HD uint16_t fp32_to_fp16(float f) {
    const uint32_t x = f32_bits(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t abs = x & 0x7fffffffu;
    if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));  // NaN
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
    if (abs < 0x38800000u) {
        // result is subnormal or zero: add the implicit bit, shift with rounding
        if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // < 2^-25 rounds to 0
        const uint32_t e = abs >> 23;
        const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126u - e;  // 14 + (113 - e) ... yields mantissa for 2^-24 units
        const uint32_t shifted = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1u);
        const uint32_t half = 1u << (shift - 1u);
        uint32_t result = shifted;
        if (rem > half || (rem == half && (shifted & 1u))) ++result;
        return static_cast<uint16_t>(sign | result);
    }
    // normal: rebias exponent, round mantissa to 10 bits (carry may bump the exponent; fine)
    uint32_t value = abs - 0x38000000u;  // exponent bias 127 -> 15
    const uint32_t rem = value & 0x1fffu;
    value >>= 13;
    if (rem > 0x1000u || (rem == 0x1000u && (value & 1u))) ++value;
    return static_cast<uint16_t>(sign | value);
}

/// bfloat16 bits -> float (exact).
GENIE_HD float bf16_to_fp32(uint16_t b) { return f32_from_bits(static_cast<uint32_t>(b) << 16); }

/// float -> bfloat16 bits, round to nearest even; NaN stays quiet NaN (as ggml does).
GENIE_HD uint16_t fp32_to_bf16(float f) {
    const uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 64u);
    return static_cast<uint16_t>((u + (0x7fffu + ((u >> 16) & 1u))) >> 16);
}

/// Row conversions (host only).
void fp16_to_fp32_row(const uint16_t* src, float* dst, size_t n);
void fp32_to_fp16_row(const float* src, uint16_t* dst, size_t n);
void bf16_to_fp32_row(const uint16_t* src, float* dst, size_t n);
void fp32_to_bf16_row(const float* src, uint16_t* dst, size_t n);

}  // namespace genie
