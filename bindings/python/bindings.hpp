// Registration functions of the `genie` Python module, one per source file, and the
// wrapper types shared between them.
#pragma once

#include <genie/chat.hpp>
#include <genie/constraint.hpp>
#include <genie/error.hpp>
#include <genie/model.hpp>
#include <genie/sampler.hpp>
#include <genie/session.hpp>

#include <pybind11/pybind11.h>

#include <atomic>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace genie::python {

/// genie.Error and its subclasses, and the genie::Error -> Python translator (errors.cpp).
void register_errors(pybind11::module_& m);
/// quantize / dequantize / can_quantize / can_dequantize (quant.cpp).
void register_quant(pybind11::module_& m);
/// genie.Model (model.cpp).
void register_model(pybind11::module_& m);
/// genie.Sampler (sampler.cpp).
void register_sampler(pybind11::module_& m);
/// genie.Session, genie.GenerateResult, genie.Timings, genie.Piece, genie.Stream (session.cpp).
void register_session(pybind11::module_& m);
/// genie.Constraint, genie.ToolCall, genie.ChatResult, tool_call_schema, json_matches_schema (chat.cpp).
void register_chat(pybind11::module_& m);
/// genie.Engine (engine.cpp).
void register_engine(pybind11::module_& m);

// ---- shared by Model, Session and Engine

/// 'auto', 'cpu', 'cuda' (InvalidArgument otherwise; model.cpp).
BackendKind parse_backend(const std::string& name);

/// Sampling keywords of generate()/stream(); unset ones keep SamplerOptions' defaults.
struct SamplingArgs {
    std::optional<float> temperature, top_p, min_p, typical_p, repeat_penalty, frequency_penalty, presence_penalty;
    std::optional<int32_t> top_k, penalty_last_n;
    std::optional<uint32_t> seed;
    bool any() const {
        return temperature || top_p || min_p || typical_p || repeat_penalty || frequency_penalty || presence_penalty ||
               top_k || penalty_last_n || seed;
    }
    SamplerOptions options() const {
        SamplerOptions o;
        if (temperature) o.temperature = *temperature;
        if (top_k) o.top_k = *top_k;
        if (top_p) o.top_p = *top_p;
        if (min_p) o.min_p = *min_p;
        if (seed) o.seed = *seed;
        if (typical_p) o.typical_p = *typical_p;
        if (penalty_last_n) o.penalty_last_n = *penalty_last_n;
        if (repeat_penalty) o.repeat_penalty = *repeat_penalty;
        if (frequency_penalty) o.frequency_penalty = *frequency_penalty;
        if (presence_penalty) o.presence_penalty = *presence_penalty;
        return o;
    }
};

// ---- shared by Session.chat and Engine.chat (session.cpp)

/// 'stop', 'length', 'cancelled', 'timeout'.
const char* finish_name(FinishReason reason);
/// A piece callback that calls the Python `callback(piece)` with the GIL (None: no callback);
/// an exception it raises is kept in `error` and stops the generation.
PieceCallback python_piece_callback(const pybind11::object& callback, std::exception_ptr& error);
/// The tools / tool_choice keywords: tools go to options.tools_json; `forced` for
/// 'required' or a named function (InvalidArgument without tools or for a bad choice).
struct ToolChoiceArgs {
    bool parse_tools = true;  // false for 'none'
    bool forced = false;
    std::string function;     // a named function, "" = any offered tool
};
ToolChoiceArgs tool_choice_args(const pybind11::object& tools, const pybind11::object& tool_choice, ChatOptions& options);
/// A chat's answer as Session.chat returns it: text, reasoning, tool_calls, rejected_tool_calls,
/// finish_reason, prompt_tokens, completion_tokens, generation.
pybind11::dict chat_result_dict(const ChatResult& result, bool parse_tools);

/// genie.Constraint: a compiled constraint (JSON schema, any object, or GBNF grammar).
struct PyConstraint {
    std::shared_ptr<const JsonConstraint> constraint;
    std::string kind;  // "json_schema", "json_object", "grammar"
};

/// A list of message dicts ({'role', 'content', 'tool_calls', 'tool_call_id', 'name'}) as
/// ChatMessages; tool_calls may be a list (dumped as JSON) or a JSON string (chat.cpp).
std::vector<ChatMessage> messages_from_python(const pybind11::list& messages);

/// Raises the genie.Error subclass of `code` (used by the bindings for their own checks).
[[noreturn]] void raise_error(ErrorCode code, const std::string& message);

/// Marks an object in use for one call; a second concurrent call raises genie.BusyError.
/// (The GIL is released during generation, so two Python threads could otherwise run
/// generate on one Session at once.)
class BusyFlag {
public:
    void acquire(const char* what) {
        bool expected = false;
        if (!busy_.compare_exchange_strong(expected, true))
            raise_error(ErrorCode::Busy, std::string(what) + " is in use by another call (another thread or an "
                                                             "unfinished stream)");
    }
    void release() noexcept { busy_.store(false); }

private:
    std::atomic<bool> busy_{false};
};

/// Holds a BusyFlag for a scope.
class BusyScope {
public:
    BusyScope(BusyFlag& flag, const char* what) : flag_(flag) { flag_.acquire(what); }
    ~BusyScope() { flag_.release(); }
    BusyScope(const BusyScope&) = delete;
    BusyScope& operator=(const BusyScope&) = delete;

private:
    BusyFlag& flag_;
};

/// genie.Sampler: a genie::Sampler plus its in-use flag.
struct PySampler {
    explicit PySampler(const SamplerOptions& options) : sampler(options) {}
    Sampler sampler;
    BusyFlag busy;
};

}  // namespace genie::python
