// The CPU matrix multiplication y = x W^T with ggml's arithmetic: each activation row
// is quantized once to the weight's vec_dot_type, then every output is an integer-block
// dot product computed by the ISA-dispatched kernels of backend/cpu/kernels/.
#pragma once

#include "backend/backend.hpp"
#include "core/thread_pool.hpp"

namespace genie::backend::cpu {

/// y[r] = W x[r] for every row r of x, output rows split across `pool`'s threads.
/// Decode (one row) uses the kernels' dot tiles; prefill walks activation rows in
/// cache-sized panels with micro-tiles that reuse each weight block for several rows.
/// Weights are read in place (no repacking). The activation scratch is per calling
/// thread and reused across calls.
void matmul(ThreadPool& pool, const Weight& w, const Tensor& x, Tensor& y);

/// The reference: dequantize each weight row, dot in double (the previous oracle).
void matmul_reference(ThreadPool& pool, const Weight& w, const Tensor& x, Tensor& y);

}  // namespace genie::backend::cpu
