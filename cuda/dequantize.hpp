// Device-side dequantization of tensor rows, using the GENIE_HD reference
// functions of lib/quant/dequantize.hpp (bit-identical with the CPU path).
#pragma once

#include <genie/types.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>

namespace genie::cuda {

/// True if dequantize_rows() handles `type` (the same set as quant::can_dequantize).
bool can_dequantize(DType type) noexcept;

/// Dequantizes n_elements values of `type` from device memory `device_src` to
/// floats at `device_dst`, asynchronously on `stream`. n_elements must be a
/// multiple of the type's block size; `device_src` must be aligned to the block
/// struct (cudaMalloc memory is). Rows of one tensor are contiguous, so a whole
/// tensor is one call. Throws genie::Error: Unsupported for a type without a
/// dequantizer, InvalidArgument for a bad n_elements, Device if the launch fails.
void dequantize_rows(DType type, const void* device_src, float* device_dst, int64_t n_elements,
                     cudaStream_t stream);

}  // namespace genie::cuda
