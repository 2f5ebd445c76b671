// genie-server: the response shapes (OpenAI / llama-server JSON, SSE framing) and the
// tool-call gate used while streaming. No HTTP here.
#pragma once

#include <genie/chat.hpp>
#include <genie/session.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace genie::server {

using json = nlohmann::json;

/// llama-server's error body: {"error": {"code": C, "message": M, "type": T}}.
json error_body(int code, const std::string& message, const std::string& type);
/// The 400 exceed_context_size_error, with n_prompt_tokens and n_ctx as llama-server adds them.
json exceed_context_body(int n_prompt_tokens, int n_ctx);

/// One server-sent event: "data: " + compact JSON + "\n\n".
std::string sse_event(const json& data);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

/// llama-server's `timings` object (cache_n, prompt_n, prompt_ms, prompt_per_token_ms,
/// prompt_per_second, predicted_n, predicted_ms, predicted_per_token_ms, predicted_per_second).
json timings_json(const GenerateResult& r);
/// {"completion_tokens", "prompt_tokens", "total_tokens", "prompt_tokens_details": {"cached_tokens"}}.
json usage_json(const GenerateResult& r);

/// "stop" / "length" / "tool_calls" (a cancelled generation reports "stop").
const char* finish_reason_name(FinishReason reason, bool has_tool_calls);

/// Random [A-Za-z0-9] string (thread-safe), e.g. for "chatcmpl-" ids.
std::string random_string(size_t n);

/// The OpenAI `tool_calls` array: [{"id", "type": "function", "function": {"name", "arguments"}}];
/// ids are generated ("call_...") where the model gave none. With `with_index`, each item also
/// carries "index" (the streaming delta shape).
json tool_calls_json(const std::vector<ToolCall>& calls, bool with_index);

/// The message content that goes with tool calls: the text before the first "<tool_call>"
/// tag (trimmed), or "" when the whole answer was the call (a bare or fenced JSON object).
std::string content_before_tool_calls(std::string_view text);

/// While streaming a request that offers tools, holds back content that may be a tool call,
/// so raw tool-call text is never streamed as content: an answer that starts (after
/// whitespace) with "<tool_call>", "{" or "```" is held whole; otherwise content streams,
/// except from a "<tool_call>" tag on (and a possible partial tag at the end of a piece).
/// At the end, finish() returns what is held: the caller emits it as content when no tool
/// call was found, and drops it otherwise.
class ContentGate {
public:
    explicit ContentGate(bool active) : active_(active) {}
    /// Returns the text that may be streamed now.
    std::string push(std::string_view text);
    std::string finish();

private:
    bool active_;
    bool decided_ = false;
    bool holding_ = false;
    std::string held_;
};

}  // namespace genie::server
