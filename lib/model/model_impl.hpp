// What a loaded genie::Model holds.
#pragma once

#include "backend/device.hpp"
#include "gguf/gguf_reader.hpp"
#include "model/hparams.hpp"
#include "model/weights.hpp"

#include <genie/chat.hpp>
#include <genie/model.hpp>
#include <genie/tokenizer.hpp>

#include <memory>
#include <mutex>
#include <string>

namespace genie {

struct Model::Impl {
    Impl(gguf::Reader r, model::HParams hp, model::Weights w, Tokenizer t)
        : reader(std::move(r)), hparams(std::move(hp)), weights(std::move(w)), tokenizer(std::move(t)) {}

    gguf::Reader reader;  // owns the mapping the weights point into
    model::HParams hparams;
    model::Weights weights;
    Tokenizer tokenizer;
    ModelInfo info;
    ModelOptions options;
    double load_ms = 0;
    std::string chat_template_source;  // tokenizer.chat_template, "" when absent

    /// The compute backend chosen at load (Auto resolved) and, for a device backend, the
    /// tensor data made reachable by the device (backend::place_weights; shared by every
    /// session; null on the CPU).
    BackendKind backend = BackendKind::Cpu;
    std::shared_ptr<backend::DeviceWeights> device_weights;
    /// Bytes the model holds outside the reclaimable page cache (device, pinned or read
    /// weights), which a free-memory budget no longer shows (the memory planner adds them).
    uint64_t device_held_bytes() const noexcept { return device_weights || !reader.is_mapped() ? info.weight_bytes : 0; }

    /// runtime::model_fingerprint's cache (lib/runtime/kv_file.cpp): computed once, on first use.
    mutable std::once_flag fingerprint_once;
    mutable uint64_t fingerprint_value = 0;

    /// The parsed chat template (ChatML when the GGUF has none), parsed on first use and
    /// shared by every session; thread-safe. Throws the parse error on each call.
    const ChatTemplate& chat_template() const {
        std::call_once(template_once_, [this] {
            try {
                parsed_template_ = std::make_shared<const ChatTemplate>(
                    chat_template_source.empty() ? ChatTemplate::chatml() : ChatTemplate(chat_template_source));
            } catch (...) {
                template_error_ = std::current_exception();
            }
        });
        if (template_error_) std::rethrow_exception(template_error_);
        return *parsed_template_;
    }

private:
    mutable std::once_flag template_once_;
    mutable std::shared_ptr<const ChatTemplate> parsed_template_;
    mutable std::exception_ptr template_error_;
};

}  // namespace genie
