// Reference dot products of one weight row segment with activations that were already
// quantized to the weight's ggml vec_dot_type (see vec_dot_type()). Each function
// follows the arithmetic of ggml-cpu's *_generic / scalar function of the same name:
// integer sums within a block, then the float scale products, float accumulation across
// blocks in the same order (the k-quants keep ggml's 8 float lanes), so a result is
// bit-identical to ggml's generic build. F32/F16/BF16 products are accumulated in double
// as ggml_vec_dot_f32/_f16/_bf16 do without SIMD.
//
// These are the oracle of the SIMD kernels in lib/backend/cpu/kernels/ (which differ
// only in the float summation order). n is the number of elements (a multiple of the
// weight type's block size).
#pragma once

#include "core/fp16.hpp"
#include "core/hd.hpp"
#include "quant/blocks.hpp"

#include <genie/types.hpp>

#include <cstdint>
#include <cstring>

namespace genie::quant {

/// The representation ggml converts activations to before a dot product with a
/// weight of `weight` type (ggml-cpu's type_traits vec_dot_type).
constexpr DType vec_dot_type(DType weight) noexcept {
    switch (weight) {
        case DType::F32: return DType::F32;
        case DType::F16: return DType::F16;
        case DType::BF16: return DType::BF16;
        case DType::Q4_0: case DType::Q5_0: case DType::Q8_0: case DType::IQ4_NL: return DType::Q8_0;
        case DType::Q4_1: case DType::Q5_1: return DType::Q8_1;
        default: return DType::Q8_K;  // k-quants and i-quants
    }
}

/// True if vec_dot() has a reference dot product for weights of `type`.
bool can_vec_dot(DType type) noexcept;

/// Dot product of n elements: `x` is a weight row of `type`, `y` the activations as
/// vec_dot_type(type). Throws genie::Error (Unsupported) if !can_vec_dot(type).
float vec_dot(DType type, int64_t n, const void* x, const void* y);

// ---- legacy formats x Q8_0 / Q8_1 ----------------------------------------------------

GENIE_HD float vec_dot_q4_0_q8_0(int64_t n, const BlockQ4_0* x, const BlockQ8_0* y) {
    float sumf = 0.0f;
    for (int64_t ib = 0; ib < n / kBlockSize32; ++ib) {
        int sumi0 = 0, sumi1 = 0;
        for (int j = 0; j < kBlockSize32 / 2; ++j) {
            sumi0 += ((x[ib].qs[j] & 0x0F) - 8) * y[ib].qs[j];
            sumi1 += ((x[ib].qs[j] >> 4) - 8) * y[ib].qs[j + kBlockSize32 / 2];
        }
        const int sumi = sumi0 + sumi1;
        sumf += static_cast<float>(sumi) * fp16_to_fp32(x[ib].d) * fp16_to_fp32(y[ib].d);
    }
    return sumf;
}

GENIE_HD float vec_dot_q4_1_q8_1(int64_t n, const BlockQ4_1* x, const BlockQ8_1* y) {
    float sumf = 0.0f;
    for (int64_t ib = 0; ib < n / kBlockSize32; ++ib) {
        int sumi0 = 0, sumi1 = 0;
        for (int j = 0; j < kBlockSize32 / 2; ++j) {
            sumi0 += (x[ib].qs[j] & 0x0F) * y[ib].qs[j];
            sumi1 += (x[ib].qs[j] >> 4) * y[ib].qs[j + kBlockSize32 / 2];
        }
        const int sumi = sumi0 + sumi1;
        sumf += (fp16_to_fp32(x[ib].d) * fp16_to_fp32(y[ib].d)) * static_cast<float>(sumi) +
                fp16_to_fp32(x[ib].m) * fp16_to_fp32(y[ib].s);
    }
    return sumf;
}

GENIE_HD uint32_t load_qh32(const uint8_t* qh) {
    return static_cast<uint32_t>(qh[0]) | static_cast<uint32_t>(qh[1]) << 8 | static_cast<uint32_t>(qh[2]) << 16 |
           static_cast<uint32_t>(qh[3]) << 24;
}

GENIE_HD float vec_dot_q5_0_q8_0(int64_t n, const BlockQ5_0* x, const BlockQ8_0* y) {
    float sumf = 0.0f;
    for (int64_t ib = 0; ib < n / kBlockSize32; ++ib) {
        const uint32_t qh = load_qh32(x[ib].qh);
        int sumi0 = 0, sumi1 = 0;
        for (int j = 0; j < kBlockSize32 / 2; ++j) {
            const int x0 = static_cast<int>((x[ib].qs[j] & 0x0F) | ((qh >> j) & 1u) << 4) - 16;
            const int x1 = static_cast<int>((x[ib].qs[j] >> 4) | ((qh >> (j + 16)) & 1u) << 4) - 16;
            sumi0 += x0 * y[ib].qs[j];
            sumi1 += x1 * y[ib].qs[j + kBlockSize32 / 2];
        }
        const int sumi = sumi0 + sumi1;
        sumf += (fp16_to_fp32(x[ib].d) * fp16_to_fp32(y[ib].d)) * static_cast<float>(sumi);
    }
    return sumf;
}

GENIE_HD float vec_dot_q5_1_q8_1(int64_t n, const BlockQ5_1* x, const BlockQ8_1* y) {
    float sumf = 0.0f;
    for (int64_t ib = 0; ib < n / kBlockSize32; ++ib) {
        const uint32_t qh = load_qh32(x[ib].qh);
        int sumi0 = 0, sumi1 = 0;
        for (int j = 0; j < kBlockSize32 / 2; ++j) {
            const int x0 = static_cast<int>((x[ib].qs[j] & 0x0F) | ((qh >> j) & 1u) << 4);
            const int x1 = static_cast<int>((x[ib].qs[j] >> 4) | ((qh >> (j + 16)) & 1u) << 4);
            sumi0 += x0 * y[ib].qs[j];
            sumi1 += x1 * y[ib].qs[j + kBlockSize32 / 2];
        }
        const int sumi = sumi0 + sumi1;
        sumf += (fp16_to_fp32(x[ib].d) * fp16_to_fp32(y[ib].d)) * static_cast<float>(sumi) +
                fp16_to_fp32(x[ib].m) * fp16_to_fp32(y[ib].s);
    }
    return sumf;
}

GENIE_HD float vec_dot_q8_0_q8_0(int64_t n, const BlockQ8_0* x, const BlockQ8_0* y) {
    float sumf = 0.0f;
    for (int64_t ib = 0; ib < n / kBlockSize32; ++ib) {
        int sumi = 0;
        for (int j = 0; j < kBlockSize32; ++j) sumi += x[ib].qs[j] * y[ib].qs[j];
        sumf += static_cast<float>(sumi) * (fp16_to_fp32(x[ib].d) * fp16_to_fp32(y[ib].d));
    }
    return sumf;
}

// ---- k-quants x Q8_K -------------------------------------------------------------------

GENIE_HD float vec_dot_q2_k_q8_k(int64_t n, const BlockQ2_K* x, const BlockQ8_K* y) {
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        const uint8_t* q2 = x[i].qs;
        const int8_t* q8 = y[i].qs;
        const uint8_t* sc = x[i].scales;
        int summs = 0;
        for (int j = 0; j < 16; ++j) summs += y[i].bsums[j] * (sc[j] >> 4);
        const float dall = y[i].d * fp16_to_fp32(x[i].d);
        const float dmin = y[i].d * fp16_to_fp32(x[i].dmin);
        int isum = 0, is = 0;
        for (int k = 0; k < kQK_K / 128; ++k) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int half = 0; half < 2; ++half) {
                    const int d = sc[is++] & 0xF;
                    int isuml = 0;
                    for (int l = 16 * half; l < 16 * half + 16; ++l) isuml += q8[l] * ((q2[l] >> shift) & 3);
                    isum += d * isuml;
                }
                q8 += 32;
            }
            q2 += 32;
        }
        sumf += dall * static_cast<float>(isum) - dmin * static_cast<float>(summs);
    }
    return sumf;
}

/// The 16 signed 6-bit scales of a Q3_K block, minus 32.
GENIE_HD void q3_k_scales(const uint8_t* packed, int8_t* out) {
    for (int j = 0; j < 16; ++j) {
        const int low = j < 8 ? packed[j] & 0x0F : packed[j - 8] >> 4;
        const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
        out[j] = static_cast<int8_t>((low | high << 4) - 32);
    }
}

/// Q8_K x {Q3_K, Q4_K, Q5_K, Q6_K}: the integer products of one super-block are summed
/// in 8 int32 lanes (lane = element index mod 8), scaled per 16 or 32 elements.
GENIE_HD float vec_dot_q3_k_q8_k(int64_t n, const BlockQ3_K* x, const BlockQ8_K* y) {
    float sums[8] = {};
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        int8_t a[kQK_K];
        for (int e = 0; e < kQK_K; ++e) {
            const int half = e / 128, run = (e % 128) / 32, l = e % 32;
            const int low = (x[i].qs[32 * half + l] >> (2 * run)) & 3;
            const bool high = (x[i].hmask[l] >> (e / 32)) & 1;
            a[e] = static_cast<int8_t>(low - (high ? 0 : 4));
        }
        int8_t scales[16];
        q3_k_scales(x[i].scales, scales);
        int32_t aux32[8] = {};
        for (int e = 0; e < kQK_K; ++e) aux32[e % 8] += scales[e / 16] * static_cast<int16_t>(y[i].qs[e] * a[e]);
        const float d = fp16_to_fp32(x[i].d) * y[i].d;
        for (int l = 0; l < 8; ++l) sums[l] += d * static_cast<float>(aux32[l]);
    }
    float sumf = 0.0f;
    for (int l = 0; l < 8; ++l) sumf += sums[l];
    return sumf;
}

/// Scales and mins of a Q4_K/Q5_K block, as 8 + 8 bytes (ggml's utmp unpacking).
GENIE_HD void k4_scales_mins(const uint8_t* packed, uint8_t* scales, uint8_t* mins) {
    for (int j = 0; j < 8; ++j) {
        if (j < 4) {
            scales[j] = static_cast<uint8_t>(packed[j] & 63);
            mins[j] = static_cast<uint8_t>(packed[j + 4] & 63);
        } else {
            scales[j] = static_cast<uint8_t>((packed[j + 4] & 0x0F) | ((packed[j - 4] >> 6) << 4));
            mins[j] = static_cast<uint8_t>((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4));
        }
    }
}

template <bool kHighBit, class Block>
GENIE_HD float vec_dot_q45_k_q8_k(int64_t n, const Block* x, const BlockQ8_K* y, const uint8_t* (*qh_of)(const Block&)) {
    float sums[8] = {};
    float sumf = 0.0f;
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        int8_t a[kQK_K];
        for (int e = 0; e < kQK_K; ++e) {
            const int q = x[i].qs[32 * (e / 64) + e % 32];
            int v = (e / 32) % 2 == 0 ? (q & 0x0F) : (q >> 4);
            if (kHighBit) v += ((qh_of(x[i])[e % 32] >> (e / 32)) & 1) ? 16 : 0;
            a[e] = static_cast<int8_t>(v);
        }
        uint8_t scales[8], mins[8];
        k4_scales_mins(x[i].scales, scales, mins);
        int sumi = 0;
        for (int j = 0; j < kQK_K / 16; ++j) sumi += y[i].bsums[j] * mins[j / 2];
        int32_t aux32[8] = {};
        for (int e = 0; e < kQK_K; ++e)
            aux32[e % 8] += static_cast<int32_t>(scales[e / 32]) * static_cast<int16_t>(y[i].qs[e] * a[e]);
        const float d = fp16_to_fp32(x[i].d) * y[i].d;
        for (int l = 0; l < 8; ++l) sums[l] += d * static_cast<float>(aux32[l]);
        const float dmin = fp16_to_fp32(x[i].dmin) * y[i].d;
        sumf -= dmin * static_cast<float>(sumi);
    }
    for (int l = 0; l < 8; ++l) sumf += sums[l];
    return sumf;
}

GENIE_HD const uint8_t* q4_k_no_qh(const BlockQ4_K&) { return nullptr; }
GENIE_HD const uint8_t* q5_k_qh(const BlockQ5_K& b) { return b.qh; }

GENIE_HD float vec_dot_q4_k_q8_k(int64_t n, const BlockQ4_K* x, const BlockQ8_K* y) {
    return vec_dot_q45_k_q8_k<false>(n, x, y, q4_k_no_qh);
}
GENIE_HD float vec_dot_q5_k_q8_k(int64_t n, const BlockQ5_K* x, const BlockQ8_K* y) {
    return vec_dot_q45_k_q8_k<true>(n, x, y, q5_k_qh);
}

/// The 6-bit value (0..63, before subtracting 32) of element e of a Q6_K block.
GENIE_HD int q6_k_value(const BlockQ6_K& b, int e) {
    const int half = e / 128, r = e % 128, quarter = r / 32, l = r % 32;
    const uint8_t ql = b.ql[64 * half + l + (quarter % 2) * 32];
    const int low = quarter < 2 ? (ql & 0x0F) : (ql >> 4);
    const int high = (b.qh[32 * half + l] >> (2 * quarter)) & 3;
    return low | high << 4;
}

GENIE_HD float vec_dot_q6_k_q8_k(int64_t n, const BlockQ6_K* x, const BlockQ8_K* y) {
    float sums[8] = {};
    for (int64_t i = 0; i < n / kQK_K; ++i) {
        int32_t aux32[8] = {};
        for (int e = 0; e < kQK_K; ++e) {
            const int a = q6_k_value(x[i], e) - 32;
            aux32[e % 8] += x[i].scales[e / 16] * static_cast<int16_t>(y[i].qs[e] * a);
        }
        const float d = fp16_to_fp32(x[i].d) * y[i].d;
        for (int l = 0; l < 8; ++l) sums[l] += d * static_cast<float>(aux32[l]);
    }
    float sumf = 0.0f;
    for (int l = 0; l < 8; ++l) sumf += sums[l];
    return sumf;
}

// ---- plain formats ----------------------------------------------------------------------

GENIE_HD float vec_dot_f32(int64_t n, const float* x, const float* y) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * y[i]);
    return static_cast<float>(sum);
}

GENIE_HD float vec_dot_f16(int64_t n, const uint16_t* x, const uint16_t* y) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(fp16_to_fp32(x[i]) * fp16_to_fp32(y[i]));
    return static_cast<float>(sum);
}

GENIE_HD float vec_dot_bf16(int64_t n, const uint16_t* x, const uint16_t* y) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(bf16_to_fp32(x[i]) * bf16_to_fp32(y[i]));
    return static_cast<float>(sum);
}

}  // namespace genie::quant
