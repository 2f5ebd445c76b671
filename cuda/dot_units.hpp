// The int8 dot products of the CUDA decode mat-vec (kernels.cuh: mmvq): one 32-element
// unit of a weight block with one Q8_1 activation block. GENIE_HD so that the CPU unit
// tests (test/unit/test_cuda_dot_units.cpp) check the bit unpacking of every format
// against the reference dot product on machines without a GPU; on the device dp4a and
// vsub4 are the __dp4a / __vsubss4 instructions.
#pragma once

#include "core/fp16.hpp"
#include "core/hd.hpp"
#include "quant/blocks.hpp"
#include "quant/dequantize_kquants.hpp"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#define GENIE_UNROLL _Pragma("unroll")
#else
#define GENIE_UNROLL
#endif

#include <cstdint>
#include <cstring>

namespace genie::cuda::kernels {

using namespace genie::quant;

/// IEEE half bits -> float (the hardware conversion on the device).
GENIE_HD float h2f(uint16_t bits) {
#if defined(__CUDA_ARCH__)
    return __half2float(__ushort_as_half(bits));
#else
    return fp16_to_fp32(bits);
#endif
}

/// c + the dot product of the 4 signed bytes of a and b.
GENIE_HD int dp4a(int a, int b, int c) {
#if defined(__CUDA_ARCH__)
    return __dp4a(a, b, c);
#else
    for (int k = 0; k < 4; ++k)
        c += static_cast<int>(static_cast<int8_t>(static_cast<uint32_t>(a) >> (8 * k))) *
             static_cast<int>(static_cast<int8_t>(static_cast<uint32_t>(b) >> (8 * k)));
    return c;
#endif
}

/// Per-byte signed saturating a - b (the operands here never saturate).
GENIE_HD int vsub4(int a, int b) {
#if defined(__CUDA_ARCH__)
    return static_cast<int>(__vsubss4(static_cast<unsigned>(a), static_cast<unsigned>(b)));
#else
    uint32_t r = 0;
    for (int k = 0; k < 4; ++k) {
        int v = static_cast<int8_t>(static_cast<uint32_t>(a) >> (8 * k)) - static_cast<int8_t>(static_cast<uint32_t>(b) >> (8 * k));
        v = v < -128 ? -128 : (v > 127 ? 127 : v);
        r |= (static_cast<uint32_t>(v) & 0xFFu) << (8 * k);
    }
    return static_cast<int>(r);
#endif
}

/// 4 bytes from a 2-byte aligned address (blocks of 18, 22, 34, 210 bytes).
GENIE_HD int load_b2(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
    const auto* h = reinterpret_cast<const uint16_t*>(p);
    return static_cast<int>(static_cast<uint32_t>(h[0]) | static_cast<uint32_t>(h[1]) << 16);
#else
    uint32_t v;
    std::memcpy(&v, p, 4);
    return static_cast<int>(v);
#endif
}
/// 4 bytes from a 4-byte aligned address.
GENIE_HD int load_b4(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
    return *reinterpret_cast<const int*>(p);
#else
    int v;
    std::memcpy(&v, p, 4);
    return v;
#endif
}

// ---- int8 dot products of one 32-element unit of a weight block with a Q8_1 block ----
// Integer sums with dp4a (sm_61+), then the float scales in the CPU reference's order.

GENIE_HD float dot_unit(const BlockQ4_0& b, int, const BlockQ8_1& y) {
    const uint8_t* yb = reinterpret_cast<const uint8_t*>(y.qs);
    int sumi = 0;
GENIE_UNROLL
    for (int i = 0; i < 4; ++i) {
        const int v = load_b2(b.qs + 4 * i);
        sumi = dp4a((vsub4(v & 0x0F0F0F0F, 0x08080808)), load_b4(yb + 4 * (i)), sumi);
        sumi = dp4a((vsub4((v >> 4) & 0x0F0F0F0F, 0x08080808)), load_b4(yb + 4 * (i + 4)), sumi);
    }
    return static_cast<float>(sumi) * h2f(b.d) * h2f(y.d);
}

GENIE_HD float dot_unit(const BlockQ4_1& b, int, const BlockQ8_1& y) {
    const uint8_t* yb = reinterpret_cast<const uint8_t*>(y.qs);
    int sumi = 0;
GENIE_UNROLL
    for (int i = 0; i < 4; ++i) {
        const int v = load_b2(b.qs + 4 * i);
        sumi = dp4a(v & 0x0F0F0F0F, load_b4(yb + 4 * (i)), sumi);
        sumi = dp4a((v >> 4) & 0x0F0F0F0F, load_b4(yb + 4 * (i + 4)), sumi);
    }
    return (h2f(b.d) * h2f(y.d)) * static_cast<float>(sumi) + h2f(b.m) * h2f(y.s);
}

/// Bits [first, first + 4) of qh spread to bit 4 of the 4 bytes of an int.
GENIE_HD int spread_high_bits(uint32_t qh, int first) {
    int r = 0;
GENIE_UNROLL
    for (int k = 0; k < 4; ++k) r |= static_cast<int>((qh >> (first + k)) & 1u) << (8 * k + 4);
    return r;
}

GENIE_HD float dot_unit(const BlockQ5_0& b, int, const BlockQ8_1& y) {
    const uint8_t* yb = reinterpret_cast<const uint8_t*>(y.qs);
    const uint32_t qh = static_cast<uint32_t>(load_b2(b.qh));
    int sumi = 0;
GENIE_UNROLL
    for (int i = 0; i < 4; ++i) {
        const int v = load_b2(b.qs + 4 * i);
        const int lo = (v & 0x0F0F0F0F) | spread_high_bits(qh, 4 * i);
        const int hi = ((v >> 4) & 0x0F0F0F0F) | spread_high_bits(qh, 16 + 4 * i);
        sumi = dp4a((vsub4(lo, 0x10101010)), load_b4(yb + 4 * (i)), sumi);
        sumi = dp4a((vsub4(hi, 0x10101010)), load_b4(yb + 4 * (i + 4)), sumi);
    }
    return (h2f(b.d) * h2f(y.d)) * static_cast<float>(sumi);
}

GENIE_HD float dot_unit(const BlockQ5_1& b, int, const BlockQ8_1& y) {
    const uint8_t* yb = reinterpret_cast<const uint8_t*>(y.qs);
    const uint32_t qh = static_cast<uint32_t>(load_b2(b.qh));
    int sumi = 0;
GENIE_UNROLL
    for (int i = 0; i < 4; ++i) {
        const int v = load_b2(b.qs + 4 * i);
        sumi = dp4a((v & 0x0F0F0F0F) | spread_high_bits(qh, 4 * i), load_b4(yb + 4 * (i)), sumi);
        sumi = dp4a(((v >> 4) & 0x0F0F0F0F) | spread_high_bits(qh, 16 + 4 * i), load_b4(yb + 4 * (i + 4)), sumi);
    }
    return (h2f(b.d) * h2f(y.d)) * static_cast<float>(sumi) + h2f(b.m) * h2f(y.s);
}

GENIE_HD float dot_unit(const BlockQ8_0& b, int, const BlockQ8_1& y) {
    const uint8_t* yb = reinterpret_cast<const uint8_t*>(y.qs);
    int sumi = 0;
GENIE_UNROLL
    for (int i = 0; i < 8; ++i) sumi = dp4a(load_b2(reinterpret_cast<const uint8_t*>(b.qs) + 4 * i), load_b4(yb + 4 * (i)), sumi);
    return static_cast<float>(sumi) * (h2f(b.d) * h2f(y.d));
}

/// Q4_K unit j (elements 32j .. 32j+31): x = d*sc*q - dmin*m.
GENIE_HD float dot_unit(const BlockQ4_K& b, int j, const BlockQ8_1& y) {
    const uint8_t* yb = reinterpret_cast<const uint8_t*>(y.qs);
    uint8_t sc, m;
    get_scale_min_k4(j, b.scales, sc, m);
    const uint8_t* q = b.qs + 32 * (j / 2);
    const int shift = (j & 1) * 4;
    int sumi = 0, sumy = 0;
GENIE_UNROLL
    for (int i = 0; i < 8; ++i) {
        sumi = dp4a((load_b4(q + 4 * i) >> shift) & 0x0F0F0F0F, load_b4(yb + 4 * (i)), sumi);
        sumy = dp4a(0x01010101, load_b4(yb + 4 * (i)), sumy);
    }
    return h2f(y.d) * (h2f(b.d) * static_cast<float>(sc) * static_cast<float>(sumi) -
                       h2f(b.dmin) * static_cast<float>(m) * static_cast<float>(sumy));
}

/// Q5_K unit j: Q4_K plus the fifth bit (bit j of qh[l]).
GENIE_HD float dot_unit(const BlockQ5_K& b, int j, const BlockQ8_1& y) {
    const uint8_t* yb = reinterpret_cast<const uint8_t*>(y.qs);
    uint8_t sc, m;
    get_scale_min_k4(j, b.scales, sc, m);
    const uint8_t* q = b.qs + 32 * (j / 2);
    const int shift = (j & 1) * 4;
    int sumi = 0, sumy = 0;
GENIE_UNROLL
    for (int i = 0; i < 8; ++i) {
        const int v = ((load_b4(q + 4 * i) >> shift) & 0x0F0F0F0F) | (((load_b4(b.qh + 4 * i) >> j) & 0x01010101) << 4);
        sumi = dp4a(v, load_b4(yb + 4 * (i)), sumi);
        sumy = dp4a(0x01010101, load_b4(yb + 4 * (i)), sumy);
    }
    return h2f(y.d) * (h2f(b.d) * static_cast<float>(sc) * static_cast<float>(sumi) -
                       h2f(b.dmin) * static_cast<float>(m) * static_cast<float>(sumy));
}

/// Q6_K unit j (half j/4, run j%4): two 16-element scale groups.
GENIE_HD float dot_unit(const BlockQ6_K& b, int j, const BlockQ8_1& y) {
    const uint8_t* yb = reinterpret_cast<const uint8_t*>(y.qs);
    const int half = j / 4, run = j % 4;
    const uint8_t* ql = b.ql + 64 * half + 32 * (run & 1);
    const uint8_t* qh = b.qh + 32 * half;
    const int shift_l = run >= 2 ? 4 : 0, shift_h = 2 * run;
    int sumi0 = 0, sumi1 = 0;
GENIE_UNROLL
    for (int i = 0; i < 8; ++i) {
        const int lo = (load_b2(ql + 4 * i) >> shift_l) & 0x0F0F0F0F;
        const int hi = ((load_b2(qh + 4 * i) >> shift_h) & 0x03030303) << 4;
        const int v = (vsub4(lo | hi, 0x20202020));
        if (i < 4) sumi0 = dp4a(v, load_b4(yb + 4 * (i)), sumi0);
        else sumi1 = dp4a(v, load_b4(yb + 4 * (i)), sumi1);
    }
    const int isum = b.scales[2 * j] * sumi0 + b.scales[2 * j + 1] * sumi1;
    return h2f(b.d) * h2f(y.d) * static_cast<float>(isum);
}


}  // namespace genie::cuda::kernels
