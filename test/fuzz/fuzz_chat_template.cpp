// Fuzz target: the chat-template renderer (Jinja lexer, parser, interpreter, builtins).
// Input: one options byte, then fields separated by 0xFF bytes: the template source, the
// messages as JSON, tools JSON, extra-variables JSON, then role/content pairs rendered
// through the structured ChatMessage API. Every input must render or throw genie::Error
// (never crash, hang or throw anything else); a rendered prompt never exceeds
// max_output_bytes.
#include "fuzz_support.hpp"

#include "chat/template_limits.hpp"

#include <genie/chat.hpp>
#include <genie/error.hpp>

#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // Lower limits than a real render's (1 M loop iterations, 50 M steps, 256 MB of
    // strings), so that an input costs milliseconds, not seconds, under ASan: every limit
    // is still reached and must still end the render with an Error.
    static const bool limited = (genie::detail::set_template_limits_for_testing(2'000, 200'000, size_t{4} << 20), true);
    (void)limited;
    if (size > 16384) return 0;
    genie_fuzz::Input in(data, size);
    const uint8_t mode = in.byte();
    const std::string_view source = in.until('\xff');
    const std::string_view messages_json = in.until('\xff');
    const std::string_view tools_json = in.until('\xff');
    const std::string_view extra_json = in.until('\xff');
    std::vector<genie::ChatMessage> messages;
    while (!in.empty() && messages.size() < 16) {
        genie::ChatMessage m;
        m.role = std::string(in.until('\xff'));
        const std::string_view content = in.until('\xff');
        if (!(content.size() == 1 && content[0] == '\x01')) m.content = std::string(content);  // "\x01" = None
        messages.push_back(std::move(m));
    }

    genie::ChatTemplateOptions options;
    options.add_generation_prompt = (mode & 1) != 0;
    if (mode & 2) options.enable_thinking = (mode & 4) != 0;
    if (mode & 8) options.tools_json = std::string(tools_json);
    if (mode & 16) options.extra_variables_json = std::string(extra_json);
    if (mode & 32) {
        options.bos_token = "<s>";
        options.eos_token = "</s>";
    }
    options.now_unix_seconds = 1'700'000'000;  // deterministic strftime_now
    options.max_output_bytes = 64 * 1024;      // keeps each run short; the limit itself is under test

    try {
        const genie::ChatTemplate tmpl(source);
        for (int pass = 0; pass < 2; ++pass) {
            try {
                const std::string out = pass == 0 ? tmpl.render_json(messages_json, options) : tmpl.render(messages, options);
                if (out.size() > options.max_output_bytes)
                    genie_fuzz::property_failed("rendered text exceeds max_output_bytes");
            } catch (const genie::Error&) {
            }
        }
    } catch (const genie::Error&) {
    }
    return 0;
}
