// The memory planner's internals (model layer: it reads only the GGUF header and the
// backend facts; the public API is include/genie/memory_plan.hpp).
#pragma once

#include "gguf/gguf_reader.hpp"
#include "model/hparams.hpp"

#include <genie/memory_plan.hpp>

#include <cstdint>
#include <string>

namespace genie::model {

/// The model facts a plan needs, all from the GGUF header.
struct PlanModel {
    model::HParams hp;             ///< with n_vocab set
    uint64_t weight_bytes = 0;     ///< bytes of tensor data
    int64_t max_n_in = 0;          ///< longest weight row (activation quantization scratch)
    int64_t max_weight_elements = 0;  ///< largest 2-D weight (a GPU backend's weight tile)
};
PlanModel plan_model(const gguf::Reader& reader);

/// The memory a plan is checked against.
struct PlanTarget {
    BackendKind backend = BackendKind::Cpu;  ///< resolved (never Auto)
    std::string memory;                      ///< "host memory" / the device (backend::device_memory_info)
    uint64_t budget = 0;
    std::string budget_source;
};
/// `backend` must be resolved (backend::resolve_backend). budget_bytes = 0: the free memory
/// of that target, plus `held` (bytes the model already holds there, e.g. uploaded weights).
PlanTarget plan_target(BackendKind backend, uint64_t budget_bytes, uint64_t held = 0);

/// The plan of exactly `context_length` (> 0) tokens, max_context_that_fits left 0.
MemoryPlan plan_for_context(const PlanModel& model, const PlanTarget& target, int32_t context_length, KvType kv_type,
                            int32_t batch_size);
/// The plan for `session`'s options: context_length resolved (0: min(training, 4096)
/// reduced to what fits; kLargestContext: the largest that fits), max_context_that_fits set.
/// Throws InvalidArgument for a context_length < -1 or batch_size <= 0.
MemoryPlan plan(const PlanModel& model, const PlanTarget& target, const SessionOptions& session);
/// Throws genie::Error OutOfMemory ("<what> does not fit ...: <plan>") unless plan.fits().
void require_fits(const MemoryPlan& plan, const std::string& what);

}  // namespace genie::model
