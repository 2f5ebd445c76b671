// genie::ChatTemplate: parses once, renders with the variables Hugging Face's
// apply_chat_template passes (messages, tools, documents, add_generation_prompt, the special
// tokens, extra kwargs such as enable_thinking).
#include "chat/jinja_builtins.hpp"
#include "chat/jinja_interpreter.hpp"
#include "chat/jinja_parser.hpp"
#include "chat/template_limits.hpp"

#include <genie/chat.hpp>
#include <genie/error.hpp>

#include <nlohmann/json.hpp>

#include <atomic>
#include <new>

namespace genie {

struct ChatTemplate::Impl {
    std::string source;
    std::shared_ptr<const chat::jinja::Template> tree;
};

namespace {

// set_template_limits_for_testing(); 0 = the default.
std::atomic<uint64_t> g_test_loops{0}, g_test_steps{0};
std::atomic<size_t> g_test_string_bytes{0};

using chat::jinja::Dict;
using chat::jinja::TemplateError;
using chat::jinja::Value;

[[noreturn]] void rethrow_template_error(const TemplateError& e) {
    if (e.raised) throw Error(ErrorCode::InvalidArgument, "chat template: " + e.message);
    std::string where;
    if (e.line > 0) where = "line " + std::to_string(e.line) + ", column " + std::to_string(e.column) + ": ";
    throw Error(e.code, "chat template: " + where + e.message);
}

nlohmann::ordered_json parse_json(std::string_view text, const char* what) {
    try {
        return nlohmann::ordered_json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::exception& e) {
        throw Error(ErrorCode::Format, std::string("chat template: ") + what + " is not valid JSON: " + e.what());
    }
}

Value message_value(const ChatMessage& m) {
    auto d = std::make_shared<Dict>();
    d->set(Value::string("role"), Value::string(m.role));
    d->set(Value::string("content"), m.content ? Value::string(*m.content) : Value::none());
    if (m.reasoning_content) d->set(Value::string("reasoning_content"), Value::string(*m.reasoning_content));
    if (!m.tool_calls_json.empty()) {
        const auto j = parse_json(m.tool_calls_json, "ChatMessage::tool_calls_json");
        if (!j.is_array()) throw Error(ErrorCode::Format, "chat template: ChatMessage::tool_calls_json must be a JSON array");
        d->set(Value::string("tool_calls"), chat::jinja::from_json(j));
    }
    if (!m.tool_call_id.empty()) d->set(Value::string("tool_call_id"), Value::string(m.tool_call_id));
    if (!m.name.empty()) d->set(Value::string("name"), Value::string(m.name));
    if (!m.extra_json.empty()) {
        const auto j = parse_json(m.extra_json, "ChatMessage::extra_json");
        if (!j.is_object()) throw Error(ErrorCode::Format, "chat template: ChatMessage::extra_json must be a JSON object");
        for (const auto& [k, v] : j.items()) d->set(Value::string(k), chat::jinja::from_json(v));
    }
    return Value::dict(d);
}

std::string render_with(const ChatTemplate::Impl& impl, Value messages, const ChatTemplateOptions& options) {
    Dict vars;
    vars.set(Value::string("messages"), std::move(messages));
    if (options.tools_json.empty()) {
        vars.set(Value::string("tools"), Value::none());
    } else {
        const auto j = parse_json(options.tools_json, "ChatTemplateOptions::tools_json");
        if (!j.is_array()) throw Error(ErrorCode::Format, "chat template: ChatTemplateOptions::tools_json must be a JSON array");
        vars.set(Value::string("tools"), chat::jinja::from_json(j));
    }
    vars.set(Value::string("documents"), Value::none());
    vars.set(Value::string("add_generation_prompt"), Value::boolean(options.add_generation_prompt));
    if (options.enable_thinking) vars.set(Value::string("enable_thinking"), Value::boolean(*options.enable_thinking));
    if (options.bos_token) vars.set(Value::string("bos_token"), Value::string(*options.bos_token));
    if (options.eos_token) vars.set(Value::string("eos_token"), Value::string(*options.eos_token));
    if (!options.extra_variables_json.empty()) {
        const auto j = parse_json(options.extra_variables_json, "ChatTemplateOptions::extra_variables_json");
        if (!j.is_object())
            throw Error(ErrorCode::Format, "chat template: ChatTemplateOptions::extra_variables_json must be a JSON object");
        for (const auto& [k, v] : j.items()) vars.set(Value::string(k), chat::jinja::from_json(v));
    }

    chat::jinja::RenderSettings settings;
    settings.max_output_bytes = options.max_output_bytes;
    settings.now_unix_seconds = options.now_unix_seconds;
    if (const uint64_t n = g_test_loops.load(std::memory_order_relaxed)) settings.max_loop_iterations = n;
    if (const uint64_t n = g_test_steps.load(std::memory_order_relaxed)) settings.max_steps = n;
    chat::jinja::Budget budget;
    budget.max_string_bytes = options.max_output_bytes;
    const size_t sixteen_outputs = options.max_output_bytes > (SIZE_MAX >> 5) ? SIZE_MAX : options.max_output_bytes * 16;
    budget.bytes_left = std::max<size_t>(size_t{256} << 20, sixteen_outputs);
    if (const size_t n = g_test_string_bytes.load(std::memory_order_relaxed)) budget.bytes_left = n;
    chat::jinja::BudgetScope budget_scope(budget);
    chat::jinja::Interpreter interpreter(*impl.tree, settings);
    return interpreter.render(vars);
}

template <class F>
auto guarded(F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const TemplateError& e) {
        rethrow_template_error(e);
    } catch (const std::bad_alloc&) {
        throw Error(ErrorCode::OutOfMemory, "chat template: out of memory while rendering");
    }
}

}  // namespace

ChatTemplate::ChatTemplate(std::string_view source) {
    auto impl = std::make_shared<Impl>();
    impl->source = std::string(source);
    impl->tree = guarded([&] { return chat::jinja::parse(source); });
    impl_ = std::move(impl);
}

ChatTemplate ChatTemplate::chatml() { return ChatTemplate(chatml_template_source()); }

ChatTemplate::~ChatTemplate() = default;

const std::string& ChatTemplate::source() const noexcept { return impl_->source; }

std::string ChatTemplate::render(std::span<const ChatMessage> messages, const ChatTemplateOptions& options) const {
    return guarded([&] {
        std::vector<Value> items;
        items.reserve(messages.size());
        for (const ChatMessage& m : messages) items.push_back(message_value(m));
        return render_with(*impl_, Value::list(std::move(items)), options);
    });
}

std::string ChatTemplate::render_json(std::string_view messages_json, const ChatTemplateOptions& options) const {
    return guarded([&] {
        const auto j = parse_json(messages_json, "the messages");
        if (!j.is_array()) throw Error(ErrorCode::Format, "chat template: the messages must be a JSON array");
        return render_with(*impl_, chat::jinja::from_json(j), options);
    });
}

std::string_view chatml_template_source() noexcept {
    return "{%- for message in messages -%}"
           "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
           "{%- if message['content'] is string -%}{{- message['content'] -}}{%- endif -%}"
           "{{- '<|im_end|>\\n' -}}"
           "{%- endfor -%}"
           "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}";
}

namespace detail {

void set_template_limits_for_testing(uint64_t max_loop_iterations, uint64_t max_steps, size_t max_string_bytes_total) noexcept {
    g_test_loops.store(max_loop_iterations, std::memory_order_relaxed);
    g_test_steps.store(max_steps, std::memory_order_relaxed);
    g_test_string_bytes.store(max_string_bytes_total, std::memory_order_relaxed);
}

}  // namespace detail
}  // namespace genie
