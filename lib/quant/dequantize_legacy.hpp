// Reference dequantization of the 32-element "legacy" formats (Q4_0, Q4_1,
// Q5_0, Q5_1, Q8_0), bit-exact with ggml's dequantize_row_* reference code.
//
// The primitive is a per-element function `dequantize_<type>_value(block, i)`
// (i in 0..31) so that a CUDA kernel can give each thread one element; the
// per-block functions loop over it. Each value is computed with exactly ggml's
// operations and operand order: an integer quant converted to float (exact),
// times the scale, plus the offset as a separately rounded add.
#pragma once

#include "core/fp16.hpp"
#include "core/hd.hpp"
#include "quant/blocks.hpp"
#include "quant/exact_math.hpp"

#include <cstdint>

namespace genie::quant {

/// The 4-bit quant of element i: element j < 16 is the low nibble of qs[j],
/// element j + 16 the high nibble of the same byte.
GENIE_HD int nibble_of_32(const uint8_t* qs, int i) {
    return i < 16 ? (qs[i] & 0x0F) : (qs[i - 16] >> 4);
}

/// Bit i of a Q5 block's qh (a little-endian uint32 stored as 4 bytes).
GENIE_HD int high_bit_of_32(const uint8_t* qh, int i) { return (qh[i >> 3] >> (i & 7)) & 1; }

GENIE_HD float dequantize_q4_0_value(const BlockQ4_0& block, int i) {
    const float d = fp16_to_fp32(block.d);
    return static_cast<float>(nibble_of_32(block.qs, i) - 8) * d;
}

GENIE_HD float dequantize_q4_1_value(const BlockQ4_1& block, int i) {
    const float d = fp16_to_fp32(block.d);
    const float m = fp16_to_fp32(block.m);
    return mul_add_rounded(static_cast<float>(nibble_of_32(block.qs, i)), d, m);
}

GENIE_HD float dequantize_q5_0_value(const BlockQ5_0& block, int i) {
    const float d = fp16_to_fp32(block.d);
    const int q = nibble_of_32(block.qs, i) | (high_bit_of_32(block.qh, i) << 4);
    return static_cast<float>(q - 16) * d;
}

GENIE_HD float dequantize_q5_1_value(const BlockQ5_1& block, int i) {
    const float d = fp16_to_fp32(block.d);
    const float m = fp16_to_fp32(block.m);
    const int q = nibble_of_32(block.qs, i) | (high_bit_of_32(block.qh, i) << 4);
    return mul_add_rounded(static_cast<float>(q), d, m);
}

GENIE_HD float dequantize_q8_0_value(const BlockQ8_0& block, int i) {
    return static_cast<float>(block.qs[i]) * fp16_to_fp32(block.d);
}

/// Per-block forms: write the block's 32 values to out[0..31].
GENIE_HD void dequantize_block(const BlockQ4_0& block, float* out) {
    for (int i = 0; i < kBlockSize32; ++i) out[i] = dequantize_q4_0_value(block, i);
}
GENIE_HD void dequantize_block(const BlockQ4_1& block, float* out) {
    for (int i = 0; i < kBlockSize32; ++i) out[i] = dequantize_q4_1_value(block, i);
}
GENIE_HD void dequantize_block(const BlockQ5_0& block, float* out) {
    for (int i = 0; i < kBlockSize32; ++i) out[i] = dequantize_q5_0_value(block, i);
}
GENIE_HD void dequantize_block(const BlockQ5_1& block, float* out) {
    for (int i = 0; i < kBlockSize32; ++i) out[i] = dequantize_q5_1_value(block, i);
}
GENIE_HD void dequantize_block(const BlockQ8_0& block, float* out) {
    for (int i = 0; i < kBlockSize32; ++i) out[i] = dequantize_q8_0_value(block, i);
}

}  // namespace genie::quant
