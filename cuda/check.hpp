// Error checks for every CUDA runtime and cuBLAS call: a failure becomes a
// genie::Error naming the call, the file and the line (never abort()/exit()).
// cudaErrorMemoryAllocation is OutOfMemory; everything else is Device.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace genie::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line);

}  // namespace genie::cuda

#define GENIE_CUDA_CHECK(call)                                                                  \
    do {                                                                                        \
        const cudaError_t genie_cuda_status_ = (call);                                          \
        if (genie_cuda_status_ != cudaSuccess)                                                  \
            ::genie::cuda::throw_cuda_error(genie_cuda_status_, #call, __FILE__, __LINE__);     \
    } while (0)

#define GENIE_CUBLAS_CHECK(call)                                                                \
    do {                                                                                        \
        const cublasStatus_t genie_cublas_status_ = (call);                                     \
        if (genie_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                      \
            ::genie::cuda::throw_cublas_error(genie_cublas_status_, #call, __FILE__, __LINE__); \
    } while (0)

/// After a kernel launch: reports a bad launch configuration (asynchronous faults
/// surface at the next synchronizing call, which is checked too).
#define GENIE_CUDA_CHECK_LAUNCH(kernel_name) GENIE_CUDA_CHECK(cudaGetLastError())
