// cuBLAS, loaded on first use with dlopen (libcublas.so.<major of the toolkit built
// with>), so that libgenie has no link-time dependency on it: a binary built with CUDA
// still starts (and runs on the CPU) where only the driver, or nothing, is installed, as
// with the statically linked CUDA runtime. Without cuBLAS the backend's prefill falls
// back to the mat-vec kernels in groups of 8 rows (slower, same numerics as decode).
#pragma once

#include <cublas_v2.h>

#include <string>

namespace genie::cuda {

struct CublasApi {
    bool loaded = false;
    std::string error;  ///< why not loaded
    decltype(&cublasCreate_v2) create = nullptr;
    decltype(&cublasDestroy_v2) destroy = nullptr;
    decltype(&cublasSetStream_v2) set_stream = nullptr;
    decltype(&cublasSgemm_v2) sgemm = nullptr;
    /// The C entry point cublasGemmEx (the header also declares a C++ overload).
    using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                        const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                        cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
    GemmExFn gemm_ex = nullptr;
    decltype(&cublasGetStatusName) status_name = nullptr;
    decltype(&cublasGetStatusString) status_string = nullptr;
};

/// The process-wide cuBLAS entry points (loaded once, thread-safe).
const CublasApi& cublas_api();

}  // namespace genie::cuda
