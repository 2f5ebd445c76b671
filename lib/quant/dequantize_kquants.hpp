// Reference dequantization of the k-quant super-block formats (Q2_K ... Q8_K),
// bit-exact with ggml's dequantize_row_q*_K reference code.
//
// As for the legacy formats, the primitive is the per-element function
// `dequantize_<type>_value(block, i)` (i in 0..255). ggml first forms a group
// scale (e.g. d1 = d * sc) and a group offset (m1 = dmin * m) and then computes
// d1 * q - m1; we compute the very same products in the same order per element,
// so the result does not depend on whether a caller works per block or per element.
#pragma once

#include "core/fp16.hpp"
#include "core/hd.hpp"
#include "quant/blocks.hpp"
#include "quant/exact_math.hpp"

#include <cstdint>

namespace genie::quant {

/// Unpacks the 6-bit scale and min of group j (0..7) from the 12 packed bytes of
/// a Q4_K/Q5_K block (ggml's get_scale_min_k4):
///   bytes 0..3:  scale j (j < 4) in bits 0..5; bits 6..7 = top bits of scale j+4
///   bytes 4..7:  min j   (j < 4) in bits 0..5; bits 6..7 = top bits of min j+4
///   bytes 8..11: low nibble = low 4 bits of scale j+4, high nibble = of min j+4
GENIE_HD void get_scale_min_k4(int j, const uint8_t* packed, uint8_t& scale, uint8_t& min) {
    if (j < 4) {
        scale = static_cast<uint8_t>(packed[j] & 63);
        min = static_cast<uint8_t>(packed[j + 4] & 63);
    } else {
        scale = static_cast<uint8_t>((packed[j + 4] & 0x0F) | ((packed[j - 4] >> 6) << 4));
        min = static_cast<uint8_t>((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4));
    }
}

/// The 2-bit field of element i in a Q2_K/Q3_K qs array: each 128-element half
/// uses 32 bytes, and the four 32-element runs of a half sit at bit shifts 0, 2, 4, 6.
GENIE_HD int two_bits_of_256(const uint8_t* qs, int i) {
    return (qs[32 * (i / 128) + i % 32] >> (2 * ((i % 128) / 32))) & 3;
}

/// The signed 6-bit scale k (0..15) of a Q3_K block, already minus 32.
GENIE_HD int q3_k_scale(const uint8_t* packed, int k) {
    const int low = k < 8 ? (packed[k] & 0x0F) : (packed[k - 8] >> 4);
    const int high = (packed[8 + k % 4] >> (2 * (k / 4))) & 3;
    return (low | (high << 4)) - 32;
}

GENIE_HD float dequantize_q2_k_value(const BlockQ2_K& block, int i) {
    const float d = fp16_to_fp32(block.d);
    const float dmin = fp16_to_fp32(block.dmin);
    const uint8_t sc = block.scales[i / 16];
    const float group_scale = d * static_cast<float>(sc & 0x0F);
    const float group_min = dmin * static_cast<float>(sc >> 4);
    return mul_sub_rounded(group_scale, static_cast<float>(two_bits_of_256(block.qs, i)), group_min);
}

GENIE_HD float dequantize_q3_k_value(const BlockQ3_K& block, int i) {
    const float d = fp16_to_fp32(block.d);
    const float group_scale = d * static_cast<float>(q3_k_scale(block.scales, i / 16));
    // A clear high bit means "subtract 4": q is in -4..3.
    const bool high = (block.hmask[i % 32] >> (i / 32)) & 1;
    const int q = two_bits_of_256(block.qs, i) - (high ? 0 : 4);
    return group_scale * static_cast<float>(q);
}

/// The 4-bit field of element i in a Q4_K/Q5_K qs array: each 64-element chunk
/// uses 32 bytes, low nibbles for its first 32 elements, high nibbles for the rest.
GENIE_HD int nibble_of_256(const uint8_t* qs, int i) {
    const uint8_t byte = qs[32 * (i / 64) + i % 32];
    return ((i / 32) & 1) ? (byte >> 4) : (byte & 0x0F);
}

GENIE_HD float dequantize_q4_k_value(const BlockQ4_K& block, int i) {
    const float d = fp16_to_fp32(block.d);
    const float dmin = fp16_to_fp32(block.dmin);
    uint8_t sc, m;
    get_scale_min_k4(i / 32, block.scales, sc, m);
    const float group_scale = d * static_cast<float>(sc);
    const float group_min = dmin * static_cast<float>(m);
    return mul_sub_rounded(group_scale, static_cast<float>(nibble_of_256(block.qs, i)), group_min);
}

GENIE_HD float dequantize_q5_k_value(const BlockQ5_K& block, int i) {
    const float d = fp16_to_fp32(block.d);
    const float dmin = fp16_to_fp32(block.dmin);
    uint8_t sc, m;
    get_scale_min_k4(i / 32, block.scales, sc, m);
    const float group_scale = d * static_cast<float>(sc);
    const float group_min = dmin * static_cast<float>(m);
    const int high = (block.qh[i % 32] >> (i / 32)) & 1;
    const int q = nibble_of_256(block.qs, i) + (high ? 16 : 0);
    return mul_sub_rounded(group_scale, static_cast<float>(q), group_min);
}

GENIE_HD float dequantize_q6_k_value(const BlockQ6_K& block, int i) {
    // Each 128-element half uses 64 ql bytes and 32 qh bytes. Its four 32-element
    // runs r = 0..3 take the low (r < 2) or high (r >= 2) nibble of
    // ql[l + 32*(r & 1)] and bits 2r..2r+1 of qh[l], l = i % 32.
    const int half = i / 128;
    const int run = (i % 128) / 32;
    const int l = i % 32;
    const uint8_t low_byte = block.ql[64 * half + l + 32 * (run & 1)];
    const int low = run < 2 ? (low_byte & 0x0F) : (low_byte >> 4);
    const int high = (block.qh[32 * half + l] >> (2 * run)) & 3;
    const int q = (low | (high << 4)) - 32;
    const float d = fp16_to_fp32(block.d);
    return d * static_cast<float>(block.scales[i / 16]) * static_cast<float>(q);
}

GENIE_HD float dequantize_q8_k_value(const BlockQ8_K& block, int i) {
    return block.d * static_cast<float>(block.qs[i]);
}

/// Per-block forms: write the super-block's 256 values to out[0..255].
GENIE_HD void dequantize_block(const BlockQ2_K& block, float* out) {
    for (int i = 0; i < kQK_K; ++i) out[i] = dequantize_q2_k_value(block, i);
}
GENIE_HD void dequantize_block(const BlockQ3_K& block, float* out) {
    for (int i = 0; i < kQK_K; ++i) out[i] = dequantize_q3_k_value(block, i);
}
GENIE_HD void dequantize_block(const BlockQ4_K& block, float* out) {
    for (int i = 0; i < kQK_K; ++i) out[i] = dequantize_q4_k_value(block, i);
}
GENIE_HD void dequantize_block(const BlockQ5_K& block, float* out) {
    for (int i = 0; i < kQK_K; ++i) out[i] = dequantize_q5_k_value(block, i);
}
GENIE_HD void dequantize_block(const BlockQ6_K& block, float* out) {
    for (int i = 0; i < kQK_K; ++i) out[i] = dequantize_q6_k_value(block, i);
}
GENIE_HD void dequantize_block(const BlockQ8_K& block, float* out) {
    for (int i = 0; i < kQK_K; ++i) out[i] = dequantize_q8_k_value(block, i);
}

}  // namespace genie::quant
