// Row-level quantization API: converts between float rows and rows of any
// supported tensor type (plain F32/F16/BF16 or a block-quantized format).
// Thread-safe (no shared state). Host only; cuda/ has the device counterpart.
#pragma once

#include <genie/types.hpp>

#include <cstddef>
#include <cstdint>

namespace genie::quant {

/// True if dequantize_row() handles `type`.
bool can_dequantize(DType type) noexcept;

/// True if quantize_row() handles `type`.
bool can_quantize(DType type) noexcept;

/// Bytes taken by a row of `n` elements of `type`. Throws genie::Error
/// (InvalidArgument) if n is negative or not a multiple of the type's block size,
/// (Unsupported) if the type id is unknown.
size_t row_bytes(DType type, int64_t n);

/// Converts n elements from `src` (row_bytes(type, n) bytes of `type`) to floats
/// in `dst`. `src` must be aligned to its block struct (2 bytes; 4 for Q8_K and F32).
/// Throws genie::Error: Unsupported if !can_dequantize(type), InvalidArgument if n
/// is negative or not a multiple of the block size.
void dequantize_row(DType type, const void* src, float* dst, int64_t n);

/// Converts n floats from `src` to `type` in `dst` (row_bytes(type, n) bytes),
/// byte-exact with ggml's reference quantizers (F16/BF16: round to nearest even).
/// Throws genie::Error: Unsupported if !can_quantize(type), InvalidArgument if n
/// is negative or not a multiple of the block size.
void quantize_row(DType type, const float* src, void* dst, int64_t n);

}  // namespace genie::quant
