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

/// The same for several weights that share the input x: when they share one activation
/// format x is quantized once, and all their output rows are split over the threads in
/// one dispatch (one barrier instead of one per weight). Otherwise one matmul each.
void matmul_shared_input(ThreadPool& pool, const Tensor& x, std::span<const Backend::MatmulOut> outs);

/// The reference: dequantize each weight row, dot in double (the previous oracle).
void matmul_reference(ThreadPool& pool, const Weight& w, const Tensor& x, Tensor& y);

}  // namespace genie::backend::cpu
