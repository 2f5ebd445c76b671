// Fuzz target: genie-server's request parser (examples/server/request.cpp) must turn any
// byte string into either a typed request or a RequestError (HTTP 400), never a crash, a
// hang or another exception (libFuzzer reports an escaping exception as a crash).
#include "request.hpp"

#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    size_t sum = 0;
    try {
        const auto r = genie::server::parse_chat_request(body);
        for (const auto& m : r.messages) sum += m.role.size() + m.content.value_or("").size() + m.tool_calls_json.size();
        sum += r.tools_json.size() + r.json_schema.size() + r.extra_template_variables_json.size();
        (void)r.sampling.sampler_options(1);
    } catch (const genie::server::RequestError&) {
    }
    try {
        const auto r = genie::server::parse_completion_request(body);
        sum += r.prompt_text.size() + r.prompt_tokens.size();
    } catch (const genie::server::RequestError&) {
    }
    try {
        sum += genie::server::parse_tokenize_request(body).content.size();
    } catch (const genie::server::RequestError&) {
    }
    try {
        sum += genie::server::parse_detokenize_request(body).tokens.size();
    } catch (const genie::server::RequestError&) {
    }
    (void)sum;
    return 0;
}
