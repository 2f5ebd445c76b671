// The one chat path: renders a conversation with the model's chat template and tokenizes
// it, for every front end (Session::chat, Engine, genie-server, the C ABI, Python).
#include "model/model_impl.hpp"

#include <genie/error.hpp>
#include <genie/session.hpp>

#include <cctype>

namespace genie {

std::string render_chat(const Model& model, std::span<const ChatMessage> messages, const ChatOptions& options,
                        bool add_generation_prompt) {
    const Tokenizer& tok = model.tokenizer();
    ChatTemplateOptions to;
    to.add_generation_prompt = add_generation_prompt;
    to.enable_thinking = options.enable_thinking;
    to.tools_json = options.tools_json;
    to.extra_variables_json = options.extra_variables_json;
    if (tok.bos() != kNoToken) to.bos_token = std::string(tok.token_text(tok.bos()));
    if (tok.eos() != kNoToken) to.eos_token = std::string(tok.token_text(tok.eos()));
    return model.impl().chat_template().render(messages, to);  // parsed once per Model
}

PreparedChat prepare_chat(const Model& model, std::span<const ChatMessage> messages, const ChatOptions& options) {
    const Tokenizer& tok = model.tokenizer();
    PreparedChat out;
    out.prompt = render_chat(model, messages, options, true);
    // BOS as the vocabulary asks, unless the template already wrote it (llama.cpp's rule).
    const std::string bos = tok.bos() != kNoToken ? std::string(tok.token_text(tok.bos())) : std::string();
    const bool has_bos_text = !bos.empty() && out.prompt.rfind(bos, 0) == 0;
    TokenizeOptions to;
    to.add_special = options.generate.add_special && !has_bos_text;
    to.parse_special = true;
    out.tokens = tok.tokenize(out.prompt, to);
    if (out.tokens.empty()) throw Error(ErrorCode::InvalidArgument, "the prompt is empty (no tokens)");
    // A template that opens the think block itself (DeepSeek-R1, QwQ) starts in reasoning.
    std::string_view tail(out.prompt);
    while (!tail.empty() && std::isspace(static_cast<unsigned char>(tail.back()))) tail.remove_suffix(1);
    out.starts_in_reasoning = tail.size() >= 7 && tail.substr(tail.size() - 7) == "<think>";
    return out;
}

}  // namespace genie
