#include "cuda/check.hpp"
#include "cuda/cublas_loader.hpp"

#include <genie/error.hpp>

#include <fmt/format.h>

namespace genie::cuda {

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
    (void)cudaGetLastError();  // clear a non-sticky error so the next call starts clean
    const ErrorCode code = status == cudaErrorMemoryAllocation ? ErrorCode::OutOfMemory : ErrorCode::Device;
    throw Error(code, fmt::format("CUDA error {} ({}) in {} at {}:{}", cudaGetErrorName(status),
                                  cudaGetErrorString(status), call, file, line));
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
    const ErrorCode code = status == CUBLAS_STATUS_ALLOC_FAILED ? ErrorCode::OutOfMemory : ErrorCode::Device;
    const CublasApi& api = cublas_api();
    throw Error(code, fmt::format("cuBLAS error {} ({}) in {} at {}:{}",
                                  api.status_name ? api.status_name(status) : std::to_string(static_cast<int>(status)).c_str(),
                                  api.status_string ? api.status_string(status) : "", call, file, line));
}

}  // namespace genie::cuda
