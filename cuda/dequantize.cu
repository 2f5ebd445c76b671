// Dequantization kernel: one thread per output element, each calling the same
// per-element GENIE_HD function (quant/dequantize.hpp) that the CPU row API uses.
// Consecutive threads write consecutive floats, so stores are coalesced; the
// block struct is re-read from global memory per element (served by L1/L2).
#include "cuda/dequantize.hpp"

#include <genie/error.hpp>

#include "quant/dequantize.hpp"

#include <string>

namespace genie::cuda {
namespace {

constexpr int kThreadsPerBlock = 256;
// Cap the grid; the kernel strides over the rest.
constexpr int64_t kMaxGridBlocks = 65535;

template <typename Block>
__global__ void dequantize_kernel(const Block* __restrict__ blocks, float* __restrict__ out, int64_t n_elements) {
    constexpr int elements = quant::BlockTraits<Block>::elements;
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n_elements; i += stride) {
        out[i] = quant::dequantize_value(blocks[i / elements], static_cast<int>(i % elements));
    }
}

std::string type_name(DType type) { return std::string(dtype_name(type)); }

}  // namespace

bool can_dequantize(DType type) noexcept {
    return quant::visit_dequantizable(type, [](auto) {});
}

void dequantize_rows(DType type, const void* device_src, float* device_dst, int64_t n_elements,
                     cudaStream_t stream) {
    const DTypeInfo info = dtype_info(type);
    if (!can_dequantize(type))
        throw Error(ErrorCode::Unsupported, "cuda::dequantize_rows: " + type_name(type) + " cannot be dequantized");
    if (n_elements < 0 || n_elements % info.block_size != 0)
        throw Error(ErrorCode::InvalidArgument, "cuda::dequantize_rows: " + std::to_string(n_elements) +
                                                    " elements is not a non-negative multiple of the " +
                                                    type_name(type) + " block size " + std::to_string(info.block_size));
    if (n_elements == 0) return;

    const int64_t needed = (n_elements + kThreadsPerBlock - 1) / kThreadsPerBlock;
    const unsigned grid = static_cast<unsigned>(needed < kMaxGridBlocks ? needed : kMaxGridBlocks);
    quant::visit_dequantizable(type, [&](auto tag) {
        using Block = typename decltype(tag)::type;
        dequantize_kernel<Block><<<grid, kThreadsPerBlock, 0, stream>>>(static_cast<const Block*>(device_src),
                                                                        device_dst, n_elements);
    });
    const cudaError_t status = cudaGetLastError();
    if (status != cudaSuccess)
        throw Error(ErrorCode::Device, "cuda::dequantize_rows: kernel launch for " + type_name(type) +
                                           " failed: " + cudaGetErrorString(status));
}

}  // namespace genie::cuda
