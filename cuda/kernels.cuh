// Device kernels of the CUDA backend. Every per-block weight decode comes from the
// GENIE_HD headers of lib/quant (the same functions the CPU unit tests verify):
// dequantize_value() for embedding rows, norms, biases, the generic mat-vec and the
// F16 tiles of prefill; the block structs and get_scale_min_k4() for the int8 dot
// products. Included by kernels.cu only (launchers: launch.hpp).
#pragma once

#include "core/fp16.hpp"
#include "core/gelu.hpp"
#include "quant/blocks.hpp"
#include "quant/dequantize.hpp"
#include "cuda/dot_units.hpp"
#include "cuda/launch.hpp"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace genie::cuda::kernels {

using namespace genie::quant;

constexpr int kWarp = 32;
/// Activation rows up to which matmul runs the mat-vec kernels (decode); above, cuBLAS.
constexpr int kMaxVecCols = launch::kMaxVecCols;
/// Threads of an attention block = KV cells per tile.
constexpr int kAttnThreads = launch::kAttnThreads;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ int warp_sum_int(int v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/// A reduction over the whole thread block (blockDim.x a multiple of 32); every
/// thread gets the result. `red` is 32 floats of shared memory.
template <bool kMax>
__device__ __forceinline__ float block_reduce(float v, float* red) {
    v = kMax ? warp_max(v) : warp_sum(v);
    const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, n_warps = blockDim.x / kWarp;
    __syncthreads();  // red is free (a previous reduction has been read)
    if (lane == 0) red[warp] = v;
    __syncthreads();
    float r = lane < n_warps ? red[lane] : (kMax ? -INFINITY : 0.0f);
    return kMax ? warp_max(r) : warp_sum(r);
}

// ---- activation quantization: float rows -> Q8_1 blocks ---------------------------------
// Byte-exact with the CPU's quantize_block(BlockQ8_0/Q8_1): d = amax / 127, q =
// round(x / d) half away from zero, s = d * sum(q) (both stored as F16). llama.cpp's
// CUDA backend quantizes every matmul input to q8_1 blocks of 32 the same way (its s
// is the float sum of x); the CPU uses Q8_K (blocks of 256) for k-quant weights.

/// One warp per 32-element block. grid: (ceil(blocks / warps per block), rows).
__global__ void quantize_q8_1(const float* __restrict__ x, int64_t ldx, BlockQ8_1* __restrict__ y, int64_t blocks_per_row) {
    const int64_t b = static_cast<int64_t>(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
    if (b >= blocks_per_row) return;
    const int lane = threadIdx.x % kWarp;
    const int64_t r = blockIdx.y;
    const float v = x[r * ldx + b * 32 + lane];
    const float amax = warp_max(fabsf(v));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const int q = static_cast<int>(roundf(__fmul_rn(v, id)));
    BlockQ8_1& out = y[r * blocks_per_row + b];
    out.qs[lane] = static_cast<int8_t>(q);
    const int sum = warp_sum_int(q);
    if (lane == 0) {
        out.d = fp32_to_fp16(d);
        out.s = fp32_to_fp16(__fmul_rn(static_cast<float>(sum), d));
    }
}

/// Decode mat-vec with int8 dot products: one warp per weight row, lanes over 32-element
/// units; up to kMaxVecCols activation rows share each weight read. 128 threads.
template <class Block>
__global__ void mmvq(const uint8_t* __restrict__ W, size_t row_bytes, int64_t n_out, int units_per_row,
                     const BlockQ8_1* __restrict__ X, int ncols, float* __restrict__ Y, int64_t ldy) {
    constexpr int U = BlockTraits<Block>::elements / 32;
    const int lane = threadIdx.x % kWarp;
    const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
    if (row >= n_out) return;
    const auto* blocks = reinterpret_cast<const Block*>(W + static_cast<size_t>(row) * row_bytes);
    float acc[kMaxVecCols] = {};
    for (int u = lane; u < units_per_row; u += kWarp) {
        const Block& b = blocks[u / U];
#pragma unroll
        for (int c = 0; c < kMaxVecCols; ++c)
            if (c < ncols) acc[c] += dot_unit(b, u % U, X[static_cast<int64_t>(c) * units_per_row + u]);
    }
#pragma unroll
    for (int c = 0; c < kMaxVecCols; ++c) {
        if (c >= ncols) break;
        const float s = warp_sum(acc[c]);
        if (lane == 0) Y[c * ldy + row] = s;
    }
}

/// Activation rounding of the generic path, as the CPU's vec_dot_type for F16/BF16 weights.
enum class XRound { None, F16, BF16 };

template <XRound R>
__device__ __forceinline__ float round_x(float x) {
    if constexpr (R == XRound::F16) return __half2float(__float2half_rn(x));
    else if constexpr (R == XRound::BF16) return bf16_to_fp32(fp32_to_bf16(x));
    else return x;
}

/// Decode mat-vec for any dequantizable type (F32/F16/BF16, Q2_K, Q3_K ...): float
/// products with dequantize_value(), one warp per row.
template <class Block, XRound R>
__global__ void matvec_generic(const uint8_t* __restrict__ W, size_t row_bytes, int64_t n_in, int64_t n_out,
                               const float* __restrict__ X, int64_t ldx, int ncols, float* __restrict__ Y, int64_t ldy) {
    constexpr int E = BlockTraits<Block>::elements;
    const int lane = threadIdx.x % kWarp;
    const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / kWarp) + threadIdx.x / kWarp;
    if (row >= n_out) return;
    const auto* blocks = reinterpret_cast<const Block*>(W + static_cast<size_t>(row) * row_bytes);
    float acc[kMaxVecCols] = {};
    for (int64_t i = lane; i < n_in; i += kWarp) {
        const float w = dequantize_value(blocks[i / E], static_cast<int>(i % E));
#pragma unroll
        for (int c = 0; c < kMaxVecCols; ++c)
            if (c < ncols) acc[c] += w * round_x<R>(X[c * ldx + i]);
    }
#pragma unroll
    for (int c = 0; c < kMaxVecCols; ++c) {
        if (c >= ncols) break;
        const float s = warp_sum(acc[c]);
        if (lane == 0) Y[c * ldy + row] = s;
    }
}

/// n consecutive elements of a weight (whole rows) dequantized to F16 for cuBLAS.
template <class Block>
__global__ void dequantize_to_f16(const uint8_t* __restrict__ W, int64_t n, __half* __restrict__ out) {
    constexpr int E = BlockTraits<Block>::elements;
    const auto* blocks = reinterpret_cast<const Block*>(W);
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = __float2half_rn(dequantize_value(blocks[i / E], static_cast<int>(i % E)));
}

/// Activations [rows, cols] (row stride ldx) to packed F16 [rows, cols].
__global__ void to_f16(const float* __restrict__ x, int64_t ldx, int64_t rows, int64_t cols, __half* __restrict__ out) {
    const int64_t n = rows * cols, stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = __float2half_rn(x[(i / cols) * ldx + i % cols]);
}

// ---- element-wise ops -------------------------------------------------------------------

/// out[i] = row tokens[i] of the table. grid: (ceil(n_in / 256), n_tokens).
template <class Block>
__global__ void embed(const uint8_t* __restrict__ table, size_t row_bytes, int64_t n_in, const int32_t* __restrict__ tokens,
                      float* __restrict__ out, int64_t ldo) {
    constexpr int E = BlockTraits<Block>::elements;
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n_in) return;
    const auto* blocks = reinterpret_cast<const Block*>(table + static_cast<size_t>(tokens[blockIdx.y]) * row_bytes);
    out[blockIdx.y * ldo + i] = dequantize_value(blocks[i / E], static_cast<int>(i % E));
}

template <class Block>
__global__ void add_bias(float* __restrict__ y, int64_t rows, int64_t cols, const Block* __restrict__ bias) {
    constexpr int E = BlockTraits<Block>::elements;
    const int64_t n = rows * cols, stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        const int64_t c = i % cols;
        y[i] += dequantize_value(bias[c / E], static_cast<int>(c % E));
    }
}

/// y = x / rms(x) * gamma per row, one block per row (sum of squares in float, as
/// llama.cpp's CUDA rms_norm; the CPU sums in double). In place allowed.
template <class Block>
__global__ void rms_norm(const float* x, float* y, int64_t cols, const Block* __restrict__ gamma, float eps) {
    constexpr int E = BlockTraits<Block>::elements;
    __shared__ float red[32];
    const float* xr = x + blockIdx.x * cols;
    float* yr = y + blockIdx.x * cols;
    float sum = 0.0f;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) sum += xr[i] * xr[i];
    sum = block_reduce<false>(sum, red);
    const float mean = sum / static_cast<float>(cols);
    const float scale = 1.0f / sqrtf(mean + eps);
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x)
        yr[i] = xr[i] * scale * dequantize_value(gamma[i / E], static_cast<int>(i % E));
}

/// ggml's rope_yarn (same as the CPU backend's).
__device__ __forceinline__ void rope_yarn(float theta_extrap, const launch::RopeArgs& a, int i0, float& c, float& s) {
    const float theta_interp = a.freq_scale * theta_extrap;
    float theta = theta_interp;
    float mscale = a.attn_factor;
    if (a.ext_factor != 0.0f) {
        const float y = (static_cast<float>(i0 / 2) - a.corr0) / fmaxf(0.001f, a.corr1 - a.corr0);
        const float ramp_mix = (1.0f - fminf(1.0f, fmaxf(0.0f, y))) * a.ext_factor;
        theta = theta_interp * (1.0f - ramp_mix) + theta_extrap * ramp_mix;
        mscale *= 1.0f + 0.1f * logf(1.0f / a.freq_scale);
    }
    c = cosf(theta) * mscale;
    s = sinf(theta) * mscale;
}

/// One block per (row, head); threads over dimension pairs. theta = pos * theta_scale^(i0/2)
/// with powf, as llama.cpp's CUDA rope (the CPU multiplies step by step).
template <bool kNeox>
__global__ void rope(float* __restrict__ x, int64_t ldx, launch::RopeArgs a) {
    const int r = blockIdx.x / a.n_heads, h = blockIdx.x % a.n_heads;
    float* v = x + r * ldx + static_cast<int64_t>(h) * a.head_dim;
    const float pos = static_cast<float>(a.first_pos + r);
    for (int p = threadIdx.x; p < a.n_rot / 2; p += blockDim.x) {
        const int i0 = 2 * p;
        const float ff = a.freq_factors ? a.freq_factors[p] : 1.0f;
        float c, s;
        rope_yarn(pos * powf(a.theta_scale, static_cast<float>(p)) / ff, a, i0, c, s);
        const int ia = kNeox ? p : i0;
        const int ib = kNeox ? p + a.n_rot / 2 : i0 + 1;
        const float x0 = v[ia], x1 = v[ib];
        v[ia] = x0 * c - x1 * s;
        v[ib] = x0 * s + x1 * c;
    }
}

/// K and V rows [n, row] to cells [first, first + n) of one layer ([n_ctx, row]).
template <bool kF16>
__global__ void kv_store(const float* __restrict__ k, const float* __restrict__ v, int64_t n, int64_t row, void* kc, void* vc) {
    const int64_t total = n * row, stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
        if constexpr (kF16) {
            static_cast<uint16_t*>(kc)[i] = fp32_to_fp16(k[i]);
            static_cast<uint16_t*>(vc)[i] = fp32_to_fp16(v[i]);
        } else {
            static_cast<float*>(kc)[i] = k[i];
            static_cast<float*>(vc)[i] = v[i];
        }
    }
}

template <bool kF16>
__device__ __forceinline__ float load_kv(const void* p, size_t i) {
    if constexpr (kF16) return h2f(static_cast<const uint16_t*>(p)[i]);
    else return static_cast<const float*>(p)[i];
}

/// Causal attention, flash-decoding style: block (head h, split s, query row r) walks
/// its share (chunk cells from kv_begin + s * chunk) of the cells [0, first_pos + r] (from
/// first_pos + r - window + 1 on for a sliding-window layer, window > 0: a split left empty
/// reports max -inf) in tiles of blockDim.x cells with an online
/// softmax. With one split it writes the output; with several, (unnormalized output,
/// max, sum) per split for attention_combine. q is rounded to F16 for an F16 cache (as
/// ggml does); scores, softmax and V·p in float. head_dim <= 2 * blockDim.x.
template <bool kF16>
__global__ void attention(const float* __restrict__ q, int64_t ldq, const void* __restrict__ K, const void* __restrict__ V,
                          int kv_row, int hd, int group, int first_pos, int window, int kv_begin, int chunk, float scale,
                          float* __restrict__ out,
                          int64_t ldo, float* __restrict__ partial) {
    extern __shared__ float smem[];
    float* qs = smem;       // [hd]
    float* sc = smem + hd;  // [blockDim.x]
    __shared__ float red[32];
    const int h = blockIdx.x, s = blockIdx.y, r = blockIdx.z;
    const int n_head = gridDim.x, n_split = gridDim.y;
    const int tid = threadIdx.x, lane = tid % kWarp, warp = tid / kWarp, n_warps = blockDim.x / kWarp;
    const int n_kv = first_pos + r + 1;
    const int lo = window > 0 ? max(0, n_kv - window) : 0;  // the window's first cell
    const int begin = max(lo, kv_begin + s * chunk), end = min(n_kv, kv_begin + s * chunk + chunk);
    const int hk = h / group;
    const float* qh = q + r * ldq + static_cast<int64_t>(h) * hd;
    for (int i = tid; i < hd; i += blockDim.x) qs[i] = kF16 ? __half2float(__float2half_rn(qh[i])) : qh[i];
    __syncthreads();
    float m = -INFINITY, l = 0.0f, acc0 = 0.0f, acc1 = 0.0f;
    const int d0 = tid, d1 = tid + blockDim.x;
    for (int t0 = begin; t0 < end; t0 += blockDim.x) {
        const int tile = min(static_cast<int>(blockDim.x), end - t0);
        for (int c = warp; c < tile; c += n_warps) {
            const size_t at = static_cast<size_t>(t0 + c) * kv_row + static_cast<size_t>(hk) * hd;
            float dot = 0.0f;
            for (int i = lane; i < hd; i += kWarp) dot += load_kv<kF16>(K, at + i) * qs[i];
            dot = warp_sum(dot);
            if (lane == 0) sc[c] = dot * scale;
        }
        __syncthreads();
        const float v = tid < tile ? sc[tid] : -INFINITY;
        const float m_new = fmaxf(m, block_reduce<true>(v, red));
        const float p = tid < tile ? expf(v - m_new) : 0.0f;
        if (tid < tile) sc[tid] = p;  // each thread rewrites only the score it read
        const float tile_sum = block_reduce<false>(p, red);  // (its barriers publish sc)
        const float corr = expf(m - m_new);
        l = l * corr + tile_sum;
        acc0 *= corr;
        acc1 *= corr;
        for (int c = 0; c < tile; ++c) {
            const float pc = sc[c];
            const size_t at = static_cast<size_t>(t0 + c) * kv_row + static_cast<size_t>(hk) * hd;
            if (d0 < hd) acc0 += pc * load_kv<kF16>(V, at + d0);
            if (d1 < hd) acc1 += pc * load_kv<kF16>(V, at + d1);
        }
        m = m_new;
        __syncthreads();  // sc is rewritten by the next tile
    }
    if (n_split == 1) {
        const float inv = 1.0f / l;
        float* o = out + r * ldo + static_cast<int64_t>(h) * hd;
        if (d0 < hd) o[d0] = acc0 * inv;
        if (d1 < hd) o[d1] = acc1 * inv;
    } else {
        float* part = partial + ((static_cast<size_t>(r) * n_head + h) * n_split + s) * (hd + 2);
        if (d0 < hd) part[d0] = acc0;
        if (d1 < hd) part[d1] = acc1;
        if (tid == 0) {
            part[hd] = m;
            part[hd + 1] = l;
        }
    }
}

/// Merges the splits of attention(): grid (n_head, rows), threads over head dims.
__global__ void attention_combine(const float* __restrict__ partial, int n_split, int hd, float* __restrict__ out, int64_t ldo) {
    const int h = blockIdx.x, r = blockIdx.y, n_head = gridDim.x;
    const float* p = partial + (static_cast<size_t>(r) * n_head + h) * n_split * (hd + 2);
    float M = -INFINITY;
    for (int s = 0; s < n_split; ++s) M = fmaxf(M, p[s * (hd + 2) + hd]);
    float den = 0.0f;
    for (int s = 0; s < n_split; ++s) {
        const float ms = p[s * (hd + 2) + hd];
        if (ms != -INFINITY) den += expf(ms - M) * p[s * (hd + 2) + hd + 1];
    }
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        float num = 0.0f;
        for (int s = 0; s < n_split; ++s) {
            const float ms = p[s * (hd + 2) + hd];
            if (ms != -INFINITY) num += expf(ms - M) * p[s * (hd + 2) + d];
        }
        out[r * ldo + static_cast<int64_t>(h) * hd + d] = num / den;
    }
}

// out may alias g (forward computes swiglu(gate, up, gate)).
__global__ void swiglu(const float* g, const float* u, float* out, int64_t n) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float gv = g[i];
        out[i] = gv / (1.0f + expf(-gv)) * u[i];
    }
}

// out may alias g (forward computes geglu(gate, up, gate)).
__global__ void geglu(const float* g, const float* u, float* out, int64_t n) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = geglu_ggml(g[i], u[i]);
}

__global__ void scale(float* __restrict__ x, float s, int64_t n) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) x[i] *= s;
}

__global__ void add(float* __restrict__ x, const float* __restrict__ y, int64_t n) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) x[i] += y[i];
}

}  // namespace genie::cuda::kernels
