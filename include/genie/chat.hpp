// libgenie: chat templates. Renders a model's own `tokenizer.chat_template` (Jinja) the
// way Hugging Face's `apply_chat_template` does: Python jinja2's sandboxed environment with
// trim_blocks, lstrip_blocks, the loop-controls extension, HF's `tojson`
// (json.dumps(ensure_ascii=False)), `raise_exception` and `strftime_now`.
// See docs/chat.md for the supported Jinja subset and the known differences from jinja2.
#pragma once

#include <genie/constraint.hpp>
#include <genie/export.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace genie {

/// One message of a conversation, as the template sees it: a dict whose keys appear in
/// this order — `role`, `content`, then each optional field that is set, then the keys of
/// `extra_json`. A field that is not set is *absent* from the dict (so `message.name is
/// defined` is false), except `content`, which is always present (None when unset).
struct ChatMessage {
    /// "system", "user", "assistant", "tool" (or any role the template understands).
    std::string role;
    /// The text of the message. std::nullopt = `content` is None (e.g. an assistant turn that
    /// only calls tools).
    std::optional<std::string> content;
    /// The assistant's reasoning (the text inside `<think>`), when known separately.
    std::optional<std::string> reasoning_content;
    /// JSON array text of the tool calls (OpenAI shape: `[{"type": "function", "function":
    /// {"name": ..., "arguments": ...}}]`). Empty = no `tool_calls` key. Passed to the template
    /// as given: `arguments` stays a string when the JSON has a string (HF does the same).
    std::string tool_calls_json;
    /// The id of the tool call a "tool" message answers. Empty = no `tool_call_id` key.
    std::string tool_call_id;
    /// The name of the tool or participant. Empty = no `name` key.
    std::string name;
    /// JSON object text whose keys are added to the message after the fields above (and
    /// replace them when they have the same name, e.g. `{"content": [{"type": "text", ...}]}`).
    /// Empty = nothing added.
    std::string extra_json;
};

/// Options of ChatTemplate::render. Every string with JSON is parsed strictly; malformed
/// JSON throws genie::Error (ErrorCode::Format).
struct ChatTemplateOptions {
    /// Ask the template to end with the header of a new assistant turn (`add_generation_prompt`).
    bool add_generation_prompt = true;
    /// `enable_thinking` for templates that understand it (Qwen3). Unset = the variable is
    /// undefined, which such templates treat as true.
    std::optional<bool> enable_thinking;
    /// JSON array text of tool definitions (`tools`). Empty = `tools` is None, as in HF.
    std::string tools_json;
    /// JSON object text of further template variables (e.g. `{"date_string": "26 Jul 2024"}`).
    /// They are set last, so they override everything above.
    std::string extra_variables_json;
    /// `bos_token` / `eos_token` as the tokenizer spells them. Unset = undefined.
    std::optional<std::string> bos_token;
    std::optional<std::string> eos_token;
    /// The time `strftime_now` formats, in seconds since the Unix epoch, shown in local time.
    /// Unset = the current time.
    std::optional<std::int64_t> now_unix_seconds;
    /// Rendering fails (ErrorCode::InvalidArgument) when the output, or any string built on
    /// the way, would exceed this many bytes.
    std::size_t max_output_bytes = std::size_t{16} << 20;
};

/// A parsed chat template, ready to render conversations.
///
/// Ownership: copies share one immutable parsed template (a reference count).
/// Thread-safety: render() is const and may run on any number of threads at once.
/// Errors: construction throws genie::Error with ErrorCode::Format for a template that does
/// not parse, naming the line and column. Rendering throws genie::Error:
/// InvalidArgument when the template raises (`raise_exception`: the message is the
/// template's, after "chat template: "), when it fails at run time (undefined attribute,
/// type error, ...) or when a resource limit (output size, loop iterations, recursion
/// depth) is hit; Unsupported for a filter, test or method this implementation lacks;
/// Format for malformed JSON in the messages or options. No input crashes or hangs.
class GENIE_API ChatTemplate {
public:
    /// Parses `source` (the Jinja text of `tokenizer.chat_template`).
    explicit ChatTemplate(std::string_view source);
    /// The ChatML template (see chatml_template_source()), the fallback for a model without one.
    static ChatTemplate chatml();

    ChatTemplate(const ChatTemplate&) = default;
    ChatTemplate& operator=(const ChatTemplate&) = default;
    ChatTemplate(ChatTemplate&&) noexcept = default;
    ChatTemplate& operator=(ChatTemplate&&) noexcept = default;
    ~ChatTemplate();

    /// The template source as given to the constructor.
    const std::string& source() const noexcept;

    /// Renders `messages` (the `messages` variable) with `options`. Returns the prompt text.
    std::string render(std::span<const ChatMessage> messages, const ChatTemplateOptions& options = {}) const;

    /// Same, with the messages given as JSON array text (each element an object, passed to the
    /// template unchanged, key order kept), e.g. an OpenAI request's `messages`.
    std::string render_json(std::string_view messages_json, const ChatTemplateOptions& options = {}) const;

    struct Impl;

private:
    std::shared_ptr<const Impl> impl_;
};

/// The ChatML template (`<|im_start|>{role}\n{content}<|im_end|>\n` per message, then
/// `<|im_start|>assistant\n` when add_generation_prompt is set), which is what libgenie (like
/// llama.cpp) uses for a model whose GGUF has no `tokenizer.chat_template`. A message whose
/// content is not a string contributes an empty content. The returned view is static.
GENIE_API std::string_view chatml_template_source() noexcept;

/// A tool call the model asked for.
struct ToolCall {
    std::string name;            ///< the tool (function) name
    std::string arguments_json;  ///< its arguments as JSON text ("{}" when none were given)
    std::string id;              ///< the call id when the output gave one, else ""
    /// Why the call was not accepted (ChatResult::rejected_tool_calls only), else "".
    std::string error;
};

/// Finds the tool calls in model output, in the forms assistants see: Qwen's / Hermes'
/// `<tool_call>{"name": ..., "arguments": ...}</tool_call>` blocks (any number), an
/// OpenAI-style object with `"tool_calls": [{"function": {"name", "arguments"}}]`, a fenced
/// ```json block, or a bare JSON object `{"tool"|"name"|"function": ..., "arguments"|
/// "parameters": ...}`. Returns an empty vector when there is none (text that is not a
/// tool call is never an error). Thread-safe.
GENIE_API std::vector<ToolCall> extract_tool_calls(std::string_view text);

/// The JSON schema a forced tool call follows (tool_choice "required" or a named function):
/// `{"name": <const>, "arguments": <that tool's parameters schema>}` for each offered tool
/// in `tools_json` (OpenAI shape: `[{"type": "function", "function": {"name",
/// "parameters"}}]`), as an anyOf over the tools, or only `function_name` when not empty.
/// With `parallel`, a non-empty array of such calls is accepted too. A tool's `$ref`s are
/// rewritten to where its parameters sit in the result. Throws genie::Error
/// InvalidArgument naming the tool for bad tools JSON, an unknown function_name, or a
/// parameters schema outside the constraint's keywords ("tool 'x' parameters: JSON
/// schema: #/properties/y/not: unsupported keyword 'not'").
GENIE_API std::string tool_call_schema(std::string_view tools_json, std::string_view function_name = {},
                                       bool parallel = true);

/// The constraint options a forced tool call is built with (from tool_call_schema): compact
/// JSON (at most one whitespace byte per gap), strings without a maxLength capped at 256
/// characters, and a 1024-byte budget after which the constraint steers to the end of the
/// call, so a call always finishes.
GENIE_API JsonConstraintOptions tool_call_constraint_options();

/// Keeps in `calls` those that name a tool offered in `tools_json` and whose arguments
/// follow its parameters schema (json_matches_schema); with `parallel` false only the
/// first such call. Returns the others, each with ToolCall::error set. A tool whose
/// parameters schema the constraint cannot read accepts any arguments object.
GENIE_API std::vector<ToolCall> check_tool_calls(std::vector<ToolCall>& calls, std::string_view tools_json,
                                                 bool parallel = true);

}  // namespace genie
