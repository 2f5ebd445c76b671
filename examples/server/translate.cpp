// genie-server: HTTP requests -> genie::Engine requests.
#include "translate.hpp"

#include <genie/constraint.hpp>
#include <genie/error.hpp>

namespace genie::server {

EngineChatRequest engine_chat_request(const ChatRequest& r, int n_ctx, uint32_t random_seed) {
    EngineChatRequest out;
    out.conversation_id = r.conversation_id;
    out.messages = r.messages;
    out.sampler = r.sampling.sampler_options(random_seed);
    ChatOptions& co = out.options;
    co.generate.max_tokens = r.sampling.max_tokens.value_or(n_ctx);
    co.generate.stop = r.sampling.stop;
    co.enable_thinking = r.enable_thinking;
    co.extra_variables_json = r.extra_template_variables_json;
    if (parses_tools(r)) co.tools_json = r.tools_json;
    co.parallel_tool_calls = r.parallel_tool_calls.value_or(true);

    const bool force_tool = !r.tools_json.empty() && (r.tool_choice == ToolChoice::Required || r.tool_choice == ToolChoice::Named);
    if (force_tool) {
        // tool_choice "required" / a named function: the answer is a call of an offered tool,
        // {"name": ..., "arguments": {...}} with that tool's own parameters schema (or, with
        // parallel_tool_calls, an array of such calls), compact (one optional space per gap).
        // A parameters schema outside the constraint's keywords is a 400 naming the tool.
        out.response_format = genie::ResponseFormat::JsonSchema;
        out.json_schema = tool_call_schema(r.tools_json, r.tool_choice == ToolChoice::Named ? r.tool_choice_name : "",
                                           r.parallel_tool_calls.value_or(false));
        out.constraint_options = tool_call_constraint_options();
    } else if (!r.grammar.empty()) {
        out.response_format = genie::ResponseFormat::Grammar;
        out.grammar = r.grammar;
    } else if (r.response_format == ResponseFormat::JsonObject) {
        out.response_format = genie::ResponseFormat::JsonObject;
    } else if (r.response_format == ResponseFormat::JsonSchema) {
        out.response_format = genie::ResponseFormat::JsonSchema;
        out.json_schema = r.json_schema;
    }
    if (out.response_format != genie::ResponseFormat::Text) {
        co.enable_thinking = false;
        co.generate.stop.clear();
    }
    return out;
}

EngineTextRequest engine_text_request(const CompletionRequest& r, int n_ctx, uint32_t random_seed) {
    EngineTextRequest out;
    out.conversation_id = r.conversation_id;
    out.sampler = r.sampling.sampler_options(random_seed);
    out.generate.max_tokens = r.sampling.max_tokens.value_or(n_ctx);
    out.generate.stop = r.sampling.stop;
    out.generate.add_special = true;
    out.generate.parse_special = true;
    if (r.prompt_is_tokens && r.prompt_tokens.empty()) throw Error(ErrorCode::InvalidArgument, "'prompt' is empty (no tokens)");
    if (r.prompt_is_tokens)
        out.prompt_tokens.assign(r.prompt_tokens.begin(), r.prompt_tokens.end());
    else
        out.prompt = r.prompt_text;
    return out;
}

}  // namespace genie::server
