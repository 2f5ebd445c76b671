#include "model/memory_plan.hpp"

#include "backend/backend.hpp"
#include "backend/device.hpp"
#include "model/model_impl.hpp"

#include <genie/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace genie {

namespace {

std::string size_text(uint64_t bytes) {
    const double b = static_cast<double>(bytes);
    if (bytes >= (uint64_t{1} << 30)) return fmt::format("{:.2f} GiB", b / (1024.0 * 1024.0 * 1024.0));
    if (bytes >= (uint64_t{1} << 20)) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024.0));
    if (bytes >= (uint64_t{1} << 10)) return fmt::format("{:.1f} KiB", b / 1024.0);
    return fmt::format("{} B", bytes);
}

const char* kv_name(KvType t) {
    switch (t) {
        case KvType::F16: return "F16";
        case KvType::F32: return "F32";
        case KvType::Q8_0: return "Q8_0";
    }
    return "?";
}

}  // namespace

std::string MemoryPlan::to_string() const {
    std::string s = fmt::format("memory plan: {} backend, {}; context {} tokens, KV {}, batch {}\n",
                                backend::backend_name(backend), memory, context_length, kv_name(kv_type),
                                batch_size);
    s += fmt::format("  weights          {:>12}\n", size_text(weights));
    s += fmt::format("  KV cache         {:>12}  ({} per token)\n", size_text(kv), size_text(kv_per_token));
    s += fmt::format("  scratch          {:>12}\n", size_text(scratch));
    s += fmt::format("  device overhead  {:>12}\n", size_text(device_overhead));
    s += fmt::format("  margin           {:>12}\n", size_text(margin));
    s += fmt::format("  total            {:>12}\n", size_text(total));
    s += fmt::format("  budget           {:>12}  ({})\n", size_text(budget), budget_source);
    s += fmt::format("  fits: {}; largest context that fits: {} (training context {})", fits() ? "yes" : "NO",
                     max_context_that_fits, n_ctx_train);
    return s;
}

namespace model {

PlanModel plan_model(const gguf::Reader& reader) {
    PlanModel m;
    m.hp = model::read_hparams(reader);
    const gguf::TensorInfo* embd = reader.find_tensor("token_embd.weight");
    if (!embd) throw Error(ErrorCode::Format, fmt::format("'{}': tensor 'token_embd.weight' is missing", reader.path()));
    if (embd->shape.size() != 2 || embd->shape[1] <= 0)
        throw Error(ErrorCode::Format, fmt::format("'{}': tensor 'token_embd.weight' must be 2-D, has shape {}", reader.path(),
                                                   embd->shape_string()));
    m.hp.n_vocab = static_cast<int32_t>(embd->shape[1]);
    for (const auto& t : reader.tensors()) {
        m.weight_bytes += t.size_bytes;
        if (t.shape.size() >= 2) {
            m.max_n_in = std::max(m.max_n_in, t.shape[0]);
            m.max_weight_elements = std::max(m.max_weight_elements, t.element_count());
        }
    }
    return m;
}

PlanTarget plan_target(BackendKind backend, uint64_t budget_bytes, uint64_t held) {
    PlanTarget t;
    t.backend = backend;
    const backend::DeviceMemory device = backend::device_memory_info(backend);  // Unsupported / Device
    t.memory = device.description;
    if (budget_bytes > 0) {
        t.budget = budget_bytes;
        t.budget_source = "memory_budget_bytes";
    } else {
        t.budget = device.free + held;
        t.budget_source =
            held > 0 ? fmt::format("{} + {} held by the model", device.free_source, size_text(held)) : device.free_source;
    }
    return t;
}

MemoryPlan plan_for_context(const PlanModel& m, const PlanTarget& target, int32_t context_length, KvType kv_type,
                            int32_t batch_size) {
    const model::HParams& hp = m.hp;
    MemoryPlan p;
    p.backend = target.backend;
    p.memory = target.memory;
    p.context_length = context_length;
    p.n_ctx_train = hp.n_ctx_train;
    p.kv_type = kv_type;
    p.batch_size = std::min(batch_size, context_length);
    p.budget = target.budget;
    p.budget_source = target.budget_source;
    p.weights = m.weight_bytes;
    backend::KvLayout one{hp.n_layer, 1, hp.n_head_kv, hp.head_dim_k, kv_type};
    p.kv_per_token = one.bytes();
    backend::KvLayout all = one;
    all.n_ctx = context_length;
    p.kv = all.bytes();

    // The forward pass's activations (lib/model/forward.cpp) for a batch of b tokens.
    const uint64_t b = static_cast<uint64_t>(std::max(1, p.batch_size));
    const uint64_t q_dim = static_cast<uint64_t>(hp.n_head) * hp.head_dim_k;
    const uint64_t kv_dim = static_cast<uint64_t>(hp.n_head_kv) * hp.head_dim_k;
    const uint64_t max_in = static_cast<uint64_t>(std::max<int64_t>(m.max_n_in, hp.n_ff));
    // q, k, v, attn share one region with gate, up (never live together).
    const uint64_t layer_cols = std::max(2 * q_dim + 2 * kv_dim, 2 * static_cast<uint64_t>(hp.n_ff));
    uint64_t scratch = 4 * (b * (2 * static_cast<uint64_t>(hp.n_embd) + layer_cols) + static_cast<uint64_t>(hp.n_embd));
    scratch += 4 * static_cast<uint64_t>(hp.n_vocab);  // the session's logits (host)
    // What the backend needs beyond these activations (its own buffers, a device's fixed cost).
    backend::ScratchShape shape;
    shape.batch = static_cast<int64_t>(b);
    shape.context_length = context_length;
    shape.max_row = static_cast<int64_t>(max_in);
    shape.max_weight_elements = m.max_weight_elements;
    shape.n_vocab = hp.n_vocab;
    shape.n_head = hp.n_head;
    shape.n_head_kv = hp.n_head_kv;
    const backend::ScratchNeeds needs = backend::scratch_bytes(target.backend, shape);
    scratch += needs.scratch;
    p.device_overhead = needs.device_overhead;
    p.scratch = scratch;
    const uint64_t sum = p.weights + p.kv + p.scratch + p.device_overhead;
    p.margin = (uint64_t{64} << 20) + sum / 50;
    p.total = sum + p.margin;
    return p;
}

MemoryPlan plan(const PlanModel& m, const PlanTarget& target, const SessionOptions& s) {
    if (s.context_length < kLargestContext)
        throw Error(ErrorCode::InvalidArgument, fmt::format("context_length must be >= 0 or kLargestContext, not {}", s.context_length));
    if (s.batch_size <= 0) throw Error(ErrorCode::InvalidArgument, "batch_size must be > 0");
    const int32_t train = std::max(1, m.hp.n_ctx_train);
    auto fits = [&](int32_t c) { return plan_for_context(m, target, c, s.kv_type, s.batch_size).fits(); };
    int32_t max_fit = 0;
    if (fits(1)) {
        int32_t lo = 1, hi = train;  // fits(lo); find the largest
        while (lo < hi) {
            const int32_t mid = lo + (hi - lo + 1) / 2;
            if (fits(mid)) lo = mid;
            else hi = mid - 1;
        }
        max_fit = lo;
    }
    int32_t context = s.context_length;
    if (context == 0) {
        context = std::min(train, 4096);
        if (max_fit > 0) context = std::min(context, max_fit);
    } else if (context == kLargestContext) {
        context = std::max(1, max_fit);
    }
    MemoryPlan p = plan_for_context(m, target, context, s.kv_type, s.batch_size);
    p.max_context_that_fits = max_fit;
    return p;
}

void require_fits(const MemoryPlan& p, const std::string& what) {
    if (p.fits()) return;
    const std::string hint = p.max_context_that_fits > 0
                                 ? fmt::format("the largest context that fits is {} tokens", p.max_context_that_fits)
                                 : std::string("not even a context of 1 token fits");
    throw Error(ErrorCode::OutOfMemory, fmt::format("{} does not fit the memory budget ({} needed, {} available; {}):\n{}", what,
                                                    size_text(p.total), size_text(p.budget), hint, p.to_string()));
}

}  // namespace model

MemoryPlan plan_memory(const std::filesystem::path& path, const ModelOptions& options, const SessionOptions& session) {
    const gguf::Reader reader = gguf::Reader::open(path);
    const model::PlanModel m = model::plan_model(reader);
    const model::PlanTarget target =
        model::plan_target(backend::resolve_backend(options.backend), options.memory_budget_bytes);
    return model::plan(m, target, session);
}

MemoryPlan plan_memory(const Model& model, const SessionOptions& session) {
    const Model::Impl& impl = model.impl();
    const model::PlanTarget target = model::plan_target(impl.backend, impl.options.memory_budget_bytes, impl.device_held_bytes());
    return model::plan(model::plan_model(impl.reader), target, session);
}

}  // namespace genie
