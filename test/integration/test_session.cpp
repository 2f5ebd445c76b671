// Session behaviour on real and generated models: cancellation, prefix reuse, errors.
#include "gguf/gguf_reader.hpp"
#include "gguf/gguf_writer.hpp"
#include "support/test_support.hpp"

#include <genie/error.hpp>
#include <genie/model.hpp>
#include <genie/session.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <fstream>
#include <thread>

using namespace genie;

namespace {

std::filesystem::path stories() { return test::testdata_dir() / "models" / "stories260K.gguf"; }

nlohmann::json stories_golden() {
    std::ifstream in(std::filesystem::path(GENIE_SOURCE_DIR) / "test" / "golden" / "stories260K.json");
    return nlohmann::json::parse(in);
}

SessionOptions f32_session() {
    SessionOptions so;
    so.context_length = 512;
    so.threads = 2;
    so.kv_type = KvType::F32;  // the stories260K golden file was made with an F32 cache
    return so;
}

/// A copy of stories260K with one change to its metadata or tensor directory.
std::filesystem::path modified_stories(const std::string& tag,
                                       const std::function<void(gguf::Writer&, const gguf::Reader&)>& edit,
                                       const std::function<bool(const gguf::TensorInfo&)>& keep_tensor = {}) {
    const auto reader = gguf::Reader::open(stories());
    gguf::Writer w;
    w.copy_metadata(reader);
    for (const auto& t : reader.tensors())
        if (!keep_tensor || keep_tensor(t))
            w.add_tensor(t.name, t.type, t.shape, std::vector<uint8_t>(t.data, t.data + t.size_bytes));
    edit(w, reader);
    const auto path = test::temp_path("stories-" + tag);
    w.write(path);
    return path;
}

ErrorCode load_error(const std::filesystem::path& path, std::string& message) {
    try {
        Model::load(path);
    } catch (const Error& e) {
        message = e.what();
        return e.code();
    }
    return ErrorCode::Ok;
}

}  // namespace

TEST_CASE("session: greedy generate equals the golden continuation and prefix reuse evaluates only the suffix",
          "[session]") {
    const auto golden = stories_golden();
    const auto& c0 = golden["cases"][0];
    const std::vector<TokenId> prompt = c0["prompt_tokens"], expected = c0["tokens"];
    const Model model = Model::load(stories());
    Session session(model, f32_session());
    Sampler greedy;
    GenerateOptions go;
    go.max_tokens = 32;
    go.stop_on_eog = false;
    const GenerateResult first = session.generate(std::span<const TokenId>(prompt), greedy, go);
    REQUIRE(first.tokens == std::vector<TokenId>(expected.begin(), expected.begin() + 32));
    CHECK(first.reused_prompt_tokens == 0);
    CHECK(first.prompt_tokens == static_cast<int32_t>(prompt.size()));
    CHECK(first.completion_tokens == 32);
    CHECK(first.finish_reason == FinishReason::Length);
    CHECK(first.timings.prompt_eval_ms >= 0.0);
    CHECK(first.timings.time_to_first_token_ms > 0.0);
    // The cache holds the prompt and all generated tokens but the last.
    CHECK(session.cached_tokens().size() == prompt.size() + 31);

    // Second turn: the whole previous sequence + its continuation -> only the suffix is evaluated,
    // and the output still follows the golden continuation.
    std::vector<TokenId> second = prompt;
    second.insert(second.end(), expected.begin(), expected.begin() + 40);
    const GenerateResult r = session.generate(std::span<const TokenId>(second), greedy, go);
    CHECK(r.reused_prompt_tokens == static_cast<int32_t>(prompt.size()) + 31);
    REQUIRE(r.completion_tokens == 32);
    CHECK(std::vector<TokenId>(r.tokens.begin(), r.tokens.begin() + 24) ==
          std::vector<TokenId>(expected.begin() + 40, expected.begin() + 64));  // the golden file has 24 left
}

TEST_CASE("session: text prompts, EOG stop and the piece callback", "[session]") {
    const Model model = Model::load(stories());
    Session session(model, f32_session());
    Sampler greedy;
    std::string streamed;
    int pieces = 0;
    GenerateOptions go;
    go.max_tokens = 40;
    const GenerateResult r = session.generate("Once upon a time", greedy, go, [&](const Piece& p) {
        streamed += p.text;
        ++pieces;
        CHECK(p.kind == PieceKind::Content);
        return true;
    });
    CHECK(streamed == r.text);
    CHECK(pieces > 0);
    CHECK(pieces <= r.completion_tokens + 1);
    CHECK(r.finish_reason == FinishReason::Length);
    CHECK(r.text.rfind(", there was a little girl named Lily", 0) == 0);

    // The callback returning false stops at once.
    session.reset();
    const GenerateResult stopped = session.generate("Once upon a time", greedy, go, [](const Piece&) { return false; });
    CHECK(stopped.completion_tokens == 1);
    CHECK(stopped.finish_reason == FinishReason::Stop);
}

TEST_CASE("session: an end-of-generation token stops generation and is not part of the output", "[session]") {
    // In the llama fixtures the output projection maps token t to the permuted embedding
    // perm(t) = (7919 t + 1) mod 32000, so after token perm(2) = 15839 the argmax is EOS (2).
    const auto path = test::fixture_dir() / "llama-tiny-f32.gguf";
    if (!std::filesystem::exists(path)) FAIL("fixture missing: " << path);
    const Model model = Model::load(path);
    REQUIRE(model.tokenizer().eos() == 2);
    Session session(model, f32_session());
    Sampler greedy;
    const std::vector<TokenId> prompt{1, 400, 15839};
    GenerateOptions go;
    go.max_tokens = 10;
    const GenerateResult r = session.generate(std::span<const TokenId>(prompt), greedy, go);
    CHECK(r.finish_reason == FinishReason::Stop);
    CHECK(r.completion_tokens == 0);
    CHECK(r.text.empty());
    go.stop_on_eog = false;
    const GenerateResult all = session.generate(std::span<const TokenId>(prompt), greedy, go);
    CHECK(all.finish_reason == FinishReason::Length);
    REQUIRE(all.completion_tokens == 10);
    CHECK(all.tokens[0] == 2);
}

TEST_CASE("session: cancel() from another thread stops within one token", "[session]") {
    const Model model = Model::load(stories());
    Session session(model, f32_session());
    Sampler greedy;
    GenerateOptions go;
    go.max_tokens = 2000;
    go.stop_on_eog = false;
    std::atomic<int> seen{0};
    std::atomic<int> at_cancel{-1};
    std::thread canceller;
    const GenerateResult r = session.generate("Once upon a time", greedy, go, [&](const Piece&) {
        if (++seen == 10) {
            canceller = std::thread([&] {
                at_cancel = seen.load();
                session.cancel();
            });
            canceller.join();  // cancel has been requested before this callback returns
        }
        return true;
    });
    CHECK(r.finish_reason == FinishReason::Cancelled);
    CHECK(at_cancel == 10);
    CHECK(r.completion_tokens == 10);  // no token after the one during which cancel() arrived
    // The session stays usable.
    go.max_tokens = 3;
    CHECK(session.generate("Once upon a time", greedy, go).completion_tokens == 3);
}

TEST_CASE("session: a prompt longer than the context is CONTEXT_OVERFLOW and leaves the cache alone", "[session]") {
    const Model model = Model::load(stories());
    SessionOptions so = f32_session();
    so.context_length = 16;
    Session session(model, so);
    Sampler greedy;
    GenerateOptions go;
    go.max_tokens = 4;
    session.generate("Once upon a time", greedy, go);
    const std::vector<TokenId> before(session.cached_tokens().begin(), session.cached_tokens().end());
    std::vector<TokenId> long_prompt(17, 403);
    try {
        session.generate(std::span<const TokenId>(long_prompt), greedy, go);
        FAIL("expected CONTEXT_OVERFLOW");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::ContextOverflow);
        CHECK_THAT(std::string(e.what()), Catch::Contains("17 tokens") && Catch::Contains("16"));
    }
    CHECK(std::vector<TokenId>(session.cached_tokens().begin(), session.cached_tokens().end()) == before);
    // Generation that reaches the end of the context stops with Length.
    go.max_tokens = 100;
    go.stop_on_eog = false;
    const GenerateResult r = session.generate("Once upon a time", greedy, go);
    CHECK(r.finish_reason == FinishReason::Length);
    CHECK(session.cached_tokens().size() == 16);
    // Out-of-vocabulary ids are rejected.
    const std::vector<TokenId> bad{1, 99999};
    CHECK_THROWS_AS(session.generate(std::span<const TokenId>(bad), greedy, go), Error);
}

TEST_CASE("model: missing tensor, wrong shape, unknown architecture and bad rope scaling are clear errors",
          "[model][errors]") {
    std::string msg;
    auto missing = modified_stories("missing", [](gguf::Writer&, const gguf::Reader&) {},
                                    [](const gguf::TensorInfo& t) { return t.name != "blk.2.ffn_up.weight"; });
    CHECK(load_error(missing, msg) == ErrorCode::Format);
    CHECK_THAT(msg, Catch::Contains("blk.2.ffn_up.weight") && Catch::Contains("missing"));

    auto wrong_shape = modified_stories("shape", [](gguf::Writer& w, const gguf::Reader& r) {
        // Claim a wider feed-forward than the tensors have.
        (void)r;
        w.set("llama.feed_forward_length", uint32_t{256});
    });
    CHECK(load_error(wrong_shape, msg) == ErrorCode::Format);
    CHECK_THAT(msg, Catch::Contains("blk.0.ffn_gate.weight") && Catch::Contains("[64, 172]") && Catch::Contains("[64, 256]"));

    auto unknown = modified_stories("arch", [](gguf::Writer& w, const gguf::Reader&) { w.set("general.architecture", "mamba"); });
    CHECK(load_error(unknown, msg) == ErrorCode::Unsupported);
    CHECK_THAT(msg, Catch::Contains("mamba"));

    auto rope = modified_stories("rope", [](gguf::Writer& w, const gguf::Reader&) {
        w.set("llama.rope.scaling.type", "longrope");
        w.set("llama.rope.scaling.factor", 4.0f);
    });
    CHECK(load_error(rope, msg) == ErrorCode::Unsupported);
    CHECK_THAT(msg, Catch::Contains("longrope"));

    auto heads = modified_stories("heads", [](gguf::Writer& w, const gguf::Reader&) { w.set("llama.attention.head_count_kv", uint32_t{3}); });
    CHECK(load_error(heads, msg) == ErrorCode::Format);
    CHECK_THAT(msg, Catch::Contains("head_count_kv"));

    for (const auto& p : {missing, wrong_shape, unknown, rope, heads}) std::filesystem::remove(p);
}

TEST_CASE("model: info of stories260K", "[model]") {
    const Model model = Model::load(stories());
    const ModelInfo& info = model.info();
    CHECK(info.architecture == "llama");
    CHECK(info.n_layer == 5);
    CHECK(info.n_embd == 64);
    CHECK(info.n_head == 8);
    CHECK(info.n_head_kv == 4);
    CHECK(info.head_dim == 8);
    CHECK(info.n_ff == 172);
    CHECK(info.n_vocab == 512);
    CHECK(info.parameter_count == 292800);
    CHECK(model.tokenizer().vocab_size() == 512);
    CHECK(model.load_time_ms() > 0.0);
    // A Model is a cheap shared handle: a session keeps it alive.
    std::unique_ptr<Session> s;
    {
        const Model copy = Model::load(stories());
        s = std::make_unique<Session>(copy, f32_session());
    }
    Sampler greedy;
    GenerateOptions go;
    go.max_tokens = 2;
    CHECK(s->generate("Once", greedy, go).completion_tokens == 2);
}

TEST_CASE("model: decode_bytes counts one row of an untied embedding table, all of a tied one", "[model]") {
    for (const auto& path : {stories(), test::fixture_dir() / "qwen3-tiny-q4_k_m.gguf", test::fixture_dir() / "llama-tiny-q4_k_m.gguf"}) {
        INFO(path);
        if (!std::filesystem::exists(path)) FAIL("fixture missing: " << path);
        const gguf::Reader reader = gguf::Reader::open(path);
        uint64_t all = 0, embd = 0;
        bool tied = true;
        for (const auto& t : reader.tensors()) {
            all += t.size_bytes;
            if (t.name == "token_embd.weight") embd = t.size_bytes;
            if (t.name == "output.weight") tied = false;
        }
        const ModelInfo info = Model::load(path).info();
        CHECK(info.weight_bytes == all);
        const uint64_t n_vocab = static_cast<uint64_t>(info.n_vocab);
        CHECK(info.decode_bytes == (tied ? all : all - embd / n_vocab * (n_vocab - 1)));
    }
}

TEST_CASE("session: chat renders the model's template, reuses the prefix and splits reasoning", "[session][chat]") {
    const auto path = test::fixture_dir() / "qwen3-tiny-q4_k_m.gguf";
    if (!std::filesystem::exists(path)) FAIL("fixture missing: " << path);
    const Model model = Model::load(path);
    SessionOptions so;
    so.context_length = 512;
    so.threads = 2;
    Session session(model, so);
    Sampler greedy;
    std::vector<ChatMessage> messages{{.role = "system", .content = "You are a helpful assistant."},
                                      {.role = "user", .content = "Turn on the kitchen light"}};
    ChatOptions co;
    co.generate.max_tokens = 8;
    co.enable_thinking = false;
    std::vector<Piece> pieces;
    const ChatResult first = session.chat(messages, greedy, co, [&](const Piece& p) {
        pieces.push_back(p);
        return true;
    });
    // The prompt is Qwen3's own template output (enable_thinking=false adds an empty think block).
    CHECK(first.prompt ==
          "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nTurn on the kitchen "
          "light<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
    CHECK(first.generation.completion_tokens == 8);
    CHECK(first.generation.reused_prompt_tokens == 0);
    for (const auto& p : pieces) CHECK(p.kind == PieceKind::Content);

    // Follow-up turn: the earlier conversation is reused from the cache.
    messages.push_back({.role = "assistant", .content = first.generation.text});
    messages.push_back({.role = "user", .content = "And the hallway?"});
    const ChatResult second = session.chat(messages, greedy, co);
    CHECK(second.generation.reused_prompt_tokens > 20);
    CHECK(second.generation.reused_prompt_tokens < second.generation.prompt_tokens);

    // A stop string ends the answer without being emitted.
    session.reset();
    co.generate.max_tokens = 16;
    const ChatResult full = session.chat(messages, greedy, co);
    if (full.generation.text.size() > 3) {
        const std::string stop = full.generation.text.substr(2, 2);
        co.generate.stop = {stop};
        const ChatResult stopped = session.chat(messages, greedy, co);
        CHECK(stopped.generation.finish_reason == FinishReason::Stop);
        CHECK(stopped.generation.text == full.generation.text.substr(0, full.generation.text.find(stop)));
    }
}

TEST_CASE("model: the load progress callback reports 0..1 and can cancel", "[model]") {
    std::vector<float> seen;
    ModelOptions options;
    options.progress = [&](float f) {
        seen.push_back(f);
        return true;
    };
    Model::load(stories(), options);
    REQUIRE(seen.size() >= 2);
    CHECK(seen.front() == 0.0f);
    CHECK(seen.back() == 1.0f);
    CHECK(std::is_sorted(seen.begin(), seen.end()));
    options.progress = [](float f) { return f < 0.5f; };
    try {
        Model::load(stories(), options);
        FAIL("expected Cancelled");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::Cancelled);
    }
}
