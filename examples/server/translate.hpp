// genie-server: a parsed HTTP request (request.hpp) -> the genie::Engine request that runs
// it. No HTTP here: the server's handlers translate, the library renders, schedules and
// generates (docs/server.md).
#pragma once

#include "request.hpp"

#include <genie/engine.hpp>

#include <cstdint>

namespace genie::server {

/// A chat completion's engine request: max_tokens (default: until the context of `n_ctx`
/// tokens is full), stop strings, thinking switch, template variables, tools (left out with
/// tool_choice "none"), and the constraint of response_format / grammar / a forced
/// tool_choice (which turns thinking off and drops stop strings: the constrained answer is
/// the JSON itself). `random_seed` is used when the request gives no seed. Throws
/// genie::Error InvalidArgument (a forced tool whose parameters the constraint cannot
/// express, a sampler value out of range).
EngineChatRequest engine_chat_request(const ChatRequest& r, int n_ctx, uint32_t random_seed);

/// A text completion's engine request: the prompt (text with BOS as the vocabulary asks and
/// control tokens recognised, llama-server's rule; or token ids), max_tokens, stop strings.
EngineTextRequest engine_text_request(const CompletionRequest& r, int n_ctx, uint32_t random_seed);

/// Whether the answer's tool calls are parsed (tools offered and tool_choice is not "none").
inline bool parses_tools(const ChatRequest& r) { return !r.tools_json.empty() && r.tool_choice != ToolChoice::None; }

}  // namespace genie::server
