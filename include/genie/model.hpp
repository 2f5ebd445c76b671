// libgenie: a loaded model (weights, vocabulary, hyper-parameters).
#pragma once

#include <genie/export.h>
#include <genie/tokenizer.hpp>
#include <genie/types.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

namespace genie {

/// Which compute backend runs a model.
enum class BackendKind {
    Auto,  ///< CUDA when a device is present and the build has it, else CPU
    Cpu,   ///< the CPU backend (always available)
    Cuda,  ///< the CUDA backend (error Unsupported/Device when unavailable)
};

/// Options of Model::load. Every field has a safe default.
struct ModelOptions {
    /// Compute backend.
    BackendKind backend = BackendKind::Auto;
    /// Called on the loading thread with the fraction done (0..1, increasing, ending at
    /// exactly 1 on success); return false to abandon the load (genie::Error Cancelled).
    std::function<bool(float fraction)> progress;
    /// true: the weights are used in place from a read-only mmap of the file (no copy; the
    /// page cache is the only copy). The file must then not be truncated or rewritten while
    /// the model is loaded: Session creation and each generate/evaluate check it and throw
    /// genie::Error Io "model file changed on disk"; only a truncation that races a running
    /// forward pass can still fault (SIGBUS). A file replaced by rename is harmless.
    /// false: the file is read into anonymous memory at load (llama.cpp's --no-mmap): more
    /// resident memory, immune to any change of the file (docs/reliability.md).
    bool use_mmap = true;
    /// Bytes the model and a session of it may use (the memory planner, docs/cuda.md;
    /// genie::plan_memory). 0 = what is free now: MemAvailable (/proc/meminfo) for the CPU
    /// (or the headroom under the process's cgroup memory limit when that is smaller),
    /// cudaMemGetInfo's free memory for CUDA. Model::load (weights) and each Session (weights
    /// + KV cache + scratch) check their plan against it before allocating: OutOfMemory, the
    /// message showing the plan and the largest context that fits.
    uint64_t memory_budget_bytes = 0;
};

/// Facts about a loaded model, read from its GGUF metadata.
struct ModelInfo {
    std::string architecture;   ///< "llama", "qwen2", "qwen3", "gemma3"
    std::string name;           ///< general.name, or "" when absent
    uint64_t parameter_count = 0;
    uint64_t file_size = 0;     ///< bytes
    uint64_t weight_bytes = 0;  ///< bytes of tensor data
    /// Bytes of tensor data one decoded token reads: all of it except the rows of an
    /// untied token-embedding table that the token does not look up (tied, the output
    /// projection reads the whole table). Decode's roofline is memory bandwidth /
    /// decode_bytes tokens per second (docs/performance.md).
    uint64_t decode_bytes = 0;
    int32_t n_vocab = 0;
    int32_t n_ctx_train = 0;    ///< context length the model was trained with
    int32_t n_embd = 0;
    int32_t n_layer = 0;
    int32_t n_head = 0;
    int32_t n_head_kv = 0;
    int32_t head_dim = 0;
    int32_t n_ff = 0;
};

/// A model loaded from a GGUF file: immutable after load, its weights used in place
/// from a read-only mmap (no copy; see ModelOptions::use_mmap). Copies are cheap handles to the same model; a
/// Model may be used by any number of threads and Sessions at once, and stays alive
/// as long as any copy or Session refers to it.
class GENIE_API Model {
public:
    /// Loads and validates `path`. Throws genie::Error: NotFound (file), Format (corrupt
    /// GGUF, missing tensor, wrong tensor shape), Unsupported (unknown architecture,
    /// quant type or rope scaling this build cannot run).
    static Model load(const std::filesystem::path& path, const ModelOptions& options = {});

    const ModelInfo& info() const noexcept;
    /// The model's tokenizer (shares the model's vocabulary).
    const Tokenizer& tokenizer() const noexcept;
    /// Milliseconds Model::load took.
    double load_time_ms() const noexcept;
    /// The GGUF's chat template (`tokenizer.chat_template`, Jinja), or "" when it has none.
    const std::string& chat_template() const noexcept;

    struct Impl;
    /// Internal: the implementation (used by libgenie's own layers).
    const Impl& impl() const noexcept { return *impl_; }
    std::shared_ptr<const Impl> shared_impl() const noexcept { return impl_; }

private:
    explicit Model(std::shared_ptr<const Impl> impl) noexcept : impl_(std::move(impl)) {}
    std::shared_ptr<const Impl> impl_;
};

}  // namespace genie
