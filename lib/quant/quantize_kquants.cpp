// Reference quantizers of the k-quant super-blocks, following ggml's
// quantize_row_q{2,3,4,5,6,8}_K_ref operation for operation. Each picks a scale
// (and min) per group with a search from scale_search.hpp, quantizes those group
// scales to 4/6/8 bits against one fp16 super-block scale, and finally
// re-quantizes every element against the scales as they were actually stored.
#include "quant/quantize.hpp"

#include "core/fp16.hpp"
#include "quant/dequantize_kquants.hpp"
#include "quant/scale_search.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace genie::quant {
namespace {

constexpr float kGroupMaxEps = 1e-15f;  // ggml's GROUP_MAX_EPS

int clamp_int(int value, int lo, int hi) { return std::max(lo, std::min(hi, value)); }

// Packs 256 two-bit quants: byte 32*h + l holds elements 128h + l + 32r at bit 2r.
void pack_two_bits(const uint8_t* L, uint8_t* qs) {
    for (int j = 0; j < kQK_K; j += 128)
        for (int l = 0; l < 32; ++l)
            qs[j / 4 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                                 (L[j + l + 96] << 6));
}

// Packs 8 six-bit (scale, min) pairs in the Q4_K/Q5_K layout (see get_scale_min_k4).
void pack_scale_min_k4(const uint8_t* scales, const uint8_t* mins, uint8_t* packed) {
    for (int j = 0; j < kQK_K / 32; ++j) {
        const uint8_t ls = scales[j];
        const uint8_t lm = mins[j];
        if (j < 4) {
            packed[j] = ls;
            packed[j + 4] = lm;
        } else {
            packed[j + 4] = static_cast<uint8_t>((ls & 0x0F) | ((lm & 0x0F) << 4));
            packed[j - 4] = static_cast<uint8_t>(packed[j - 4] | ((ls >> 4) << 6));
            packed[j] = static_cast<uint8_t>(packed[j] | ((lm >> 4) << 6));
        }
    }
}

// Shared by Q4_K (nmax 15) and Q5_K (nmax 31): per-group asymmetric fit with
// make_qkx2_quants, 6-bit group scales/mins, then the final quants L (0..nmax).
void quantize_scale_min_k4(const float* x, int nmax, float rmin, float rdelta, int nstep, uint16_t& d_bits,
                           uint16_t& dmin_bits, uint8_t* packed_scales, uint8_t* L) {
    constexpr int kGroups = kQK_K / 32;
    float scales[kGroups];
    float mins[kGroups];
    float weights[32];
    uint8_t scratch[32];
    float max_scale = 0;  // scales are >= 0 since the min is subtracted
    float max_min = 0;
    for (int j = 0; j < kGroups; ++j) {
        const float* xg = x + 32 * j;
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l) sum_x2 += xg[l] * xg[l];
        const float av_x = std::sqrt(sum_x2 / 32);
        for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xg[l]);
        scales[j] = make_qkx2_quants(32, nmax, xg, weights, L + 32 * j, &mins[j], scratch, rmin, rdelta, nstep, false);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }

    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    uint8_t ls[kGroups];
    uint8_t lm[kGroups];
    for (int j = 0; j < kGroups; ++j) {
        // ggml stores nearest_int() into a uint8_t before clamping to 63.
        ls[j] = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
        lm[j] = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
    }
    pack_scale_min_k4(ls, lm, packed_scales);
    d_bits = fp32_to_fp16(max_scale / 63.f);
    dmin_bits = fp32_to_fp16(max_min / 63.f);

    for (int j = 0; j < kGroups; ++j) {
        uint8_t sc, m;
        get_scale_min_k4(j, packed_scales, sc, m);
        const float d = fp16_to_fp32(d_bits) * static_cast<float>(sc);
        if (d == 0.0f) continue;  // keep the search's quants, as ggml does
        const float dm = fp16_to_fp32(dmin_bits) * static_cast<float>(m);
        for (int ii = 0; ii < 32; ++ii) {
            const int l = nearest_int((x[32 * j + ii] + dm) / d);
            L[32 * j + ii] = static_cast<uint8_t>(clamp_int(l, 0, nmax));
        }
    }
}

}  // namespace

void quantize_block(const float* x, BlockQ2_K& y) {
    constexpr int kGroups = kQK_K / 16;
    constexpr float q4scale = 15.f;
    uint8_t L[kQK_K];
    uint8_t scratch[16];
    float weights[16];
    float mins[kGroups];
    float scales[kGroups];
    float max_scale = 0;
    float max_min = 0;
    for (int j = 0; j < kGroups; ++j) {
        for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
        scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], scratch, -0.5f, 0.1f, 15, true);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }

    // Group scales in the low nibble, group mins in the high nibble.
    if (max_scale > 0) {
        const float iscale = q4scale / max_scale;
        for (int j = 0; j < kGroups; ++j) y.scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
        y.d = fp32_to_fp16(max_scale / q4scale);
    } else {
        std::fill(y.scales, y.scales + kGroups, uint8_t{0});
        y.d = fp32_to_fp16(0.f);
    }
    if (max_min > 0) {
        const float iscale = q4scale / max_min;
        for (int j = 0; j < kGroups; ++j)
            y.scales[j] = static_cast<uint8_t>(y.scales[j] | (nearest_int(iscale * mins[j]) << 4));
        y.dmin = fp32_to_fp16(max_min / q4scale);
    } else {
        y.dmin = fp32_to_fp16(0.f);
    }

    for (int j = 0; j < kGroups; ++j) {
        const float d = fp16_to_fp32(y.d) * static_cast<float>(y.scales[j] & 0x0F);
        if (d == 0.0f) continue;
        const float dm = fp16_to_fp32(y.dmin) * static_cast<float>(y.scales[j] >> 4);
        for (int ii = 0; ii < 16; ++ii) {
            const int l = nearest_int((x[16 * j + ii] + dm) / d);
            L[16 * j + ii] = static_cast<uint8_t>(clamp_int(l, 0, 3));
        }
    }
    pack_two_bits(L, y.qs);
}

void quantize_block(const float* x, BlockQ3_K& y) {
    constexpr int kGroups = kQK_K / 16;
    int8_t L[kQK_K];
    float scales[kGroups];
    float max_scale = 0;  // the signed scale of largest magnitude
    float amax = 0;
    for (int j = 0; j < kGroups; ++j) {
        scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j, true);
        const float scale = std::fabs(scales[j]);
        if (scale > amax) {
            amax = scale;
            max_scale = scales[j];
        }
    }

    // 6-bit group scales (stored +32): low nibbles in scales[0..7], top 2 bits in scales[8..11].
    std::memset(y.scales, 0, sizeof y.scales);
    if (max_scale != 0.0f) {
        const float iscale = -32.f / max_scale;
        for (int j = 0; j < kGroups; ++j) {
            const int8_t nearest = static_cast<int8_t>(nearest_int(iscale * scales[j]));
            const int l = clamp_int(nearest, -32, 31) + 32;
            if (j < 8)
                y.scales[j] = static_cast<uint8_t>(l & 0x0F);
            else
                y.scales[j - 8] = static_cast<uint8_t>(y.scales[j - 8] | ((l & 0x0F) << 4));
            y.scales[j % 4 + 8] = static_cast<uint8_t>(y.scales[j % 4 + 8] | ((l >> 4) << (2 * (j / 4))));
        }
        y.d = fp32_to_fp16(1 / iscale);
    } else {
        y.d = fp32_to_fp16(0.f);
    }

    for (int j = 0; j < kGroups; ++j) {
        const float d = fp16_to_fp32(y.d) * static_cast<float>(q3_k_scale(y.scales, j));
        if (d == 0.0f) continue;
        for (int ii = 0; ii < 16; ++ii) {
            const int l = nearest_int(x[16 * j + ii] / d);
            L[16 * j + ii] = static_cast<int8_t>(clamp_int(l, -4, 3) + 4);
        }
    }

    // Quants are 0..7: bit 2 goes to hmask (element i -> hmask[i % 32] bit i / 32),
    // the low two bits to qs.
    std::memset(y.hmask, 0, sizeof y.hmask);
    uint8_t low[kQK_K];
    for (int i = 0; i < kQK_K; ++i) {
        if (L[i] > 3) y.hmask[i % 32] = static_cast<uint8_t>(y.hmask[i % 32] | (1 << (i / 32)));
        low[i] = static_cast<uint8_t>(L[i] & 3);
    }
    pack_two_bits(low, y.qs);
}

void quantize_block(const float* x, BlockQ4_K& y) {
    uint8_t L[kQK_K];
    quantize_scale_min_k4(x, 15, -1.f, 0.1f, 20, y.d, y.dmin, y.scales, L);
    // Chunk c of 64 elements: byte 32c + l = element 64c + l | element 64c + 32 + l << 4.
    for (int c = 0; c < kQK_K / 64; ++c)
        for (int l = 0; l < 32; ++l)
            y.qs[32 * c + l] = static_cast<uint8_t>(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
}

void quantize_block(const float* x, BlockQ5_K& y) {
    uint8_t L[kQK_K];
    quantize_scale_min_k4(x, 31, -0.5f, 0.1f, 15, y.d, y.dmin, y.scales, L);
    // Low nibbles as in Q4_K; bit 4 of element i goes to qh[i % 32] bit i / 32.
    std::memset(y.qh, 0, sizeof y.qh);
    for (int i = 0; i < kQK_K; ++i)
        if (L[i] > 15) y.qh[i % 32] = static_cast<uint8_t>(y.qh[i % 32] | (1 << (i / 32)));
    for (int c = 0; c < kQK_K / 64; ++c)
        for (int l = 0; l < 32; ++l)
            y.qs[32 * c + l] = static_cast<uint8_t>((L[64 * c + l] & 0x0F) | ((L[64 * c + 32 + l] & 0x0F) << 4));
}

void quantize_block(const float* x, BlockQ6_K& y) {
    constexpr int kGroups = kQK_K / 16;
    int8_t L[kQK_K];
    float scales[kGroups];
    float max_scale = 0;
    float max_abs_scale = 0;
    for (int ib = 0; ib < kGroups; ++ib) {
        const float scale = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, 1, nullptr);
        scales[ib] = scale;
        const float abs_scale = std::fabs(scale);
        if (abs_scale > max_abs_scale) {
            max_abs_scale = abs_scale;
            max_scale = scale;
        }
    }
    if (max_abs_scale < kGroupMaxEps) {
        std::memset(&y, 0, sizeof y);
        return;
    }

    const float iscale = -128.f / max_scale;
    y.d = fp32_to_fp16(1 / iscale);
    for (int ib = 0; ib < kGroups; ++ib)
        y.scales[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));

    for (int j = 0; j < kGroups; ++j) {
        const float d = fp16_to_fp32(y.d) * static_cast<float>(y.scales[j]);
        if (d == 0.0f) continue;
        for (int ii = 0; ii < 16; ++ii) {
            const int l = nearest_int(x[16 * j + ii] / d);
            L[16 * j + ii] = static_cast<int8_t>(clamp_int(l, -32, 31) + 32);
        }
    }

    // Half h (128 elements), run r = 0..3, l = 0..31: element 128h + 32r + l has its
    // low nibble in ql[64h + l + 32*(r & 1)] (low nibble for r < 2, high for r >= 2)
    // and its top 2 bits in qh[32h + l] at bits 2r.
    for (int h = 0; h < 2; ++h) {
        const int8_t* Lh = L + 128 * h;
        uint8_t* ql = y.ql + 64 * h;
        uint8_t* qh = y.qh + 32 * h;
        for (int l = 0; l < 32; ++l) {
            const int q1 = Lh[l], q2 = Lh[l + 32], q3 = Lh[l + 64], q4 = Lh[l + 96];
            ql[l] = static_cast<uint8_t>((q1 & 0x0F) | ((q3 & 0x0F) << 4));
            ql[l + 32] = static_cast<uint8_t>((q2 & 0x0F) | ((q4 & 0x0F) << 4));
            qh[l] = static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
        }
    }
}

void quantize_block(const float* x, BlockQ8_K& y) {
    float max = 0;
    float amax = 0;
    for (int j = 0; j < kQK_K; ++j) {
        const float ax = std::fabs(x[j]);
        if (ax > amax) {
            amax = ax;
            max = x[j];
        }
    }
    if (amax == 0.0f) {
        std::memset(&y, 0, sizeof y);  // ggml leaves bsums unwritten here; we zero them
        return;
    }
    // -127 (not -128) keeps every quant in -127..127, which the IQ dot products rely on.
    const float iscale = -127.f / max;
    for (int j = 0; j < kQK_K; ++j) y.qs[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * x[j])));
    for (int g = 0; g < kQK_K / 16; ++g) {
        int sum = 0;
        for (int i = 0; i < 16; ++i) sum += y.qs[16 * g + i];
        y.bsums[g] = static_cast<int16_t>(sum);
    }
    y.d = 1 / iscale;
}

}  // namespace genie::quant
