// The launchers of launch.hpp: grid shapes and the DType -> block type dispatch.
#include "cuda/kernels.cuh"
#include "cuda/launch.hpp"

#include "quant/dequantize.hpp"

#include <algorithm>

namespace genie::cuda::launch {
namespace {

namespace k = kernels;
using namespace genie::quant;

constexpr int kThreads = 256;

unsigned grid_for(int64_t n, int threads = kThreads) {
    const int64_t blocks = (n + threads - 1) / threads;
    return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, 65535));
}

template <class F>
bool visit_mmvq(DType t, F&& f) {
    switch (t) {
        case DType::Q4_0: f(BlockTag<BlockQ4_0>{}); return true;
        case DType::Q4_1: f(BlockTag<BlockQ4_1>{}); return true;
        case DType::Q5_0: f(BlockTag<BlockQ5_0>{}); return true;
        case DType::Q5_1: f(BlockTag<BlockQ5_1>{}); return true;
        case DType::Q8_0: f(BlockTag<BlockQ8_0>{}); return true;
        case DType::Q4_K: f(BlockTag<BlockQ4_K>{}); return true;
        case DType::Q5_K: f(BlockTag<BlockQ5_K>{}); return true;
        case DType::Q6_K: f(BlockTag<BlockQ6_K>{}); return true;
        default: return false;
    }
}

}  // namespace

bool has_mmvq(DType type) noexcept {
    return visit_mmvq(type, [](auto) {});
}

size_t q8_1_bytes(int64_t rows, int64_t n_in) noexcept {
    return static_cast<size_t>(rows) * static_cast<size_t>(n_in / 32) * sizeof(BlockQ8_1);
}

bool embed(DType type, const uint8_t* table, size_t row_bytes, int64_t n_in, const int32_t* ids, int64_t n_tokens, float* out,
           int64_t ldo, cudaStream_t stream) {
    const dim3 grid(grid_for(n_in), static_cast<unsigned>(n_tokens));
    return visit_dequantizable(type, [&](auto tag) {
        using Block = typename decltype(tag)::type;
        k::embed<Block><<<grid, kThreads, 0, stream>>>(table, row_bytes, n_in, ids, out, ldo);
    });
}

void quantize_q8_1(const float* x, int64_t ldx, int64_t rows, int64_t n_in, void* q8, cudaStream_t stream) {
    const int64_t blocks = n_in / 32;
    const dim3 grid(static_cast<unsigned>((blocks + 7) / 8), static_cast<unsigned>(rows));
    k::quantize_q8_1<<<grid, 8 * k::kWarp, 0, stream>>>(x, ldx, static_cast<BlockQ8_1*>(q8), blocks);
}

bool mmvq(DType type, const uint8_t* W, size_t row_bytes, int64_t n_in, int64_t n_out, const void* q8, int ncols, float* y,
          int64_t ldy, cudaStream_t stream) {
    const unsigned grid = static_cast<unsigned>((n_out + 3) / 4);  // 4 warps = 4 rows per block
    return visit_mmvq(type, [&](auto tag) {
        using Block = typename decltype(tag)::type;
        k::mmvq<Block><<<grid, 4 * k::kWarp, 0, stream>>>(W, row_bytes, n_out, static_cast<int>(n_in / 32),
                                                          static_cast<const BlockQ8_1*>(q8), ncols, y, ldy);
    });
}

bool matvec_generic(DType type, const uint8_t* W, size_t row_bytes, int64_t n_in, int64_t n_out, const float* x, int64_t ldx,
                    int ncols, float* y, int64_t ldy, cudaStream_t stream) {
    const unsigned grid = static_cast<unsigned>((n_out + 3) / 4);
    return visit_dequantizable(type, [&](auto tag) {
        using Block = typename decltype(tag)::type;
        // Activations rounded as the CPU's vec_dot_type does for F16/BF16 weights.
        if (type == DType::F16)
            k::matvec_generic<Block, k::XRound::F16><<<grid, 4 * k::kWarp, 0, stream>>>(W, row_bytes, n_in, n_out, x, ldx, ncols, y, ldy);
        else if (type == DType::BF16)
            k::matvec_generic<Block, k::XRound::BF16><<<grid, 4 * k::kWarp, 0, stream>>>(W, row_bytes, n_in, n_out, x, ldx, ncols, y, ldy);
        else
            k::matvec_generic<Block, k::XRound::None><<<grid, 4 * k::kWarp, 0, stream>>>(W, row_bytes, n_in, n_out, x, ldx, ncols, y, ldy);
    });
}

bool dequantize_to_f16(DType type, const uint8_t* W, int64_t n, void* out, cudaStream_t stream) {
    return visit_dequantizable(type, [&](auto tag) {
        using Block = typename decltype(tag)::type;
        k::dequantize_to_f16<Block><<<grid_for(n), kThreads, 0, stream>>>(W, n, static_cast<__half*>(out));
    });
}

void to_f16(const float* x, int64_t ldx, int64_t rows, int64_t cols, void* out, cudaStream_t stream) {
    k::to_f16<<<grid_for(rows * cols), kThreads, 0, stream>>>(x, ldx, rows, cols, static_cast<__half*>(out));
}

bool add_bias(DType type, float* y, int64_t rows, int64_t cols, const uint8_t* bias, cudaStream_t stream) {
    return visit_dequantizable(type, [&](auto tag) {
        using Block = typename decltype(tag)::type;
        k::add_bias<Block><<<grid_for(rows * cols), kThreads, 0, stream>>>(y, rows, cols, reinterpret_cast<const Block*>(bias));
    });
}

bool rms_norm(DType type, const float* x, float* y, int64_t rows, int64_t cols, const uint8_t* gamma, float eps,
              cudaStream_t stream) {
    const int threads = cols >= 1024 ? 256 : 32;
    return visit_dequantizable(type, [&](auto tag) {
        using Block = typename decltype(tag)::type;
        k::rms_norm<Block><<<static_cast<unsigned>(rows), threads, 0, stream>>>(x, y, cols, reinterpret_cast<const Block*>(gamma), eps);
    });
}

void rope(bool neox, float* x, int64_t rows, int64_t ldx, const RopeArgs& args, cudaStream_t stream) {
    const unsigned grid = static_cast<unsigned>(rows * args.n_heads);
    const int threads = std::clamp(args.n_rot / 2, 32, 128);
    if (neox) k::rope<true><<<grid, threads, 0, stream>>>(x, ldx, args);
    else k::rope<false><<<grid, threads, 0, stream>>>(x, ldx, args);
}

void kv_store(bool f16, const float* kx, const float* vx, int64_t n, int64_t row, void* kc, void* vc, cudaStream_t stream) {
    if (f16) k::kv_store<true><<<grid_for(n * row), kThreads, 0, stream>>>(kx, vx, n, row, kc, vc);
    else k::kv_store<false><<<grid_for(n * row), kThreads, 0, stream>>>(kx, vx, n, row, kc, vc);
}

void attention(bool f16, const float* q, int64_t ldq, const void* K, const void* V, int kv_row, int hd, int n_head, int group,
               int64_t n, int first_pos, int window, int kv_begin, int n_split, int chunk, float scale, float* out,
               int64_t ldo, float* partial, cudaStream_t stream) {
    const dim3 grid(static_cast<unsigned>(n_head), static_cast<unsigned>(n_split), static_cast<unsigned>(n));
    const size_t shared = static_cast<size_t>(hd + kAttnThreads) * sizeof(float);
    if (f16)
        k::attention<true><<<grid, kAttnThreads, shared, stream>>>(q, ldq, K, V, kv_row, hd, group, first_pos, window, kv_begin, chunk, scale, out,
                                                                   ldo, partial);
    else
        k::attention<false><<<grid, kAttnThreads, shared, stream>>>(q, ldq, K, V, kv_row, hd, group, first_pos, window, kv_begin, chunk, scale, out,
                                                                    ldo, partial);
    if (n_split > 1)
        k::attention_combine<<<dim3(static_cast<unsigned>(n_head), static_cast<unsigned>(n)), std::min(hd, 256), 0, stream>>>(
            partial, n_split, hd, out, ldo);
}

void swiglu(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream) {
    k::swiglu<<<grid_for(n), kThreads, 0, stream>>>(gate, up, out, n);
}

void geglu(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream) {
    k::geglu<<<grid_for(n), kThreads, 0, stream>>>(gate, up, out, n);
}

void scale(float* x, float s, int64_t n, cudaStream_t stream) { k::scale<<<grid_for(n), kThreads, 0, stream>>>(x, s, n); }

void add(float* x, const float* y, int64_t n, cudaStream_t stream) { k::add<<<grid_for(n), kThreads, 0, stream>>>(x, y, n); }

}  // namespace genie::cuda::launch
