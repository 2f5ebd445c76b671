// The CUDA backend: the Backend interface of lib/backend/backend.hpp on one device.
// All work is queued on one stream per backend (one per Session); read_row is the only
// synchronization point of a forward pass. Numerics (docs/cuda.md): int8 dot products
// on Q8_1-quantized activations for decode (as llama.cpp's MMVQ), F16 tiles + cuBLAS
// with F32 accumulation for prefill, F16 KV cache rounding as the CPU backend.
// Not done: CUDA graph capture of the decode step (each op is one or two launches).
#include "cuda/allocator.hpp"
#include "cuda/check.hpp"
#include "cuda/cublas_loader.hpp"
#include "cuda/launch.hpp"

#include "backend/backend.hpp"
#include "backend/cuda_entry.hpp"
#include "quant/dequantize.hpp"

#include <genie/error.hpp>

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <utility>
#include <vector>

namespace genie::cuda {
namespace {

using backend::KvCache;
using backend::KvLayout;
using backend::Tensor;
using backend::Weight;
namespace k = launch;

/// Elements of one F16 weight tile for cuBLAS (64 MiB).
constexpr int64_t kTileElements = int64_t{32} << 20;

/// A device buffer that grows on demand (the stream is synchronized before a regrow).
class Scratch {
public:
    Scratch() = default;
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    ~Scratch() { device_free(ptr_); }
    void* get(size_t bytes, cudaStream_t stream, const char* what) {
        if (bytes > size_) {
            GENIE_CUDA_CHECK(cudaStreamSynchronize(stream));
            device_free(ptr_);
            ptr_ = nullptr;
            size_ = 0;
            ptr_ = device_malloc(bytes, what);
            size_ = bytes;
        }
        return ptr_;
    }

private:
    void* ptr_ = nullptr;
    size_t size_ = 0;
};

class CudaKvCache final : public KvCache {
public:
    explicit CudaKvCache(const KvLayout& layout) : KvCache(layout) {
        if (layout.type != KvType::F16 && layout.type != KvType::F32)
            throw Error(ErrorCode::Unsupported, "the CUDA backend supports F16 and F32 KV caches (not Q8_0 yet)");
        const size_t half = layout.bytes() / 2;
        k_ = device_malloc(half, "the KV cache (K)");
        try {
            v_ = device_malloc(half, "the KV cache (V)");
            GENIE_CUDA_CHECK(cudaMemset(k_, 0, half));
            GENIE_CUDA_CHECK(cudaMemset(v_, 0, half));
            // cudaMemset runs on the legacy stream, asynchronously; the backend's kernels
            // run on a non-blocking stream that does not wait for it.
            GENIE_CUDA_CHECK(cudaDeviceSynchronize());
        } catch (...) {
            device_free(k_);
            device_free(v_);
            throw;
        }
    }
    ~CudaKvCache() override {
        device_free(k_);
        device_free(v_);
    }
    bool f16() const { return layout_.type == KvType::F16; }
    size_t element() const { return f16() ? 2 : 4; }
    size_t row() const { return static_cast<size_t>(layout_.n_head_kv) * layout_.head_dim; }
    /// Byte offset of (layer, cell).
    size_t offset(int32_t layer, int32_t cell) const {
        return (static_cast<size_t>(layer) * layout_.n_ctx + static_cast<size_t>(cell)) * row() * element();
    }
    void* k_at(int32_t layer, int32_t cell) const { return static_cast<uint8_t*>(k_) + offset(layer, cell); }
    void* v_at(int32_t layer, int32_t cell) const { return static_cast<uint8_t*>(v_) + offset(layer, cell); }

    void read_cells(int32_t layer, int32_t first, int32_t n, void* k_dst, void* v_dst) const override {
        const size_t bytes = static_cast<size_t>(n) * row() * element();
        GENIE_CUDA_CHECK(cudaDeviceSynchronize());  // the backend's stream may still be writing
        GENIE_CUDA_CHECK(cudaMemcpy(k_dst, k_at(layer, first), bytes, cudaMemcpyDeviceToHost));
        GENIE_CUDA_CHECK(cudaMemcpy(v_dst, v_at(layer, first), bytes, cudaMemcpyDeviceToHost));
    }
    void write_cells(int32_t layer, int32_t first, int32_t n, const void* k_src, const void* v_src) override {
        const size_t bytes = static_cast<size_t>(n) * row() * element();
        GENIE_CUDA_CHECK(cudaDeviceSynchronize());
        GENIE_CUDA_CHECK(cudaMemcpy(k_at(layer, first), k_src, bytes, cudaMemcpyHostToDevice));
        GENIE_CUDA_CHECK(cudaMemcpy(v_at(layer, first), v_src, bytes, cudaMemcpyHostToDevice));
        // From pageable memory cudaMemcpy returns once the data is staged, before the DMA
        // to the device has finished, and the backend's non-blocking stream does not wait
        // for the legacy stream: the next forward pass could read the cells half-written.
        GENIE_CUDA_CHECK(cudaDeviceSynchronize());
    }

    void* k_ = nullptr;
    void* v_ = nullptr;
};

/// The activation arena: slot i of a pass reuses slot i of the previous one.
class CudaWorkspace final : public backend::Workspace {
public:
    explicit CudaWorkspace(cudaStream_t stream) : stream_(stream) {}
    ~CudaWorkspace() override {
        (void)cudaStreamSynchronize(stream_);
        for (auto& b : blocks_) device_free(b.first);
    }
    Tensor allocate(int64_t rows, int64_t cols) override {
        const size_t bytes = static_cast<size_t>(rows * cols) * sizeof(float);
        if (used_ == blocks_.size()) blocks_.emplace_back(nullptr, 0);
        auto& [ptr, size] = blocks_[used_++];
        if (size < bytes) {
            GENIE_CUDA_CHECK(cudaStreamSynchronize(stream_));
            device_free(ptr);
            ptr = nullptr;
            size = 0;
            ptr = static_cast<float*>(device_malloc(bytes, "activations"));
            size = bytes;
        }
        return {ptr, rows, cols};
    }
    void reset() noexcept override { used_ = 0; }
    size_t bytes() const noexcept override {
        size_t total = 0;
        for (const auto& b : blocks_) total += b.second;
        return total;
    }

private:
    cudaStream_t stream_;
    std::vector<std::pair<float*, size_t>> blocks_;
    size_t used_ = 0;
};

void yarn_corr_dims(const backend::RopeParams& p, float dims[2]) {
    auto corr_dim = [&](float n_rot) {
        return static_cast<float>(p.n_rot) * std::log(static_cast<float>(p.n_ctx_orig) / (n_rot * 2.0f * static_cast<float>(M_PI))) /
               (2.0f * std::log(p.freq_base));
    };
    dims[0] = std::max(0.0f, std::floor(corr_dim(p.beta_fast)));
    dims[1] = std::min(static_cast<float>(p.n_rot - 1), std::ceil(corr_dim(p.beta_slow)));
}

class CudaBackend final : public backend::Backend {
public:
    explicit CudaBackend(std::shared_ptr<const CudaWeights> weights) : weights_(std::move(weights)) {
        device_ = weights_->device();
        GENIE_CUDA_CHECK(cudaSetDevice(device_));
        GENIE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
        const CublasApi& api = cublas_api();
        const char* no_cublas = std::getenv("GENIE_CUDA_NO_CUBLAS");  // tests: the fallback path
        if (api.loaded && !(no_cublas && *no_cublas && std::string(no_cublas) != "0")) {
            try {
                GENIE_CUBLAS_CHECK(api.create(&cublas_));
                GENIE_CUBLAS_CHECK(api.set_stream(cublas_, stream_));
            } catch (...) {
                if (cublas_) (void)api.destroy(cublas_);
                (void)cudaStreamDestroy(stream_);
                throw;
            }
        }
    }
    ~CudaBackend() override {
        (void)cudaSetDevice(device_);
        (void)cudaStreamSynchronize(stream_);
        if (cublas_) (void)cublas_api().destroy(cublas_);
        (void)cudaStreamDestroy(stream_);
    }

    std::string name() const override {
        const DeviceTraits& t = weights_->traits();
        return fmt::format("cuda ({}, sm_{}{}, {}{})", t.name, t.major, t.minor, t.integrated ? "integrated" : "discrete",
                           cublas_ ? "" : "; no cuBLAS: " + cublas_api().error);
    }

    std::unique_ptr<KvCache> create_kv_cache(const KvLayout& layout) override {
        activate();
        return std::make_unique<CudaKvCache>(layout);
    }
    std::unique_ptr<backend::Workspace> create_workspace() override {
        activate();
        return std::make_unique<CudaWorkspace>(stream_);
    }

    void embed(const Weight& table, std::span<const int32_t> tokens, Tensor& out) override {
        activate();
        for (int32_t t : tokens)
            if (t < 0 || t >= table.n_out)
                throw Error(ErrorCode::InvalidArgument, fmt::format("token id {} is outside the vocabulary [0, {})", t, table.n_out));
        if (tokens.empty()) return;
        auto* ids = static_cast<int32_t*>(tokens_.get(tokens.size_bytes(), stream_, "token ids"));
        GENIE_CUDA_CHECK(cudaMemcpyAsync(ids, tokens.data(), tokens.size_bytes(), cudaMemcpyHostToDevice, stream_));
        if (!k::embed(table.type, dev(table), table.row_bytes, table.n_in, ids, static_cast<int64_t>(tokens.size()), out.data,
                      out.cols, stream_))
            unsupported("embed", table);
        GENIE_CUDA_CHECK_LAUNCH(embed);
    }

    void matmul(const Weight& w, const Tensor& x, Tensor& y) override {
        activate();
        if (x.cols != w.n_in || y.cols < w.n_out || y.rows < x.rows)
            throw Error(ErrorCode::Internal, fmt::format("cuda matmul '{}': shapes x [{}, {}], W [{} -> {}], y [{}, {}]", w.name,
                                                         x.rows, x.cols, w.n_in, w.n_out, y.rows, y.cols));
        const int64_t n = x.rows;
        if (n == 0) return;
        const uint8_t* W = dev(w);
        if (n > k::kMaxVecCols && cublas_) {
            gemm(w, W, x, y);
            return;
        }
        // Decode (and prefill without cuBLAS: groups of kMaxVecCols rows).
        for (int64_t r0 = 0; r0 < n; r0 += k::kMaxVecCols) {
            const int nc = static_cast<int>(std::min<int64_t>(k::kMaxVecCols, n - r0));
            const float* xr = x.row(r0);
            float* yr = y.row(r0);
            if (k::has_mmvq(w.type)) {
                void* q8 = q8_.get(k::q8_1_bytes(nc, w.n_in), stream_, "quantized activations");
                k::quantize_q8_1(xr, x.cols, nc, w.n_in, q8, stream_);
                GENIE_CUDA_CHECK_LAUNCH(quantize_q8_1);
                k::mmvq(w.type, W, w.row_bytes, w.n_in, w.n_out, q8, nc, yr, y.cols, stream_);
            } else if (!k::matvec_generic(w.type, W, w.row_bytes, w.n_in, w.n_out, xr, x.cols, nc, yr, y.cols, stream_)) {
                unsupported("matmul", w);
            }
            GENIE_CUDA_CHECK_LAUNCH(mmvq);
        }
    }

    void add_bias(Tensor& y, const Weight& bias) override {
        activate();
        if (y.rows == 0) return;
        if (!k::add_bias(bias.type, y.data, y.rows, y.cols, dev(bias), stream_)) unsupported("add_bias", bias);
        GENIE_CUDA_CHECK_LAUNCH(add_bias);
    }

    void rms_norm(const Tensor& x, const Weight& gamma, float eps, Tensor& y) override {
        activate();
        if (x.rows == 0) return;
        if (!k::rms_norm(gamma.type, x.data, y.data, x.rows, x.cols, dev(gamma), eps, stream_)) unsupported("rms_norm", gamma);
        GENIE_CUDA_CHECK_LAUNCH(rms_norm);
    }

    void rope(Tensor& x, int32_t n_heads, int32_t head_dim, int32_t first_pos, const backend::RopeParams& p) override {
        activate();
        if (x.rows == 0) return;
        k::RopeArgs a{};
        a.n_heads = n_heads;
        a.head_dim = head_dim;
        a.first_pos = first_pos;
        a.n_rot = p.n_rot;
        a.theta_scale = std::pow(p.freq_base, -2.0f / static_cast<float>(p.n_rot));
        a.freq_scale = p.freq_scale;
        a.ext_factor = p.ext_factor;
        a.attn_factor = p.attn_factor;
        float corr[2];
        yarn_corr_dims(p, corr);
        a.corr0 = corr[0];
        a.corr1 = corr[1];
        a.freq_factors = nullptr;
        if (p.freq_factors) {
            const size_t bytes = static_cast<size_t>(p.n_rot / 2) * sizeof(float);
            auto* ff = static_cast<float*>(freq_.get(bytes, stream_, "rope frequency factors"));
            GENIE_CUDA_CHECK(cudaMemcpyAsync(ff, p.freq_factors, bytes, cudaMemcpyHostToDevice, stream_));
            a.freq_factors = ff;
        }
        k::rope(p.mode == backend::RopeMode::Neox, x.data, x.rows, x.cols, a, stream_);
        GENIE_CUDA_CHECK_LAUNCH(rope);
    }

    void kv_store(KvCache& cache, int32_t layer, const Tensor& kt, const Tensor& vt, int32_t first_pos) override {
        activate();
        auto& c = static_cast<CudaKvCache&>(cache);
        if (kt.rows == 0) return;
        if (first_pos + kt.rows > c.layout().n_ctx)
            throw Error(ErrorCode::ContextOverflow, fmt::format("kv_store: cells [{}, {}) exceed the context of {}", first_pos,
                                                                first_pos + kt.rows, c.layout().n_ctx));
        k::kv_store(c.f16(), kt.data, vt.data, kt.rows, static_cast<int64_t>(c.row()), c.k_at(layer, first_pos),
                    c.v_at(layer, first_pos), stream_);
        GENIE_CUDA_CHECK_LAUNCH(kv_store);
    }

    void attention(const Tensor& q, const KvCache& cache, int32_t layer, int32_t first_pos, int32_t n_head, float scale,
                   int32_t window, Tensor& out) override {
        activate();
        const auto& c = static_cast<const CudaKvCache&>(cache);
        const int hd = c.layout().head_dim, n_head_kv = c.layout().n_head_kv;
        if (hd > 2 * k::kAttnThreads)
            throw Error(ErrorCode::Unsupported, fmt::format("the CUDA attention supports head sizes up to {}, not {}",
                                                            2 * k::kAttnThreads, hd));
        const int64_t n = q.rows;
        if (n == 0) return;
        if (n > 65535) throw Error(ErrorCode::Unsupported, "the CUDA attention takes at most 65535 query rows per call");
        const int group = n_head / n_head_kv;
        const int max_kv = first_pos + static_cast<int>(n);
        // The cells any row reads: [kv_begin, max_kv) (a sliding window starts at the first
        // row's window start).
        const int kv_begin = window > 0 ? std::max(0, first_pos - window + 1) : 0;
        const int span = max_kv - kv_begin;
        // Enough blocks to fill the device: split the cells when there are few (decode).
        const int64_t work = n * n_head;
        const int64_t want = 4LL * std::max(1, weights_->traits().sm_count);
        int n_split = work >= want ? 1 : static_cast<int>((want + work - 1) / work);
        n_split = std::clamp(n_split, 1, std::max(1, (span + k::kAttnThreads - 1) / k::kAttnThreads));
        const int chunk = (span + n_split - 1) / n_split;
        float* partial = nullptr;
        if (n_split > 1)
            partial = static_cast<float*>(partial_.get(static_cast<size_t>(work) * n_split * (hd + 2) * sizeof(float), stream_,
                                                       "attention partials"));
        k::attention(c.f16(), q.data, q.cols, c.k_at(layer, 0), c.v_at(layer, 0), static_cast<int>(c.row()), hd, n_head, group, n,
                     first_pos, window, kv_begin, n_split, chunk, scale, out.data, out.cols, partial, stream_);
        GENIE_CUDA_CHECK_LAUNCH(attention);
    }

    void swiglu(const Tensor& gate, const Tensor& up, Tensor& out) override {
        activate();
        const int64_t n = gate.rows * gate.cols;
        if (n == 0) return;
        k::swiglu(gate.data, up.data, out.data, n, stream_);
        GENIE_CUDA_CHECK_LAUNCH(swiglu);
    }

    void geglu(const Tensor& gate, const Tensor& up, Tensor& out) override {
        activate();
        const int64_t n = gate.rows * gate.cols;
        if (n == 0) return;
        k::geglu(gate.data, up.data, out.data, n, stream_);
        GENIE_CUDA_CHECK_LAUNCH(geglu);
    }

    void scale(Tensor& x, float s) override {
        activate();
        const int64_t n = x.rows * x.cols;
        if (n == 0) return;
        k::scale(x.data, s, n, stream_);
        GENIE_CUDA_CHECK_LAUNCH(scale);
    }

    void add(Tensor& x, const Tensor& y) override {
        activate();
        const int64_t n = x.rows * x.cols;
        if (n == 0) return;
        k::add(x.data, y.data, n, stream_);
        GENIE_CUDA_CHECK_LAUNCH(add);
    }

    void read_row(const Tensor& t, int64_t row, float* host_dst) override {
        activate();
        GENIE_CUDA_CHECK(cudaMemcpyAsync(host_dst, t.row(row), static_cast<size_t>(t.cols) * sizeof(float), cudaMemcpyDeviceToHost,
                                         stream_));
        GENIE_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }

private:
    void activate() { GENIE_CUDA_CHECK(cudaSetDevice(device_)); }

    [[noreturn]] static void unsupported(const char* op, const Weight& w) {
        throw Error(ErrorCode::Unsupported,
                    fmt::format("the CUDA backend cannot run {} with tensor '{}' of type {}", op, w.name, dtype_name(w.type)));
    }

    /// The device address of a weight (its bytes are in the model's mapping).
    const uint8_t* dev(const Weight& w) const {
        const void* p = w.data ? weights_->device_address(w.data) : nullptr;
        if (!p)
            throw Error(ErrorCode::Internal,
                        fmt::format("tensor '{}' is not in the memory given to the CUDA backend", w.name));
        return static_cast<const uint8_t*>(p);
    }

    /// Prefill: Y[n, out] = X[n, in] W^T with cuBLAS (F32 accumulation). F32 weights:
    /// SGEMM on them as they are; F16: GemmEx on them with X rounded to F16; other
    /// types: dequantized to F16 tiles of up to kTileElements (X rounded to F16).
    void gemm(const Weight& w, const uint8_t* W, const Tensor& x, Tensor& y) {
        const int64_t n = x.rows, n_in = w.n_in;
        const float alpha = 1.0f, beta = 0.0f;
        if (w.type == DType::F32) {
            GENIE_CUBLAS_CHECK(cublas_api().sgemm(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(w.n_out), static_cast<int>(n),
                                           static_cast<int>(n_in), &alpha, reinterpret_cast<const float*>(W),
                                           static_cast<int>(w.row_bytes / sizeof(float)), x.data, static_cast<int>(x.cols), &beta,
                                           y.data, static_cast<int>(y.cols)));
            return;
        }
        void* x16 = x16_.get(static_cast<size_t>(n * n_in) * sizeof(__half), stream_, "F16 activations");
        k::to_f16(x.data, x.cols, n, n_in, x16, stream_);
        GENIE_CUDA_CHECK_LAUNCH(to_f16);
        auto gemm_ex = [&](const void* A, int64_t rows, float* C) {
            GENIE_CUBLAS_CHECK(cublas_api().gemm_ex(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(rows), static_cast<int>(n),
                                            static_cast<int>(n_in), &alpha, A, CUDA_R_16F, static_cast<int>(n_in), x16, CUDA_R_16F,
                                            static_cast<int>(n_in), &beta, C, CUDA_R_32F, static_cast<int>(y.cols),
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        };
        if (w.type == DType::F16) {
            gemm_ex(W, w.n_out, y.data);
            return;
        }
        const int64_t tile_rows = std::max<int64_t>(1, std::min<int64_t>(w.n_out, kTileElements / n_in));
        void* tile = tile_.get(static_cast<size_t>(tile_rows * n_in) * sizeof(__half), stream_, "F16 weight tile");
        for (int64_t r0 = 0; r0 < w.n_out; r0 += tile_rows) {
            const int64_t rows = std::min(tile_rows, w.n_out - r0);
            if (!k::dequantize_to_f16(w.type, W + static_cast<size_t>(r0) * w.row_bytes, rows * n_in, tile, stream_))
                unsupported("matmul", w);
            GENIE_CUDA_CHECK_LAUNCH(dequantize_to_f16);
            gemm_ex(tile, rows, y.data + r0);
        }
    }

    std::shared_ptr<const CudaWeights> weights_;
    int device_ = 0;
    cudaStream_t stream_ = nullptr;
    cublasHandle_t cublas_ = nullptr;
    Scratch q8_, x16_, tile_, partial_, tokens_, freq_;
};

}  // namespace
}  // namespace genie::cuda

namespace genie::backend {

ScratchNeeds cuda_scratch_needs(const ScratchShape& s) noexcept {
    const uint64_t batch = static_cast<uint64_t>(std::max<int64_t>(1, s.batch));
    const uint64_t row = static_cast<uint64_t>(s.max_row);
    ScratchNeeds n;
    n.scratch = 4 * static_cast<uint64_t>(s.n_vocab);  // the logits row on the device (read_row copies it out)
    // Q8_1 activations of a decode step (up to 8 rows), and for prefill (batches over 8
    // tokens) the F16 activations and one F16 weight tile (kTileElements at most).
    n.scratch += 8 * row * 36 / 32;
    if (batch > 8)
        n.scratch += batch * row * 2 +
                     2 * std::min<uint64_t>(static_cast<uint64_t>(s.max_weight_elements), static_cast<uint64_t>(cuda::kTileElements));
    n.scratch += uint64_t{1} << 20;  // attention partials, token ids, RoPE factors
    n.device_overhead = uint64_t{384} << 20;  // context + cuBLAS handle/workspace + kernel images
    return n;
}

std::unique_ptr<Backend> make_cuda_backend(std::shared_ptr<const DeviceWeights> weights) {
    auto cuda_weights = std::dynamic_pointer_cast<const cuda::CudaWeights>(weights);
    if (!cuda_weights) throw Error(ErrorCode::InvalidArgument, "make_cuda_backend: the weights were not made by cuda_load_weights");
    return std::make_unique<cuda::CudaBackend>(std::move(cuda_weights));
}

}  // namespace genie::backend
