// genie-server: request bodies (JSON text) -> typed requests. No HTTP here, so the
// parser can be fuzzed on its own (test/fuzz/fuzz_server_request.cpp).
//
// Rules (docs/server.md): unknown fields are ignored; a field that is present with the
// wrong type is an error naming the field (HTTP 400, invalid_request_error); a JSON null
// counts as absent (as llama-server's json_value does).
#pragma once

#include <genie/chat.hpp>
#include <genie/sampler.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace genie::server {

/// A bad request: `what()` is the message sent back with HTTP 400.
class RequestError : public std::runtime_error {
public:
    explicit RequestError(const std::string& message) : std::runtime_error(message) {}
};

/// Sampling fields shared by /v1/chat/completions and /v1/completions. Unset = the
/// server's default (llama-server's: temperature 0.8, top_k 40, top_p 0.95, min_p 0.05,
/// a random seed).
struct SamplingFields {
    std::optional<float> temperature, top_p, min_p, typical_p;
    std::optional<int32_t> top_k;
    std::optional<uint32_t> seed;  ///< absent or -1: a random seed per request
    std::optional<float> presence_penalty, frequency_penalty, repeat_penalty;
    std::optional<int32_t> repeat_last_n;
    std::optional<int32_t> max_tokens;  ///< max_tokens / max_completion_tokens / n_predict; -1 = unset
    std::vector<std::string> stop;

    /// The sampler options with the defaults above; `random_seed` is used when no seed was given.
    SamplerOptions sampler_options(uint32_t random_seed) const;
};

enum class ResponseFormat { Text, JsonObject, JsonSchema };
enum class ToolChoice { Auto, None, Required, Named };

struct ChatRequest {
    std::vector<ChatMessage> messages;
    SamplingFields sampling;
    bool stream = false;
    bool include_usage = false;  ///< stream_options.include_usage
    std::string model;           ///< echoed back ("" = the loaded model's name)
    ResponseFormat response_format = ResponseFormat::Text;
    std::string json_schema;  ///< the schema (JSON text) for JsonSchema, or for JsonObject with a "schema"
    std::string tools_json;   ///< JSON array text of the tools, "" = none
    std::vector<std::string> tool_names;
    ToolChoice tool_choice = ToolChoice::Auto;
    std::string tool_choice_name;             ///< for ToolChoice::Named
    /// More than one call per answer. Unset: an `auto` answer returns all its calls, while a
    /// forced call (required / named) is one object; true also lets a forced answer be an
    /// array of calls.
    std::optional<bool> parallel_tool_calls;
    std::string grammar;                      ///< a GBNF grammar the answer follows ("" = none)
    std::optional<bool> enable_thinking;      ///< think / chat_template_kwargs.enable_thinking
    std::string extra_template_variables_json;  ///< chat_template_kwargs minus enable_thinking, "" = none
    std::string conversation_id;              ///< "" = none
};

struct CompletionRequest {
    std::string prompt_text;             ///< when the prompt is a string
    std::vector<int32_t> prompt_tokens;  ///< when the prompt is an array of token ids
    bool prompt_is_tokens = false;
    SamplingFields sampling;
    bool stream = false;
    bool include_usage = false;
    std::string model;
    std::string conversation_id;
};

struct TokenizeRequest {
    std::string content;
    bool add_special = false;
    bool parse_special = true;
    bool with_pieces = false;
};

struct DetokenizeRequest {
    std::vector<int32_t> tokens;
};

/// Each throws RequestError for invalid JSON (or JSON nested deeper than 128 levels), a body
/// that is not an object, a missing required field or a field of the wrong type.
ChatRequest parse_chat_request(std::string_view body);
CompletionRequest parse_completion_request(std::string_view body);
TokenizeRequest parse_tokenize_request(std::string_view body);
DetokenizeRequest parse_detokenize_request(std::string_view body);

}  // namespace genie::server
