// libgenie: the memory planner. Before anything is allocated, what running a model
// with a context takes (weights, KV cache, scratch, CUDA context overhead, a safety
// margin) is added up and checked against a budget (docs/cuda.md).
#pragma once

#include <genie/export.h>
#include <genie/model.hpp>
#include <genie/session.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

namespace genie {

/// What a model + session will take, and the budget it is checked against.
struct MemoryPlan {
    BackendKind backend = BackendKind::Cpu;  ///< the backend planned for (Auto resolved)
    std::string memory;         ///< where it lives: "host memory" or the CUDA device
    int32_t context_length = 0;  ///< the context planned (0 and kLargestContext resolved)
    int32_t n_ctx_train = 0;     ///< the model's training context (the cap of max_context_that_fits)
    KvType kv_type = KvType::F16;
    int32_t batch_size = 0;      ///< tokens per forward pass the scratch is sized for
    uint64_t weights = 0;        ///< tensor bytes (host: the mapping; CUDA: device or registered memory)
    uint64_t kv = 0;             ///< the KV cache of context_length tokens
    uint64_t kv_per_token = 0;
    uint64_t scratch = 0;        ///< activations and backend scratch of one batch
    uint64_t device_overhead = 0;  ///< CUDA context, cuBLAS workspace, kernel images (0 on the CPU)
    uint64_t margin = 0;         ///< safety margin
    uint64_t total = 0;          ///< weights + kv + scratch + device_overhead + margin
    uint64_t budget = 0;         ///< what may be used
    std::string budget_source;   ///< "memory_budget_bytes", "MemAvailable (/proc/meminfo)", "cudaMemGetInfo free" ...
    /// The largest context whose plan fits the budget, at most n_ctx_train; 0 when not even
    /// one token fits.
    int32_t max_context_that_fits = 0;

    bool fits() const noexcept { return total <= budget; }
    /// A small table of the above (one line per item, sizes in MiB/GiB).
    GENIE_API std::string to_string() const;
};

/// Plans running the model file `model` with `session` options, reading only its GGUF
/// header (no weights are touched). Throws like Model::load for a bad file; never throws
/// for an over-budget plan (see MemoryPlan::fits).
GENIE_API MemoryPlan plan_memory(const std::filesystem::path& model, const ModelOptions& options = {},
                                 const SessionOptions& session = {});
/// The same for a loaded model (its memory_budget_bytes and backend).
GENIE_API MemoryPlan plan_memory(const Model& model, const SessionOptions& session = {});

}  // namespace genie
