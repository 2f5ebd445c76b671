// The Backend interface: the dozen ops a decoder-only transformer needs. The forward
// pass (lib/model/forward.cpp) is written once against it; backends never know which
// architecture runs. Activations are row-major float32 matrices in backend memory.
#pragma once

#include <genie/error.hpp>
#include <genie/session.hpp>
#include <genie/types.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace genie::backend {

/// A weight matrix as stored in the GGUF: `n_out` rows of `n_in` elements of `type`
/// (ggml's ne0 = n_in is contiguous). 1-D weights (norms, biases) have n_out = 1.
struct Weight {
    std::string name;
    DType type = DType::F32;
    int64_t n_in = 0;
    int64_t n_out = 0;
    const void* data = nullptr;  ///< in the model's mapping (host) or device memory
    size_t row_bytes = 0;
    bool empty() const noexcept { return data == nullptr; }
};

/// A float32 matrix [rows, cols], row-major, in backend memory.
struct Tensor {
    float* data = nullptr;
    int64_t rows = 0;
    int64_t cols = 0;
    float* row(int64_t r) const noexcept { return data + r * cols; }
    /// The same memory seen as [rows * cols / new_cols, new_cols] (e.g. per-head rows).
    Tensor reshaped(int64_t new_cols) const noexcept { return {data, rows * cols / new_cols, new_cols}; }
};

enum class RopeMode { Normal, Neox };

/// Rotary position embedding parameters (ggml_rope_ext's arguments).
struct RopeParams {
    RopeMode mode = RopeMode::Normal;
    int32_t n_rot = 0;       ///< dims rotated per head (<= head size)
    float freq_base = 10000.0f;
    float freq_scale = 1.0f;
    float ext_factor = 0.0f;
    float attn_factor = 1.0f;
    float beta_fast = 32.0f;
    float beta_slow = 1.0f;
    int32_t n_ctx_orig = 0;
    const float* freq_factors = nullptr;  ///< optional [n_rot / 2], host memory
    bool operator==(const RopeParams&) const = default;
};

/// Shape of a KV cache: per layer, n_ctx cells of n_head_kv * head_dim keys and values.
struct KvLayout {
    int32_t n_layer = 0;
    int32_t n_ctx = 0;
    int32_t n_head_kv = 0;
    int32_t head_dim = 0;
    KvType type = KvType::F16;
    size_t bytes() const noexcept;
    /// Bytes of one cell's keys (or values) of one layer: n_head_kv * head_dim elements
    /// (F16: 2 bytes each, F32: 4, Q8_0: 34 bytes per 32).
    size_t row_bytes() const noexcept {
        const size_t n = static_cast<size_t>(n_head_kv) * static_cast<size_t>(head_dim);
        switch (type) {
            case KvType::F32: return n * 4;
            case KvType::Q8_0: return n / 32 * 34;
            case KvType::F16: break;
        }
        return n * 2;
    }
};

/// Backend-owned KV storage.
class KvCache {
public:
    virtual ~KvCache() = default;
    const KvLayout& layout() const noexcept { return layout_; }
    /// Copies cells [first, first + n) of `layer` to host memory: n * layout().row_bytes()
    /// bytes of keys to k_dst and of values to v_dst, in the cache's own element format
    /// (KV persistence, lib/runtime/kv_file.cpp). Default: Unsupported.
    virtual void read_cells(int32_t /*layer*/, int32_t /*first*/, int32_t /*n*/, void* /*k_dst*/, void* /*v_dst*/) const {
        throw Error(ErrorCode::Unsupported, "this backend cannot read its KV cache back");
    }
    /// Overwrites cells [first, first + n) of `layer` with bytes read_cells produced.
    virtual void write_cells(int32_t /*layer*/, int32_t /*first*/, int32_t /*n*/, const void* /*k_src*/,
                             const void* /*v_src*/) {
        throw Error(ErrorCode::Unsupported, "this backend cannot restore a KV cache");
    }

protected:
    explicit KvCache(const KvLayout& layout) : layout_(layout) {}
    KvLayout layout_;
};

/// Backend-owned activation memory (a scratch arena for one session).
class Workspace {
public:
    virtual ~Workspace() = default;
    /// A tensor of [rows, cols] floats from the arena (valid until reset()).
    virtual Tensor allocate(int64_t rows, int64_t cols) = 0;
    /// Frees every tensor handed out since the last reset.
    virtual void reset() noexcept = 0;
    /// Bytes the arena holds (kept across resets); 0 when the backend does not say.
    virtual size_t bytes() const noexcept { return 0; }
};

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;

    virtual std::unique_ptr<KvCache> create_kv_cache(const KvLayout& layout) = 0;
    virtual std::unique_ptr<Workspace> create_workspace() = 0;

    /// out[i] = row tokens[i] of `table`, as floats.              out: [n_tokens, n_in]
    virtual void embed(const Weight& table, std::span<const int32_t> tokens, Tensor& out) = 0;
    /// y[r] = W x[r] (each x row quantized to the weight's dot type as ggml does).
    ///                                                 x: [n, w.n_in]  y: [n, w.n_out]
    virtual void matmul(const Weight& w, const Tensor& x, Tensor& y) = 0;
    /// One input, several weights (q/k/v, gate/up): *outs[i].y = x W_i^T, the same numbers
    /// as one matmul each. A backend may fuse them (the CPU quantizes x once and splits all
    /// output rows over its threads in one dispatch); the default runs them one by one.
    struct MatmulOut {
        const Weight* w;
        Tensor* y;
    };
    virtual void matmul_shared_input(const Tensor& x, std::span<const MatmulOut> outs) {
        for (const MatmulOut& o : outs) matmul(*o.w, x, *o.y);
    }
    /// y[r] += bias                                                    y: [n, bias.n_in]
    virtual void add_bias(Tensor& y, const Weight& bias) = 0;
    /// y[r] = x[r] / rms(x[r]) * gamma (ggml: rms_norm then mul)   x, y: [n, gamma.n_in]
    virtual void rms_norm(const Tensor& x, const Weight& gamma, float eps, Tensor& y) = 0;
    /// Rotates each head of x in place; row r is at position first_pos + r.
    ///                                                   x: [n, n_heads * head_dim]
    virtual void rope(Tensor& x, int32_t n_heads, int32_t head_dim, int32_t first_pos, const RopeParams& params) = 0;
    /// Stores k and v of n tokens at cells [first_pos, first_pos + n) of `layer`.
    virtual void kv_store(KvCache& cache, int32_t layer, const Tensor& k, const Tensor& v, int32_t first_pos) = 0;
    /// Causal attention of n queries at positions first_pos.. over the cache cells
    /// [0, first_pos + r] of `layer` (grouped-query: query head h uses kv head
    /// h / (n_head / n_head_kv)); scores scaled by `scale` before the softmax. With
    /// window > 0 (a sliding-window layer) the query at position p sees the cells
    /// [max(0, p - window + 1), p] only (llama.cpp's standard SWA mask).
    ///                                                       q, out: [n, n_head * head_dim]
    virtual void attention(const Tensor& q, const KvCache& cache, int32_t layer, int32_t first_pos, int32_t n_head,
                           float scale, int32_t window, Tensor& out) = 0;
    /// out = silu(gate) * up                                   all: [n, n_ff]
    virtual void swiglu(const Tensor& gate, const Tensor& up, Tensor& out) = 0;
    /// out = gelu_tanh(gate) * up with gelu as ggml's CPU computes it: 0 for gate <= -10,
    /// gate for gate >= 10, else gelu of gate rounded to F16, rounded to F16
    /// (quant/activations.hpp, gelu_f16_table_value).        all: [n, n_ff]
    virtual void geglu(const Tensor& gate, const Tensor& up, Tensor& out) = 0;
    /// x *= s (one float multiply per element)                     x: [n, cols]
    virtual void scale(Tensor& x, float s) = 0;
    /// x += y                                                     x, y: [n, cols]
    virtual void add(Tensor& x, const Tensor& y) = 0;
    /// Copies row `row` of t to host memory.
    virtual void read_row(const Tensor& t, int64_t row, float* host_dst) = 0;
    /// Whether ops take tensors in any host memory (the CPU backend): the forward pass then
    /// has the output projection write the logits straight into the caller's buffer.
    virtual bool host_tensors() const noexcept { return false; }
};

/// The CPU backend with `threads` worker threads (0 = hardware concurrency). Other
/// backends are opened through backend/device.hpp (open_backend).
std::unique_ptr<Backend> make_cpu_backend(int32_t threads);

}  // namespace genie::backend
