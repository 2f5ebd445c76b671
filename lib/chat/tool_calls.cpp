// Tool-call extraction from model output (see extract_tool_calls in genie/chat.hpp).
#include <genie/chat.hpp>
#include <genie/constraint.hpp>
#include <genie/error.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
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

// The offered tools: name -> parameters schema (an empty object when none).
std::vector<std::pair<std::string, json>> offered_tools(std::string_view tools_json) {
    const json tools = json::parse(tools_json.begin(), tools_json.end(), nullptr, false);
    if (tools.is_discarded() || !tools.is_array())
        throw Error(ErrorCode::InvalidArgument, "tools: must be a JSON array of tool definitions");
    std::vector<std::pair<std::string, json>> out;
    for (size_t i = 0; i < tools.size(); ++i) {
        const json& t = tools[i];
        const json* fn = t.is_object() && t.contains("function") ? &t["function"] : &t;
        if (!fn->is_object() || !fn->contains("name") || !(*fn)["name"].is_string())
            throw Error(ErrorCode::InvalidArgument, fmt::format("tools[{}]: a tool needs function.name", i));
        json params = fn->contains("parameters") ? (*fn)["parameters"] : json::object();
        if (params.is_null()) params = json::object();
        out.emplace_back((*fn)["name"].get<std::string>(), std::move(params));
    }
    return out;
}

// Rewrites the local $refs of a schema placed at `#/$defs/<where>`.
void rebase_refs(json& j, const std::string& where) {
    if (j.is_object()) {
        for (auto& [key, value] : j.items()) {
            if (key == "$ref" && value.is_string()) {
                const std::string ref = value.get<std::string>();
                if (!ref.empty() && ref[0] == '#') value = "#/$defs/" + where + ref.substr(1);
            } else {
                rebase_refs(value, where);
            }
        }
    } else if (j.is_array()) {
        for (json& x : j) rebase_refs(x, where);
    }
}

}  // namespace

std::string tool_call_schema(std::string_view tools_json, std::string_view function_name, bool parallel) {
    const auto tools = offered_tools(tools_json);
    json calls = json::array();
    json defs = json::object();
    for (size_t i = 0; i < tools.size(); ++i) {
        const auto& [name, params] = tools[i];
        if (!function_name.empty() && name != function_name) continue;
        try {
            (void)json_matches_schema(params.dump(), "{}");  // compiles the schema: throws when unsupported
        } catch (const Error& e) {
            throw Error(ErrorCode::InvalidArgument, fmt::format("tool '{}' parameters: {}", name, e.what()));
        }
        const std::string where = "tool" + std::to_string(i);
        json p = params.empty() ? json{{"type", "object"}} : params;
        rebase_refs(p, where);
        defs[where] = std::move(p);
        calls.push_back(json{{"type", "object"},
                             {"properties", {{"name", {{"const", name}}}, {"arguments", {{"$ref", "#/$defs/" + where}}}}},
                             {"required", {"name", "arguments"}},
                             {"additionalProperties", false}});
    }
    if (calls.empty())
        throw Error(ErrorCode::InvalidArgument,
                    function_name.empty() ? std::string("tools: no tool is offered")
                                          : fmt::format("tool_choice names '{}', which is not among the tools", function_name));
    json one = calls.size() == 1 ? calls[0] : json{{"anyOf", calls}};
    json schema = parallel ? json{{"anyOf", {one, {{"type", "array"}, {"items", one}, {"minItems", 1}}}}} : one;
    schema["$defs"] = std::move(defs);
    return schema.dump();
}

JsonConstraintOptions tool_call_constraint_options() {
    JsonConstraintOptions o;
    o.max_whitespace = 1;
    o.max_string_length = 256;
    o.close_after_bytes = 1024;
    return o;
}

std::vector<ToolCall> check_tool_calls(std::vector<ToolCall>& calls, std::string_view tools_json, bool parallel) {
    const auto tools = offered_tools(tools_json);
    std::vector<ToolCall> kept, rejected;
    for (ToolCall& call : calls) {
        const auto it = std::find_if(tools.begin(), tools.end(), [&](const auto& t) { return t.first == call.name; });
        if (it == tools.end()) {
            call.error = fmt::format("'{}' is not an offered tool", call.name);
        } else if (!parallel && !kept.empty()) {
            call.error = "parallel_tool_calls is false: only the first call is returned";
        } else {
            bool ok = true;
            try {
                ok = json_matches_schema(it->second.empty() ? R"({"type":"object"})" : it->second.dump(), call.arguments_json);
            } catch (const Error&) {
                const json args = json::parse(call.arguments_json, nullptr, false);  // an unreadable schema:
                ok = args.is_object();                                                // any object
            }
            if (!ok) call.error = fmt::format("the arguments of '{}' do not follow its parameters schema", call.name);
        }
        (call.error.empty() ? kept : rejected).push_back(std::move(call));
    }
    calls = std::move(kept);
    return rejected;
}

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
