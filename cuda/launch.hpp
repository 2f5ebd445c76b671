// Host-callable launchers of the CUDA backend's kernels (kernels.cu). Plain C++ so the
// host side (backend.cpp) is compiled by the C++ compiler. Every launcher only queues
// work on `stream`: the caller checks cudaGetLastError() after it. Launchers taking a
// DType return false (launching nothing) for a type they do not handle.
#pragma once

#include <genie/types.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace genie::cuda::launch {

/// Activation rows up to which matmul runs the mat-vec kernels (decode); above, cuBLAS.
constexpr int kMaxVecCols = 8;
/// Threads of an attention block = KV cells per tile; head sizes up to twice this.
constexpr int kAttnThreads = 128;

struct RopeArgs {
    int n_heads, head_dim, first_pos, n_rot;
    float theta_scale, freq_scale, ext_factor, attn_factor, corr0, corr1;
    const float* freq_factors;  ///< device, [n_rot / 2] or null
};

/// Weight types with an int8 (dp4a) mat-vec kernel.
bool has_mmvq(DType type) noexcept;
/// Bytes of the Q8_1 activations of `rows` rows of n_in values.
size_t q8_1_bytes(int64_t rows, int64_t n_in) noexcept;

bool embed(DType type, const uint8_t* table, size_t row_bytes, int64_t n_in, const int32_t* ids, int64_t n_tokens,
           float* out, int64_t ldo, cudaStream_t stream);
/// x [rows, n_in] (row stride ldx) -> Q8_1 blocks at q8 (q8_1_bytes(rows, n_in)).
void quantize_q8_1(const float* x, int64_t ldx, int64_t rows, int64_t n_in, void* q8, cudaStream_t stream);
/// y[c][r] = W row r . x[c] for c < ncols (<= kMaxVecCols), x given as Q8_1.
bool mmvq(DType type, const uint8_t* W, size_t row_bytes, int64_t n_in, int64_t n_out, const void* q8, int ncols, float* y,
          int64_t ldy, cudaStream_t stream);
/// The same with float activations and dequantize_value() (any dequantizable type).
bool matvec_generic(DType type, const uint8_t* W, size_t row_bytes, int64_t n_in, int64_t n_out, const float* x, int64_t ldx,
                    int ncols, float* y, int64_t ldy, cudaStream_t stream);
/// n elements (whole rows) of a weight to F16 (__half) at out.
bool dequantize_to_f16(DType type, const uint8_t* W, int64_t n, void* out, cudaStream_t stream);
/// x [rows, cols] (row stride ldx) to packed F16 at out.
void to_f16(const float* x, int64_t ldx, int64_t rows, int64_t cols, void* out, cudaStream_t stream);
bool add_bias(DType type, float* y, int64_t rows, int64_t cols, const uint8_t* bias, cudaStream_t stream);
bool rms_norm(DType type, const float* x, float* y, int64_t rows, int64_t cols, const uint8_t* gamma, float eps,
              cudaStream_t stream);
void rope(bool neox, float* x, int64_t rows, int64_t ldx, const RopeArgs& args, cudaStream_t stream);
/// n rows of `row` values of k and v to the cache rows at kc / vc (F16 or F32 elements).
void kv_store(bool f16, const float* k, const float* v, int64_t n, int64_t row, void* kc, void* vc, cudaStream_t stream);
/// Causal attention (see kernels.cuh), window > 0: a sliding-window layer's; the splits
/// cover cells [kv_begin, first_pos + n) in chunks; n_split > 1 writes `partial` and then
/// combines.
void attention(bool f16, const float* q, int64_t ldq, const void* K, const void* V, int kv_row, int hd, int n_head, int group,
               int64_t n, int first_pos, int window, int kv_begin, int n_split, int chunk, float scale, float* out,
               int64_t ldo, float* partial, cudaStream_t stream);
void swiglu(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream);
/// out = gelu(gate) * up with ggml-cpu's F16 GELU (core/gelu.hpp); out may alias gate.
void geglu(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream);
/// x *= s over n floats.
void scale(float* x, float s, int64_t n, cudaStream_t stream);
void add(float* x, const float* y, int64_t n, cudaStream_t stream);

}  // namespace genie::cuda::launch
