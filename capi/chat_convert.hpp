// Internal to the C ABI (capi/*.cpp): the shared guard that turns exceptions into a status
// and the thread's last-error message, and the conversion of a genie_chat_request /
// genie_chat_result shared by genie_session_chat (genie_c.cpp) and genie_engine_chat
// (genie_engine_c.cpp).
#pragma once

#include <genie/chat.hpp>
#include <genie/constraint.hpp>
#include <genie/error.hpp>
#include <genie/genie.h>
#include <genie/sampler.hpp>
#include <genie/session.hpp>

#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace genie::capi {

/// Frees `n` tool calls of a genie_chat_result and the array (NULL is a no-op).
inline void free_tool_calls(genie_tool_call* calls, size_t n) noexcept {
    if (!calls) return;
    for (size_t i = 0; i < n; ++i) {
        std::free(calls[i].id);
        std::free(calls[i].name);
        std::free(calls[i].arguments);
        std::free(calls[i].error);
    }
    std::free(calls);
}

// ---- defined in genie_c.cpp (they own the thread-local message and the log sink) -------
/// Records "function: message" as the calling thread's last error, logs it, returns status.
genie_status fail_call(const char* function, genie_status status, std::string_view message) noexcept;
/// Sends an INFO line to the installed log callback (if any).
void log_info(const char* message) noexcept;

/// The int a caller stored in an enum field of a struct it filled. C lets any int sit in
/// an enum object; in C++ loading an enum value outside the enumerators' range is
/// undefined behaviour (UBSan: "load of value 99, which is not a valid value for type"),
/// so such fields are read through their bytes and validated as ints.
template <class E>
int enum_field(const E& field) noexcept {
    static_assert(std::is_enum_v<E>);
    std::underlying_type_t<E> v;
    std::memcpy(&v, &field, sizeof v);
    return static_cast<int>(v);
}

/// Runs `body`; any exception becomes a status and the thread's last-error message.
template <class Body>
genie_status guarded_call(const char* function, Body&& body) noexcept {
    try {
        body();
        return GENIE_OK;
    } catch (const genie::Error& e) {
        const auto status = static_cast<genie_status>(e.code());
        return fail_call(function, status == GENIE_OK ? GENIE_INTERNAL : status, e.what());
    } catch (const std::bad_alloc&) {
        return fail_call(function, GENIE_OUT_OF_MEMORY, "out of memory");
    } catch (const std::exception& e) {
        return fail_call(function, GENIE_INTERNAL, std::string("unexpected exception: ") + e.what());
    } catch (...) {
        return fail_call(function, GENIE_INTERNAL, "unexpected exception of unknown type");
    }
}

[[noreturn]] inline void invalid_arg(const std::string& message) {
    throw genie::Error(genie::ErrorCode::InvalidArgument, message);
}

/// A versioned struct: version 1..current.
inline void check_struct_version(unsigned int version, unsigned int current, const char* name) {
    if (version == 0 || version > current)
        invalid_arg(std::string(name) + ": version " + std::to_string(version) +
                    " is not supported (this library knows 1.." + std::to_string(current) +
                    "; initialise it with the _INIT macro or _init function)");
}

inline std::string_view text_argument(const char* text, size_t len, const std::string& name) {
    if (!text && len != 0) invalid_arg(name + " is NULL but its length is not 0");
    return text ? std::string_view(text, len) : std::string_view();
}

/// A malloc'ed NUL-terminated copy (freed with genie_string_free).
inline char* malloc_string(std::string_view text) {
    char* out = static_cast<char*>(std::malloc(text.size() + 1));
    if (!out) throw std::bad_alloc();
    if (!text.empty()) std::memcpy(out, text.data(), text.size());
    out[text.size()] = '\0';
    return out;
}

inline genie::SamplerOptions sampler_options_from_c(const genie_sampler_options& o) {
    genie::SamplerOptions s;
    s.temperature = o.temperature;
    s.top_k = o.top_k;
    s.top_p = o.top_p;
    s.min_p = o.min_p;
    s.seed = o.seed;
    s.typical_p = o.typical_p;
    s.penalty_last_n = o.penalty_last_n;
    s.repeat_penalty = o.repeat_penalty;
    s.frequency_penalty = o.frequency_penalty;
    s.presence_penalty = o.presence_penalty;
    if (o.n_logit_bias != 0 && (!o.logit_bias_tokens || !o.logit_bias_values))
        invalid_arg("logit_bias_tokens / logit_bias_values are NULL but n_logit_bias is not 0");
    for (size_t i = 0; i < o.n_logit_bias; ++i) s.logit_bias.emplace_back(o.logit_bias_tokens[i], o.logit_bias_values[i]);
    return s;
}

inline genie_finish_reason finish_reason_to_c(genie::FinishReason reason) {
    switch (reason) {
        case genie::FinishReason::Stop: return GENIE_FINISH_STOP;
        case genie::FinishReason::Length: return GENIE_FINISH_LENGTH;
        case genie::FinishReason::Cancelled: return GENIE_FINISH_CANCELLED;
        case genie::FinishReason::Timeout: return GENIE_FINISH_TIMEOUT;
    }
    return GENIE_FINISH_ERROR;
}

/// A genie_chat_request checked and converted (everything validated before generation).
struct ChatCall {
    std::vector<genie::ChatMessage> messages;
    genie::ChatOptions options;  // constraint not set: the caller builds it for its tokenizer
    genie::SamplerOptions sampler;
    genie_response_format response_format = GENIE_RESPONSE_FORMAT_NONE;
    std::string schema;   // GENIE_RESPONSE_FORMAT_JSON_SCHEMA (non-empty then), or a forced tool call's
    std::string grammar;  // GENIE_RESPONSE_FORMAT_GRAMMAR (non-empty then)
    genie::JsonConstraintOptions constraint_options;
    bool parse_tools = true;  // false for GENIE_TOOL_CHOICE_NONE

    /// The constraint cache key (kind + text); "" when unconstrained.
    std::string constraint_key() const {
        switch (response_format) {
            case GENIE_RESPONSE_FORMAT_JSON_OBJECT: return "o:";
            case GENIE_RESPONSE_FORMAT_JSON_SCHEMA:
                return (constraint_options.max_whitespace == 1 ? "t:" : "s:") + schema;
            case GENIE_RESPONSE_FORMAT_GRAMMAR: return "g:" + grammar;
            default: return "";
        }
    }
    /// Builds the constraint of the call for `tokenizer` (nullptr when unconstrained).
    std::shared_ptr<const genie::JsonConstraint> build_constraint(const genie::Tokenizer& tokenizer) const {
        switch (response_format) {
            case GENIE_RESPONSE_FORMAT_JSON_OBJECT: return genie::JsonConstraint::any_object(tokenizer, constraint_options);
            case GENIE_RESPONSE_FORMAT_JSON_SCHEMA:
                return genie::JsonConstraint::from_schema(schema, tokenizer, constraint_options);
            case GENIE_RESPONSE_FORMAT_GRAMMAR: return genie::JsonConstraint::from_grammar(grammar, tokenizer, constraint_options);
            default: return nullptr;
        }
    }
};

/// Optional message text of genie_chat_turn_extra (NULL = absent).
inline std::string optional_text(const char* text) { return text ? std::string(text) : std::string(); }

inline ChatCall convert_chat_request(const genie_chat_request* request) {
    if (!request) invalid_arg("request must not be NULL");
    check_struct_version(request->version, GENIE_CHAT_REQUEST_VERSION, "genie_chat_request");
    const genie_chat_request& rq = *request;
    if (!rq.messages || rq.n_messages == 0) invalid_arg("request->messages must hold at least one message");
    ChatCall call;
    call.messages.reserve(rq.n_messages);
    for (size_t i = 0; i < rq.n_messages; ++i) {
        const genie_chat_turn& m = rq.messages[i];
        const std::string where = "request->messages[" + std::to_string(i) + "]";
        if (!m.role) invalid_arg(where + ".role is NULL");
        genie::ChatMessage message;
        message.role = m.role;
        message.content = std::string(text_argument(m.content, m.content_len, where + ".content"));
        if (rq.version >= 2 && rq.message_extras) {
            const genie_chat_turn_extra& x = rq.message_extras[i];
            message.tool_calls_json = optional_text(x.tool_calls_json);
            message.tool_call_id = optional_text(x.tool_call_id);
            message.name = optional_text(x.name);
        }
        call.messages.push_back(std::move(message));
    }
    if (rq.max_tokens < 0) invalid_arg("request->max_tokens must be >= 0");
    genie_sampler_options so = GENIE_SAMPLER_OPTIONS_INIT;
    if (rq.sampler) {
        check_struct_version(rq.sampler->version, GENIE_SAMPLER_OPTIONS_VERSION, "genie_sampler_options");
        so = *rq.sampler;
    }
    call.sampler = sampler_options_from_c(so);
    call.options.generate.max_tokens = rq.max_tokens;
    if (rq.n_stop != 0 && !rq.stop) invalid_arg("request->stop is NULL but n_stop is not 0");
    for (size_t i = 0; i < rq.n_stop; ++i) {
        if (!rq.stop[i]) invalid_arg("request->stop[" + std::to_string(i) + "] is NULL");
        call.options.generate.stop.emplace_back(rq.stop[i]);
    }
    switch (enum_field(rq.think)) {
        case GENIE_THINK_DEFAULT:
            if (enum_field(rq.response_format) != GENIE_RESPONSE_FORMAT_NONE) call.options.enable_thinking = false;
            break;
        case GENIE_THINK_ON: call.options.enable_thinking = true; break;
        case GENIE_THINK_OFF: call.options.enable_thinking = false; break;
        default: invalid_arg("request->think: unknown value " + std::to_string(enum_field(rq.think)));
    }
    call.options.tools_json = std::string(text_argument(rq.tools_json, rq.tools_json_len, "request->tools_json"));
    call.schema = std::string(text_argument(rq.json_schema, rq.json_schema_len, "request->json_schema"));
    const int response_format = enum_field(rq.response_format);
    switch (response_format) {
        case GENIE_RESPONSE_FORMAT_NONE:
        case GENIE_RESPONSE_FORMAT_JSON_OBJECT: break;
        case GENIE_RESPONSE_FORMAT_JSON_SCHEMA:
            if (call.schema.empty()) invalid_arg("request->json_schema is empty but response_format is JSON_SCHEMA");
            break;
        case GENIE_RESPONSE_FORMAT_GRAMMAR: break;  // checked below (version 2)
        default:
            invalid_arg("request->response_format: unknown value " + std::to_string(response_format));
    }
    if (response_format == GENIE_RESPONSE_FORMAT_GRAMMAR) {
        if (rq.version < 2) invalid_arg("request->response_format: GRAMMAR needs request version 2");
        call.grammar = std::string(text_argument(rq.grammar, rq.grammar_len, "request->grammar"));
        if (call.grammar.empty()) invalid_arg("request->grammar is empty but response_format is GRAMMAR");
    }
    call.response_format = static_cast<genie_response_format>(response_format);  // validated above
    if (rq.version >= 2) {
        if (rq.parallel_tool_calls < -1 || rq.parallel_tool_calls > 1)
            invalid_arg("request->parallel_tool_calls must be -1, 0 or 1, not " + std::to_string(rq.parallel_tool_calls));
        call.options.parallel_tool_calls = rq.parallel_tool_calls != 0;
        const int choice = enum_field(rq.tool_choice);
        switch (choice) {
            case GENIE_TOOL_CHOICE_AUTO: break;
            case GENIE_TOOL_CHOICE_NONE: call.parse_tools = false; break;
            case GENIE_TOOL_CHOICE_REQUIRED:
            case GENIE_TOOL_CHOICE_FUNCTION: {
                if (call.options.tools_json.empty()) invalid_arg("request->tool_choice asks for a tool call but tools_json is empty");
                if (choice == GENIE_TOOL_CHOICE_FUNCTION && (!rq.tool_choice_function || !*rq.tool_choice_function))
                    invalid_arg("request->tool_choice_function is required with GENIE_TOOL_CHOICE_FUNCTION");
                if (response_format != GENIE_RESPONSE_FORMAT_NONE)
                    invalid_arg("request->response_format and a forced tool_choice cannot both constrain the answer");
                call.schema = genie::tool_call_schema(
                    call.options.tools_json, choice == GENIE_TOOL_CHOICE_FUNCTION ? rq.tool_choice_function : "",
                    rq.parallel_tool_calls == 1);
                call.constraint_options = genie::tool_call_constraint_options();
                call.response_format = GENIE_RESPONSE_FORMAT_JSON_SCHEMA;
                if (enum_field(rq.think) == GENIE_THINK_DEFAULT) call.options.enable_thinking = false;
                break;
            }
            default: invalid_arg("request->tool_choice: unknown value " + std::to_string(choice));
        }
    }
    // Enforced by the generation loop (genie::GenerateOptions), finish reason Timeout.
    call.options.generate.idle_timeout_s = rq.idle_timeout_ms / 1000.0;
    call.options.generate.deadline_s = rq.deadline_ms / 1000.0;
    return call;
}

/// Hands pieces to a genie_piece_callback and remembers whether it asked to stop (finish
/// CANCELLED). The idle timeout and deadline are the generation loop's (finish Timeout).
class ChatStream {
public:
    using Clock = std::chrono::steady_clock;
    enum class Ended { No, Callback };

    ChatStream(genie_piece_callback callback, void* user) : callback_(callback), user_(user) {}

    /// The C++ callback; valid while *this lives.
    genie::PieceCallback callback() {
        return [this](const genie::Piece& piece) {
            if (callback_ && !piece.text.empty()) {
                const genie_piece_kind kind =
                    piece.kind == genie::PieceKind::Reasoning ? GENIE_PIECE_REASONING : GENIE_PIECE_CONTENT;
                if (callback_(user_, kind, piece.text.data(), piece.text.size()) != 0) {
                    ended = Ended::Callback;
                    return false;
                }
            }
            return true;
        };
    }

    Ended ended = Ended::No;

private:
    genie_piece_callback callback_;
    void* user_;
};

/// Bytes of a genie_chat_result of `version` (version 1 ends after total_ms).
inline size_t chat_result_size(unsigned int version) {
    return version >= 2 ? sizeof(genie_chat_result) : offsetof(genie_chat_result, tool_calls);
}

/// A malloc'ed array of genie_tool_call (NULL when `calls` is empty); ids "call_<i>" where
/// the model gave none.
inline genie_tool_call* tool_calls_to_c(const std::vector<genie::ToolCall>& calls) {
    if (calls.empty()) return nullptr;
    auto* out = static_cast<genie_tool_call*>(std::calloc(calls.size(), sizeof(genie_tool_call)));
    if (!out) throw std::bad_alloc();
    try {
        for (size_t i = 0; i < calls.size(); ++i) {
            out[i].id = malloc_string(calls[i].id.empty() ? "call_" + std::to_string(i) : calls[i].id);
            out[i].name = malloc_string(calls[i].name);
            out[i].arguments = malloc_string(calls[i].arguments_json);
            out[i].error = calls[i].error.empty() ? nullptr : malloc_string(calls[i].error);
        }
    } catch (...) {
        free_tool_calls(out, calls.size());
        throw;
    }
    return out;
}

/// Checks out->version, frees what it held and marks it failed until filled.
inline void begin_chat_result(genie_chat_result* out) {
    if (!out) return;
    check_struct_version(out->version, GENIE_CHAT_RESULT_VERSION, "genie_chat_result");
    genie_chat_result_clear(out);
    out->finish_reason = GENIE_FINISH_ERROR;
}

/// Fills *out (prepared by begin_chat_result; may be NULL) from a finished chat.
inline void fill_chat_result(genie_chat_result* out, const genie::ChatResult& chat, ChatStream::Ended ended,
                             ChatStream::Clock::time_point start, bool parse_tools) {
    if (!out) return;
    const genie::GenerateResult& g = chat.generation;
    genie_chat_result r = GENIE_CHAT_RESULT_INIT;
    r.version = out->version;
    static const std::vector<genie::ToolCall> none;
    const auto& calls = parse_tools ? chat.tool_calls : none;
    const auto& rejected = parse_tools ? chat.rejected_tool_calls : none;
    try {
        r.text = malloc_string(g.text);
        r.text_len = g.text.size();
        r.reasoning = malloc_string(g.reasoning);
        r.reasoning_len = g.reasoning.size();
        r.n_tool_calls = calls.size();
        if (!calls.empty()) {
            r.tool_name = malloc_string(calls.front().name);
            r.tool_arguments = malloc_string(calls.front().arguments_json);
        }
        if (out->version >= 2) {
            r.tool_calls = tool_calls_to_c(calls);
            r.rejected_tool_calls = tool_calls_to_c(rejected);
            r.n_rejected_tool_calls = rejected.size();
        }
    } catch (...) {
        genie_chat_result_clear(&r);
        throw;
    }
    r.finish_reason = ended == ChatStream::Ended::Callback ? GENIE_FINISH_CANCELLED : finish_reason_to_c(g.finish_reason);
    r.prompt_tokens = g.prompt_tokens;
    r.reused_prefix_tokens = g.reused_prompt_tokens;
    r.completion_tokens = g.completion_tokens;
    r.time_to_first_token_ms = g.timings.time_to_first_token_ms;
    r.prefill_ms = g.timings.prompt_eval_ms;
    r.prefill_tokens_per_s = g.timings.prompt_tokens_per_s;
    r.decode_ms = g.timings.decode_ms;
    r.decode_tokens_per_s = g.timings.decode_tokens_per_s;
    r.total_ms = std::chrono::duration<double, std::milli>(ChatStream::Clock::now() - start).count();
    std::memcpy(out, &r, chat_result_size(out->version));  // a version-1 caller's struct is shorter
}

}  // namespace genie::capi
