// genie-server: request parsing and validation (see request.hpp).
#include "request.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

namespace genie::server {

using json = nlohmann::json;

namespace {

constexpr int kMaxDepth = 128;

json parse_body(std::string_view body) {
    // The depth check runs while parsing, so a deeply nested body never reaches the
    // recursive parts of nlohmann::json (dump, comparison).
    json::parser_callback_t limit = [](int depth, json::parse_event_t event, json&) {
        if (depth > kMaxDepth && (event == json::parse_event_t::object_start || event == json::parse_event_t::array_start))
            throw RequestError("the request JSON nests deeper than " + std::to_string(kMaxDepth) + " levels");
        return true;
    };
    json j;
    try {
        j = json::parse(body.begin(), body.end(), limit);
    } catch (const json::exception& e) {
        throw RequestError(std::string("invalid JSON in the request body: ") + e.what());
    }
    if (!j.is_object()) throw RequestError("the request body must be a JSON object");
    return j;
}

/// The value at `key`, or nullptr when absent or null.
const json* field(const json& obj, const char* key) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
}

[[noreturn]] void wrong_type(const std::string& name, const char* expected) {
    throw RequestError("'" + name + "' must be " + expected);
}

std::optional<std::string> get_string(const json& obj, const char* key, const std::string& name) {
    const json* v = field(obj, key);
    if (!v) return std::nullopt;
    if (!v->is_string()) wrong_type(name, "a string");
    return v->get<std::string>();
}

std::optional<bool> get_bool(const json& obj, const char* key, const std::string& name) {
    const json* v = field(obj, key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) wrong_type(name, "a boolean");
    return v->get<bool>();
}

std::optional<float> get_float(const json& obj, const char* key) {
    const json* v = field(obj, key);
    if (!v) return std::nullopt;
    if (!v->is_number()) wrong_type(key, "a number");
    const double d = v->get<double>();
    if (!std::isfinite(d) || std::fabs(d) > 1e30) wrong_type(key, "a finite number");
    return static_cast<float>(d);
}

/// An integer in [lo, hi]; a float with an integral value (5.0) counts.
int64_t as_int(const json& v, const std::string& name, int64_t lo, int64_t hi) {
    int64_t x = 0;
    if (v.is_number_unsigned()) {
        const uint64_t u = v.get<uint64_t>();
        if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) wrong_type(name, "an integer in range");
        x = static_cast<int64_t>(u);
    } else if (v.is_number_integer()) {
        x = v.get<int64_t>();
    } else if (v.is_number_float()) {
        const double d = v.get<double>();
        if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9e15) wrong_type(name, "an integer");
        x = static_cast<int64_t>(d);
    } else {
        wrong_type(name, "an integer");
    }
    if (x < lo || x > hi)
        throw RequestError("'" + name + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi));
    return x;
}

std::optional<int64_t> get_int(const json& obj, const char* key, int64_t lo, int64_t hi) {
    const json* v = field(obj, key);
    if (!v) return std::nullopt;
    return as_int(*v, key, lo, hi);
}

void parse_sampling(const json& body, SamplingFields& s) {
    s.temperature = get_float(body, "temperature");
    s.top_p = get_float(body, "top_p");
    s.min_p = get_float(body, "min_p");
    s.typical_p = get_float(body, "typical_p");
    if (auto k = get_int(body, "top_k", std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()))
        s.top_k = static_cast<int32_t>(*k);
    if (auto seed = get_int(body, "seed", -1, std::numeric_limits<uint32_t>::max()); seed && *seed >= 0)
        s.seed = static_cast<uint32_t>(*seed);
    s.presence_penalty = get_float(body, "presence_penalty");
    s.frequency_penalty = get_float(body, "frequency_penalty");
    s.repeat_penalty = get_float(body, "repeat_penalty");
    // The Sampler's ranges (lib/sampling/sampler.cpp), checked here so that the 400 names the
    // field (llama-server passes such values on unchecked).
    for (const auto& [key, v] : {std::pair{"top_p", s.top_p}, std::pair{"min_p", s.min_p}, std::pair{"typical_p", s.typical_p}})
        if (v && *v < 0.0f) throw RequestError(std::string("'") + key + "' must be >= 0, got " + std::to_string(*v));
    if (s.repeat_penalty && !(*s.repeat_penalty > 0.0f))
        throw RequestError("'repeat_penalty' must be > 0 (1 = off), got " + std::to_string(*s.repeat_penalty));
    if (auto n = get_int(body, "repeat_last_n", -1, 1 << 20)) s.repeat_last_n = static_cast<int32_t>(*n);
    // max_completion_tokens (the current OpenAI name) wins over max_tokens, which wins
    // over llama-server's n_predict; -1 means "no limit" as in llama-server.
    for (const char* key : {"n_predict", "max_tokens", "max_completion_tokens"})
        if (auto n = get_int(body, key, -1, std::numeric_limits<int32_t>::max()); n && *n >= 0)
            s.max_tokens = static_cast<int32_t>(*n);
    if (const json* stop = field(body, "stop")) {
        if (stop->is_string()) {
            s.stop.push_back(stop->get<std::string>());
        } else if (stop->is_array()) {
            for (size_t i = 0; i < stop->size(); ++i) {
                const json& e = (*stop)[i];
                if (!e.is_string()) wrong_type("stop[" + std::to_string(i) + "]", "a string");
                if (!e.get_ref<const std::string&>().empty()) s.stop.push_back(e.get<std::string>());
            }
        } else {
            wrong_type("stop", "a string or an array of strings");
        }
    }
    if (auto n = get_int(body, "n", 1, std::numeric_limits<int32_t>::max()); n && *n != 1)
        throw RequestError("'n' must be 1: only one completion choice is supported");
}

void parse_stream_fields(const json& body, bool& stream, bool& include_usage) {
    stream = get_bool(body, "stream", "stream").value_or(false);
    if (const json* so = field(body, "stream_options")) {
        if (!so->is_object()) wrong_type("stream_options", "an object");
        include_usage = get_bool(*so, "include_usage", "stream_options.include_usage").value_or(false);
    }
}

std::string parse_conversation_id(const json& body) {
    const json* v = field(body, "conversation_id");
    if (!v) return "";
    if (v->is_string()) return v->get<std::string>();
    if (v->is_number_integer() || v->is_number_unsigned()) return v->dump();
    wrong_type("conversation_id", "a string or an integer");
}

/// String content, or the text parts of an array joined with '\n' (llama-server's rule).
std::optional<std::string> parse_content(const json& msg, const std::string& name) {
    const json* c = field(msg, "content");
    if (!c) return std::nullopt;
    if (c->is_string()) return c->get<std::string>();
    if (!c->is_array()) wrong_type(name, "a string or an array of content parts");
    std::string text;
    for (size_t i = 0; i < c->size(); ++i) {
        const json& part = (*c)[i];
        const std::string pname = name + "[" + std::to_string(i) + "]";
        if (!part.is_object()) wrong_type(pname, "an object");
        const std::string type = get_string(part, "type", pname + ".type").value_or("");
        if (type != "text")
            throw RequestError("'" + pname + ".type' is '" + type + "': only content parts of type 'text' are supported");
        const auto t = get_string(part, "text", pname + ".text");
        if (!t) throw RequestError("'" + pname + ".text' is required");
        if (!text.empty()) text += '\n';
        text += *t;
    }
    return text;
}

std::vector<ChatMessage> parse_messages(const json& body) {
    const json* msgs = field(body, "messages");
    if (!msgs) throw RequestError("'messages' is required");
    if (!msgs->is_array()) wrong_type("messages", "an array");
    if (msgs->empty()) throw RequestError("'messages' must not be empty");
    std::vector<ChatMessage> out;
    for (size_t i = 0; i < msgs->size(); ++i) {
        const json& m = (*msgs)[i];
        const std::string name = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) wrong_type(name, "an object");
        ChatMessage cm;
        const auto role = get_string(m, "role", name + ".role");
        if (!role) throw RequestError("'" + name + ".role' is required");
        cm.role = *role;
        cm.content = parse_content(m, name + ".content");
        if (const json* tc = field(m, "tool_calls")) {
            if (!tc->is_array()) wrong_type(name + ".tool_calls", "an array");
            for (size_t k = 0; k < tc->size(); ++k)
                if (!(*tc)[k].is_object()) wrong_type(name + ".tool_calls[" + std::to_string(k) + "]", "an object");
            if (!tc->empty()) cm.tool_calls_json = tc->dump();
        }
        if (cm.role == "assistant") {
            if (!cm.content && cm.tool_calls_json.empty())
                throw RequestError("'" + name + "': an assistant message must contain either 'content' or 'tool_calls'");
            // llama-server renders a null content as "" (templates such as Qwen3's test
            // `'</think>' in message.content`, which fails on None).
            if (!cm.content) cm.content = "";
        } else if (!cm.content) {
            throw RequestError("'" + name + ".content' is required (all non-assistant messages must contain 'content')");
        }
        cm.reasoning_content = get_string(m, "reasoning_content", name + ".reasoning_content");
        cm.tool_call_id = get_string(m, "tool_call_id", name + ".tool_call_id").value_or("");
        cm.name = get_string(m, "name", name + ".name").value_or("");
        out.push_back(std::move(cm));
    }
    return out;
}

void parse_tools(const json& body, ChatRequest& r) {
    if (const json* tools = field(body, "tools")) {
        if (!tools->is_array()) wrong_type("tools", "an array");
        for (size_t i = 0; i < tools->size(); ++i) {
            const json& t = (*tools)[i];
            const std::string name = "tools[" + std::to_string(i) + "]";
            if (!t.is_object()) wrong_type(name, "an object");
            const json* fn = field(t, "function");
            if (!fn || !fn->is_object()) throw RequestError("'" + name + ".function' must be an object");
            const auto fname = get_string(*fn, "name", name + ".function.name");
            if (!fname || fname->empty()) throw RequestError("'" + name + ".function.name' is required");
            if (const json* p = field(*fn, "parameters"); p && !p->is_object())
                wrong_type(name + ".function.parameters", "an object");
            r.tool_names.push_back(*fname);
        }
        if (!tools->empty()) r.tools_json = tools->dump();
    }
    if (const json* tc = field(body, "tool_choice")) {
        if (tc->is_string()) {
            const std::string s = tc->get<std::string>();
            if (s == "auto") r.tool_choice = ToolChoice::Auto;
            else if (s == "none") r.tool_choice = ToolChoice::None;
            else if (s == "required") r.tool_choice = ToolChoice::Required;
            else throw RequestError("'tool_choice' must be \"auto\", \"none\", \"required\" or a function object");
        } else if (tc->is_object()) {
            const json* fn = field(*tc, "function");
            if (!fn || !fn->is_object()) throw RequestError("'tool_choice.function' must be an object");
            const auto fname = get_string(*fn, "name", "tool_choice.function.name");
            if (!fname) throw RequestError("'tool_choice.function.name' is required");
            r.tool_choice = ToolChoice::Named;
            r.tool_choice_name = *fname;
        } else {
            wrong_type("tool_choice", "a string or an object");
        }
    }
    r.parallel_tool_calls = get_bool(body, "parallel_tool_calls", "parallel_tool_calls");
    if ((r.tool_choice == ToolChoice::Required || r.tool_choice == ToolChoice::Named) && r.tool_names.empty())
        throw RequestError("'tool_choice' asks for a tool call but 'tools' is empty");
    if (r.tool_choice == ToolChoice::Named) {
        bool found = false;
        for (const auto& n : r.tool_names) found = found || n == r.tool_choice_name;
        if (!found) throw RequestError("'tool_choice.function.name' names a tool that is not in 'tools': " + r.tool_choice_name);
    }
}

void parse_response_format(const json& body, ChatRequest& r) {
    const json* rf = field(body, "response_format");
    if (!rf) return;
    if (!rf->is_object()) wrong_type("response_format", "an object");
    const std::string type = get_string(*rf, "type", "response_format.type").value_or("text");
    if (type == "text") return;
    if (type == "json_object") {
        r.response_format = ResponseFormat::JsonObject;
        if (const json* s = field(*rf, "schema")) {
            if (!s->is_object()) wrong_type("response_format.schema", "an object");
            if (!s->empty()) {
                r.response_format = ResponseFormat::JsonSchema;
                r.json_schema = s->dump();
            }
        }
    } else if (type == "json_schema") {
        const json* w = field(*rf, "json_schema");
        if (!w || !w->is_object()) throw RequestError("'response_format.json_schema' must be an object");
        const json* s = field(*w, "schema");
        if (s && !s->is_object()) wrong_type("response_format.json_schema.schema", "an object");
        if (!s || s->empty()) {
            r.response_format = ResponseFormat::JsonObject;  // an absent or empty schema means any object
        } else {
            r.response_format = ResponseFormat::JsonSchema;
            r.json_schema = s->dump();
        }
    } else {
        throw RequestError("'response_format.type' must be one of \"text\", \"json_object\" or \"json_schema\", but got: " +
                           type);
    }
}

void parse_thinking(const json& body, ChatRequest& r) {
    if (auto think = get_bool(body, "think", "think")) r.enable_thinking = think;
    if (const json* kw = field(body, "chat_template_kwargs")) {
        if (!kw->is_object()) wrong_type("chat_template_kwargs", "an object");
        json extra = *kw;
        if (auto it = extra.find("enable_thinking"); it != extra.end()) {
            if (!it->is_null()) {
                if (!it->is_boolean()) wrong_type("chat_template_kwargs.enable_thinking", "a boolean");
                r.enable_thinking = it->get<bool>();
            }
            extra.erase(it);
        }
        if (!extra.empty()) r.extra_template_variables_json = extra.dump();
    }
}

}  // namespace

SamplerOptions SamplingFields::sampler_options(uint32_t random_seed) const {
    SamplerOptions o;
    o.temperature = temperature.value_or(0.8f);
    if (top_k) o.top_k = *top_k;
    if (top_p) o.top_p = *top_p;
    if (min_p) o.min_p = *min_p;
    if (typical_p) o.typical_p = *typical_p;
    o.seed = seed.value_or(random_seed);
    if (presence_penalty) o.presence_penalty = *presence_penalty;
    if (frequency_penalty) o.frequency_penalty = *frequency_penalty;
    if (repeat_penalty) o.repeat_penalty = *repeat_penalty;
    if (repeat_last_n) o.penalty_last_n = *repeat_last_n;
    return o;
}

ChatRequest parse_chat_request(std::string_view body_text) {
    const json body = parse_body(body_text);
    ChatRequest r;
    r.messages = parse_messages(body);
    parse_sampling(body, r.sampling);
    parse_stream_fields(body, r.stream, r.include_usage);
    r.model = get_string(body, "model", "model").value_or("");
    parse_response_format(body, r);
    parse_tools(body, r);
    if (auto grammar = get_string(body, "grammar", "grammar"); grammar && !grammar->empty()) {
        if (r.response_format != ResponseFormat::Text)
            throw RequestError("'grammar' and 'response_format' cannot both constrain the answer");
        if (!r.tools_json.empty() && (r.tool_choice == ToolChoice::Required || r.tool_choice == ToolChoice::Named))
            throw RequestError("'grammar' and a forced 'tool_choice' cannot both constrain the answer");
        r.grammar = *grammar;
    }
    parse_thinking(body, r);
    r.conversation_id = parse_conversation_id(body);
    return r;
}

CompletionRequest parse_completion_request(std::string_view body_text) {
    const json body = parse_body(body_text);
    CompletionRequest r;
    const json* p = field(body, "prompt");
    if (!p) throw RequestError("'prompt' is required");
    if (p->is_string()) {
        r.prompt_text = p->get<std::string>();
    } else if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) {
        r.prompt_text = (*p)[0].get<std::string>();
    } else if (p->is_array() && !p->empty()) {
        r.prompt_is_tokens = true;
        for (size_t i = 0; i < p->size(); ++i)
            r.prompt_tokens.push_back(
                static_cast<int32_t>(as_int((*p)[i], "prompt[" + std::to_string(i) + "]", 0, std::numeric_limits<int32_t>::max())));
    } else {
        wrong_type("prompt", "a string, an array with one string, or a non-empty array of token ids");
    }
    parse_sampling(body, r.sampling);
    parse_stream_fields(body, r.stream, r.include_usage);
    r.model = get_string(body, "model", "model").value_or("");
    r.conversation_id = parse_conversation_id(body);
    return r;
}

TokenizeRequest parse_tokenize_request(std::string_view body_text) {
    const json body = parse_body(body_text);
    TokenizeRequest r;
    r.content = get_string(body, "content", "content").value_or("");
    r.add_special = get_bool(body, "add_special", "add_special").value_or(false);
    r.parse_special = get_bool(body, "parse_special", "parse_special").value_or(true);
    r.with_pieces = get_bool(body, "with_pieces", "with_pieces").value_or(false);
    return r;
}

DetokenizeRequest parse_detokenize_request(std::string_view body_text) {
    const json body = parse_body(body_text);
    DetokenizeRequest r;
    if (const json* t = field(body, "tokens")) {
        if (!t->is_array()) wrong_type("tokens", "an array of token ids");
        for (size_t i = 0; i < t->size(); ++i)
            r.tokens.push_back(
                static_cast<int32_t>(as_int((*t)[i], "tokens[" + std::to_string(i) + "]", 0, std::numeric_limits<int32_t>::max())));
    }
    return r;
}

}  // namespace genie::server
