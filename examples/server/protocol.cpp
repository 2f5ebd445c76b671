// genie-server: response shapes (see protocol.hpp).
#include "protocol.hpp"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <random>

namespace genie::server {

json error_body(int code, const std::string& message, const std::string& type) {
    return json{{"error", json{{"code", code}, {"message", message}, {"type", type}}}};
}

json exceed_context_body(int n_prompt_tokens, int n_ctx) {
    json body = error_body(400,
                           "request (" + std::to_string(n_prompt_tokens) + " tokens) exceeds the available context size (" +
                               std::to_string(n_ctx) + " tokens), try increasing it",
                           "exceed_context_size_error");
    body["error"]["n_prompt_tokens"] = n_prompt_tokens;
    body["error"]["n_ctx"] = n_ctx;
    return body;
}

std::string sse_event(const json& data) {
    // Invalid UTF-8 cannot occur (every piece is complete UTF-8); replace it anyway rather than throw.
    return "data: " + data.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

json timings_json(const GenerateResult& r) {
    const int prompt_n = r.prompt_tokens - r.reused_prompt_tokens;
    const double prompt_ms = r.timings.prompt_eval_ms;
    // llama-server times generation from the end of the prompt to the last token; the first
    // token's sampling is part of it.
    const double predicted_ms =
        r.completion_tokens > 0 ? std::max(0.0, r.timings.time_to_first_token_ms - prompt_ms) + r.timings.decode_ms : 0.0;
    const int predicted_n = r.completion_tokens;
    return json{
        {"cache_n", r.reused_prompt_tokens},
        {"prompt_n", prompt_n},
        {"prompt_ms", prompt_ms},
        {"prompt_per_token_ms", prompt_n > 0 ? prompt_ms / prompt_n : 0.0},
        {"prompt_per_second", prompt_ms > 0 ? 1e3 * prompt_n / prompt_ms : 0.0},
        {"predicted_n", predicted_n},
        {"predicted_ms", predicted_ms},
        {"predicted_per_token_ms", predicted_n > 0 ? predicted_ms / predicted_n : 0.0},
        {"predicted_per_second", predicted_ms > 0 ? 1e3 * predicted_n / predicted_ms : 0.0},
    };
}

json usage_json(const GenerateResult& r) {
    return json{
        {"completion_tokens", r.completion_tokens},
        {"prompt_tokens", r.prompt_tokens},
        {"total_tokens", r.prompt_tokens + r.completion_tokens},
        {"prompt_tokens_details", json{{"cached_tokens", r.reused_prompt_tokens}}},
    };
}

const char* finish_reason_name(FinishReason reason, bool has_tool_calls) {
    if (reason == FinishReason::Length) return "length";
    return has_tool_calls ? "tool_calls" : "stop";
}

std::string random_string(size_t n) {
    static std::mutex mu;
    static std::mt19937_64 rng{std::random_device{}()};
    static constexpr char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    std::lock_guard lock(mu);
    std::uniform_int_distribution<size_t> pick(0, sizeof(kChars) - 2);
    std::string s(n, ' ');
    for (char& c : s) c = kChars[pick(rng)];
    return s;
}

json tool_calls_json(const std::vector<ToolCall>& calls, bool with_index) {
    json out = json::array();
    for (size_t i = 0; i < calls.size(); ++i) {
        json tc{
            {"id", calls[i].id.empty() ? "call_" + random_string(24) : calls[i].id},
            {"type", "function"},
            {"function", json{{"name", calls[i].name}, {"arguments", calls[i].arguments_json}}},
        };
        if (with_index) tc["index"] = i;
        out.push_back(std::move(tc));
    }
    return out;
}

namespace {
constexpr std::string_view kToolTag = "<tool_call>";

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}
}  // namespace

std::string content_before_tool_calls(std::string_view text) {
    const size_t at = text.find(kToolTag);
    if (at == std::string_view::npos) return "";
    return std::string(trim(text.substr(0, at)));
}

std::string ContentGate::push(std::string_view text) {
    if (!active_) return std::string(text);
    held_ += text;
    if (holding_) return "";
    if (!decided_) {
        std::string_view s = held_;
        while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
        if (s.empty()) return "";
        for (std::string_view marker : {kToolTag, std::string_view("```"), std::string_view("{")}) {
            if (s.substr(0, marker.size()) == marker) {
                holding_ = true;  // may be a whole-answer tool call: hold it all
                return "";
            }
            if (s.size() < marker.size() && marker.substr(0, s.size()) == s) return "";  // not known yet
        }
        decided_ = true;
    }
    const size_t tag = held_.find(kToolTag);
    std::string out;
    if (tag != std::string::npos) {
        out = held_.substr(0, tag);
        held_.erase(0, tag);
        holding_ = true;
        return out;
    }
    // Keep back a suffix that may be the start of the tag.
    size_t keep = 0;
    for (size_t n = std::min(held_.size(), kToolTag.size() - 1); n > 0; --n)
        if (std::string_view(held_).substr(held_.size() - n) == kToolTag.substr(0, n)) {
            keep = n;
            break;
        }
    out = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
}

std::string ContentGate::finish() {
    std::string out = std::move(held_);
    held_.clear();
    return out;
}

}  // namespace genie::server
