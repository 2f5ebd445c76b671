// Reference quantization (host only), byte-exact with ggml's quantize_row_*_ref:
// the same inputs give the same block bytes as llama.cpp's reference quantizer
// (the one used without an importance matrix).
//
// quantize_block(src, block) reads the block's 32 (legacy) or 256 (k-quant)
// floats from src. Inputs must be finite: as in ggml, NaN or inf give
// meaningless quants.
#pragma once

#include <genie/types.hpp>

#include "quant/blocks.hpp"

namespace genie::quant {

// Legacy formats (quantize_legacy.cpp).
void quantize_block(const float* src, BlockQ4_0& dst);  ///< d = max / -8, q = trunc(x/d + 8.5) clamped to 15
void quantize_block(const float* src, BlockQ4_1& dst);  ///< d = (max - min) / 15, m = min
void quantize_block(const float* src, BlockQ5_0& dst);  ///< d = max / -16
void quantize_block(const float* src, BlockQ5_1& dst);  ///< d = (max - min) / 31, m = min
void quantize_block(const float* src, BlockQ8_0& dst);  ///< d = amax / 127, q = round(x / d)
void quantize_block(const float* src, BlockQ8_1& dst);  ///< Q8_0 plus s = d * sum(q)

// K-quants (quantize_kquants.cpp).
void quantize_block(const float* src, BlockQ2_K& dst);
void quantize_block(const float* src, BlockQ3_K& dst);
void quantize_block(const float* src, BlockQ4_K& dst);
void quantize_block(const float* src, BlockQ5_K& dst);
void quantize_block(const float* src, BlockQ6_K& dst);
/// Q8_K (activations): d = max / -127 (signed max), q = nearest(x / d); an
/// all-zero block gets d = 0 and zero quants and bsums (ggml leaves bsums unset).
void quantize_block(const float* src, BlockQ8_K& dst);

}  // namespace genie::quant
