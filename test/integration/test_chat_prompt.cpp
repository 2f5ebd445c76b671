// The one chat path (prepare_chat / render_chat, lib/runtime/chat_prompt.cpp): the
// model's template or the ChatML fallback, the BOS rule, "starts in reasoning", and the
// generation loop's deadline and idle timeout (GenerateOptions).
#include "gguf/gguf_reader.hpp"
#include "gguf/gguf_writer.hpp"
#include "support/test_support.hpp"

#include <genie/error.hpp>
#include <genie/model.hpp>
#include <genie/session.hpp>

#include <catch2/catch.hpp>

#include <algorithm>

using namespace genie;

namespace {

std::filesystem::path stories() { return test::testdata_dir() / "models" / "stories260K.gguf"; }

/// A copy of stories260K (no chat template of its own) with `chat_template` as its template.
std::filesystem::path stories_with_template(const std::string& tag, const std::string& chat_template) {
    const auto reader = gguf::Reader::open(stories());
    gguf::Writer w;
    w.copy_metadata(reader);
    for (const auto& t : reader.tensors())
        w.add_tensor(t.name, t.type, t.shape, std::vector<uint8_t>(t.data, t.data + t.size_bytes));
    w.set("tokenizer.chat_template", chat_template);
    const auto path = test::temp_path("stories-template-" + tag);
    w.write(path);
    return path;
}

ChatMessage user(std::string content) {
    ChatMessage m;
    m.role = "user";
    m.content = std::move(content);
    return m;
}

SessionOptions small_session() {
    SessionOptions so;
    so.context_length = 256;
    so.threads = 1;
    return so;
}

std::vector<TokenId> tokenize(const Model& model, const std::string& text, bool add_special) {
    TokenizeOptions to;
    to.add_special = add_special;
    to.parse_special = true;
    return model.tokenizer().tokenize(text, to);
}

}  // namespace

TEST_CASE("prepare_chat: the model's own template, its tokens, and Session::chat on the result", "[session][chat]") {
    const auto path = test::fixture_dir() / "qwen3-tiny-q4_k_m.gguf";
    if (!std::filesystem::exists(path)) FAIL("fixture missing: " << path);
    const Model model = Model::load(path);
    REQUIRE_FALSE(model.chat_template().empty());
    const std::vector<ChatMessage> messages{user("Turn on the light")};
    ChatOptions co;
    co.enable_thinking = false;
    const PreparedChat prepared = prepare_chat(model, messages, co);
    CHECK(prepared.prompt == "<|im_start|>user\nTurn on the light<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
    CHECK(prepared.prompt == render_chat(model, messages, co));
    CHECK(render_chat(model, messages, co, false) == "<|im_start|>user\nTurn on the light<|im_end|>\n");
    CHECK(prepared.tokens == tokenize(model, prepared.prompt, true));
    CHECK_FALSE(prepared.starts_in_reasoning);

    Session session(model, small_session());
    Sampler greedy;
    co.generate.max_tokens = 4;
    const ChatResult from_prepared = session.chat(prepared, greedy, co);
    CHECK(from_prepared.prompt == prepared.prompt);
    CHECK(from_prepared.generation.prompt_tokens == static_cast<int32_t>(prepared.tokens.size()));
    session.reset();
    Sampler greedy2;
    const ChatResult from_messages = session.chat(messages, greedy2, co);
    CHECK(from_messages.generation.tokens == from_prepared.generation.tokens);
}

TEST_CASE("prepare_chat: ChatML without a template, and BOS once whoever writes it", "[session][chat]") {
    const Model model = Model::load(stories());
    REQUIRE(model.chat_template().empty());
    const Tokenizer& tok = model.tokenizer();
    REQUIRE(tok.bos() != kNoToken);
    REQUIRE(tok.adds_bos());
    const std::vector<ChatMessage> messages{user("Hi")};
    const PreparedChat chatml = prepare_chat(model, messages);
    CHECK(chatml.prompt == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    REQUIRE_FALSE(chatml.tokens.empty());
    CHECK(chatml.tokens.front() == tok.bos());  // the vocabulary asks for BOS
    ChatOptions no_special;
    no_special.generate.add_special = false;
    CHECK(prepare_chat(model, messages, no_special).tokens.front() != tok.bos());

    // A template that writes the BOS text itself gets no second BOS (llama.cpp's rule).
    const Model own_bos =
        Model::load(stories_with_template("bos", "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}"));
    const PreparedChat with_bos = prepare_chat(own_bos, messages);
    CHECK(with_bos.prompt == std::string(tok.token_text(tok.bos())) + "Hi");
    CHECK(std::count(with_bos.tokens.begin(), with_bos.tokens.end(), tok.bos()) == 1);
    CHECK(with_bos.tokens.front() == tok.bos());
}

TEST_CASE("prepare_chat: a template that opens the think block starts the answer in reasoning", "[session][chat]") {
    const Model opens = Model::load(stories_with_template(
        "think", "{% for m in messages %}{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}<think>\n{% endif %}"));
    const std::vector<ChatMessage> messages{user("Once upon a time")};
    const PreparedChat prepared = prepare_chat(opens, messages);
    CHECK(prepared.prompt == "Once upon a time\n<think>\n");
    CHECK(prepared.starts_in_reasoning);
    Session session(opens, small_session());
    Sampler greedy;
    ChatOptions co;
    co.generate.max_tokens = 8;
    std::vector<Piece> pieces;
    const ChatResult r = session.chat(prepared, greedy, co, [&](const Piece& p) {
        pieces.push_back(p);
        return true;
    });
    // The tiny story model never writes "</think>": everything it says is reasoning.
    REQUIRE(r.generation.completion_tokens > 0);
    CHECK(r.generation.text.empty());
    CHECK_FALSE(r.generation.reasoning.empty());
    for (const Piece& p : pieces) CHECK(p.kind == PieceKind::Reasoning);

    // The same template without the opening tag does not.
    const Model plain = Model::load(stories_with_template("plain", "{% for m in messages %}{{ m.content }}\n{% endfor %}"));
    CHECK_FALSE(prepare_chat(plain, messages).starts_in_reasoning);
}

TEST_CASE("generate: the deadline and the idle timeout end generation with Timeout", "[session]") {
    const Model model = Model::load(stories());
    Session session(model, small_session());
    GenerateOptions go;
    go.max_tokens = 8;
    go.stop_on_eog = false;
    Sampler s1;
    CHECK(session.generate("Once upon a time", s1, go).finish_reason == FinishReason::Length);

    go.deadline_s = 1e-9;  // passed by the time the first token is sampled
    Sampler s2;
    GenerateResult r = session.generate("Once upon a time", s2, go);
    CHECK(r.finish_reason == FinishReason::Timeout);
    CHECK(r.completion_tokens == 1);

    go.deadline_s = 0;
    go.idle_timeout_s = 1e-9;  // the first token's wait includes the prompt's evaluation
    Sampler s3;
    r = session.generate("Once upon a time", s3, go);
    CHECK(r.finish_reason == FinishReason::Timeout);
    CHECK(r.completion_tokens == 1);

    go.idle_timeout_s = 3600;
    go.deadline_s = 3600;
    Sampler s4;
    CHECK(session.generate("Once upon a time", s4, go).finish_reason == FinishReason::Length);

    go.deadline_s = -1;
    Sampler s5;
    CHECK_THROWS_AS(session.generate("Once upon a time", s5, go), Error);
}
