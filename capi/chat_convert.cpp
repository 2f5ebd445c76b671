#include "chat_convert.hpp"

#include "convert.hpp"
#include "guard.hpp"

#include <genie/error.hpp>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

namespace genie::capi {

namespace {

/// Optional message text of genie_chat_turn_extra (NULL = absent).
std::string optional_text(const char* text) { return text ? std::string(text) : std::string(); }

/// A malloc'ed array of genie_tool_call (NULL when `calls` is empty); ids "call_<i>" where
/// the model gave none.
genie_tool_call* tool_calls_to_c(const std::vector<genie::ToolCall>& calls) {
    if (calls.empty()) return nullptr;
    auto* out = static_cast<genie_tool_call*>(std::calloc(calls.size(), sizeof(genie_tool_call)));
    if (!out) throw std::bad_alloc();
    try {
        for (size_t i = 0; i < calls.size(); ++i) {
            out[i].id = copy_string(calls[i].id.empty() ? "call_" + std::to_string(i) : calls[i].id);
            out[i].name = copy_string(calls[i].name);
            out[i].arguments = copy_string(calls[i].arguments_json);
            out[i].error = calls[i].error.empty() ? nullptr : copy_string(calls[i].error);
        }
    } catch (...) {
        free_tool_calls(out, calls.size());
        throw;
    }
    return out;
}

}  // namespace

void free_tool_calls(genie_tool_call* calls, size_t n) noexcept {
    if (!calls) return;
    for (size_t i = 0; i < n; ++i) {
        std::free(calls[i].id);
        std::free(calls[i].name);
        std::free(calls[i].arguments);
        std::free(calls[i].error);
    }
    std::free(calls);
}

std::string ChatCall::constraint_key() const {
    switch (response_format) {
        case GENIE_RESPONSE_FORMAT_JSON_OBJECT: return "o:";
        case GENIE_RESPONSE_FORMAT_JSON_SCHEMA:
            return (constraint_options.max_whitespace == 1 ? "t:" : "s:") + schema;
        case GENIE_RESPONSE_FORMAT_GRAMMAR: return "g:" + grammar;
        default: return "";
    }
}

std::shared_ptr<const genie::JsonConstraint> ChatCall::build_constraint(const genie::Tokenizer& tokenizer) const {
    switch (response_format) {
        case GENIE_RESPONSE_FORMAT_JSON_OBJECT: return genie::JsonConstraint::any_object(tokenizer, constraint_options);
        case GENIE_RESPONSE_FORMAT_JSON_SCHEMA:
            return genie::JsonConstraint::from_schema(schema, tokenizer, constraint_options);
        case GENIE_RESPONSE_FORMAT_GRAMMAR: return genie::JsonConstraint::from_grammar(grammar, tokenizer, constraint_options);
        default: return nullptr;
    }
}

ChatCall convert_chat_request(const genie_chat_request* request) {
    if (!request) invalid_arg("request must not be NULL");
    check_version(request->version, GENIE_CHAT_REQUEST_VERSION, "genie_chat_request");
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
        message.content = std::string(text_arg(m.content, m.content_len, where + ".content"));
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
        check_version(rq.sampler->version, GENIE_SAMPLER_OPTIONS_VERSION, "genie_sampler_options");
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
    call.options.tools_json = std::string(text_arg(rq.tools_json, rq.tools_json_len, "request->tools_json"));
    call.schema = std::string(text_arg(rq.json_schema, rq.json_schema_len, "request->json_schema"));
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
        call.grammar = std::string(text_arg(rq.grammar, rq.grammar_len, "request->grammar"));
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

genie::PieceCallback ChatStream::callback() {
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

size_t chat_result_size(unsigned int version) noexcept {
    return version >= 2 ? sizeof(genie_chat_result) : offsetof(genie_chat_result, tool_calls);
}

void begin_chat_result(genie_chat_result* out) {
    if (!out) return;
    check_version(out->version, GENIE_CHAT_RESULT_VERSION, "genie_chat_result");
    genie_chat_result_clear(out);
    out->finish_reason = GENIE_FINISH_ERROR;
}

void fill_chat_result(genie_chat_result* out, const genie::ChatResult& chat, ChatStream::Ended ended,
                      ChatStream::Clock::time_point start, bool parse_tools) {
    if (!out) return;
    const genie::GenerateResult& g = chat.generation;
    genie_chat_result r = GENIE_CHAT_RESULT_INIT;
    r.version = out->version;
    static const std::vector<genie::ToolCall> none;
    const auto& calls = parse_tools ? chat.tool_calls : none;
    const auto& rejected = parse_tools ? chat.rejected_tool_calls : none;
    try {
        r.text = copy_string(g.text);
        r.text_len = g.text.size();
        r.reasoning = copy_string(g.reasoning);
        r.reasoning_len = g.reasoning.size();
        r.n_tool_calls = calls.size();
        if (!calls.empty()) {
            r.tool_name = copy_string(calls.front().name);
            r.tool_arguments = copy_string(calls.front().arguments_json);
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
