// GENIE_HD marks inline functions that compile for both host and CUDA device code.
// The per-block quant math lives in such functions so that cuda/ runs exactly the
// code that the CPU unit tests verify.
#pragma once

#if defined(__CUDACC__)
#  define GENIE_HD __host__ __device__ __forceinline__
#else
#  define GENIE_HD inline
#endif
