// Tool-call extraction from model output (see extract_tool_calls in genie/chat.hpp).
#include <genie/chat.hpp>

#include <nlohmann/json.hpp>

#include <optional>

namespace genie {
namespace {

using nlohmann::json;

std::optional<json> parse(std::string_view text) {
    json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return std::nullopt;
    return j;
}

/// The first balanced {...} in `text` starting at or after `from` (strings respected).
std::optional<std::string_view> first_object(std::string_view text, size_t from = 0) {
    for (size_t start = text.find('{', from); start != std::string_view::npos; start = text.find('{', start + 1)) {
        int depth = 0;
        bool in_string = false, escape = false;
        for (size_t i = start; i < text.size(); ++i) {
            const char c = text[i];
            if (in_string) {
                if (escape) escape = false;
                else if (c == '\\') escape = true;
                else if (c == '"') in_string = false;
                continue;
            }
            if (c == '"') in_string = true;
            else if (c == '{') ++depth;
            else if (c == '}' && --depth == 0) {
                const std::string_view candidate = text.substr(start, i - start + 1);
                if (parse(candidate)) return candidate;
                break;
            }
        }
    }
    return std::nullopt;
}

std::string arguments_text(const json& args) {
    if (args.is_null()) return "{}";
    if (args.is_string()) {
        const std::string s = args.get<std::string>();
        return parse(s) ? s : json(s).dump();
    }
    return args.dump();
}

/// One call from an object of any accepted shape; nullopt when it is not a call.
std::optional<ToolCall> call_from(const json& j) {
    if (!j.is_object()) return std::nullopt;
    ToolCall call;
    if (j.contains("id") && j["id"].is_string()) call.id = j["id"].get<std::string>();
    const json* fn = &j;
    if (j.contains("function") && j["function"].is_object()) fn = &j["function"];
    for (const char* key : {"name", "tool", "function"}) {
        if (fn->contains(key) && (*fn)[key].is_string()) {
            call.name = (*fn)[key].get<std::string>();
            break;
        }
    }
    if (call.name.empty()) return std::nullopt;
    call.arguments_json = "{}";
    for (const char* key : {"arguments", "parameters", "args", "input"}) {
        if (fn->contains(key)) {
            call.arguments_json = arguments_text((*fn)[key]);
            break;
        }
    }
    return call;
}

std::vector<ToolCall> calls_from(const json& j) {
    std::vector<ToolCall> calls;
    if (j.is_object() && j.contains("tool_calls") && j["tool_calls"].is_array()) {
        for (const json& c : j["tool_calls"])
            if (auto call = call_from(c)) calls.push_back(std::move(*call));
        return calls;
    }
    if (j.is_array()) {
        for (const json& c : j)
            if (auto call = call_from(c)) calls.push_back(std::move(*call));
        return calls;
    }
    if (auto call = call_from(j)) calls.push_back(std::move(*call));
    return calls;
}

}  // namespace

std::vector<ToolCall> extract_tool_calls(std::string_view text) {
    std::vector<ToolCall> calls;
    // 1. <tool_call> ... </tool_call> blocks (Qwen, Hermes).
    constexpr std::string_view open = "<tool_call>", close = "</tool_call>";
    for (size_t at = text.find(open); at != std::string_view::npos; at = text.find(open, at + open.size())) {
        const size_t body = at + open.size();
        const size_t end = text.find(close, body);
        const std::string_view inner = text.substr(body, end == std::string_view::npos ? std::string_view::npos : end - body);
        if (auto j = parse(inner)) {
            for (auto& c : calls_from(*j)) calls.push_back(std::move(c));
        } else if (auto obj = first_object(inner)) {
            for (auto& c : calls_from(*parse(*obj))) calls.push_back(std::move(c));
        }
    }
    if (!calls.empty()) return calls;
    // 2. A fenced code block holding JSON.
    for (size_t at = text.find("```"); at != std::string_view::npos;) {
        const size_t line_end = text.find('\n', at);
        if (line_end == std::string_view::npos) break;
        const size_t end = text.find("```", line_end);
        const std::string_view inner = text.substr(line_end + 1, end == std::string_view::npos ? std::string_view::npos : end - line_end - 1);
        if (auto j = parse(inner)) {
            calls = calls_from(*j);
            if (!calls.empty()) return calls;
        }
        if (end == std::string_view::npos) break;
        at = text.find("```", end + 3);
    }
    // 3. The whole text, or the first JSON object in it.
    if (auto j = parse(text)) return calls_from(*j);
    if (auto obj = first_object(text)) return calls_from(*parse(*obj));
    return calls;
}

}  // namespace genie
