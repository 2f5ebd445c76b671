// KV persistence: Session::save_state / load_state round trips (F16, F32, Q8_0), the
// rejection of files for another model, KV type or shape and of truncated or corrupt
// files (the session left unchanged), and KvCacheDir's budget and LRU eviction.
#include "runtime/kv_file.hpp"
#include "support/test_support.hpp"

#include <genie/error.hpp>
#include <genie/genie.h>
#include <genie/model.hpp>
#include <genie/session.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cstring>
#include <filesystem>

using namespace genie;

namespace {

std::filesystem::path fixture(const std::string& name) {
    const auto path = test::fixture_dir() / (name + ".gguf");
    if (!std::filesystem::exists(path))
        FAIL(fmt::format("{} is missing: the ctest fixture 'fixtures' generates it (scripts/make-fixtures)", path.string()));
    return path;
}

SessionOptions options(KvType type, int32_t context = 256) {
    SessionOptions so;
    so.context_length = context;
    so.threads = 2;
    so.kv_type = type;
    return so;
}

std::vector<TokenId> greedy(Session& s, std::span<const TokenId> prompt, int32_t n, int32_t* reused = nullptr) {
    Sampler sampler(SamplerOptions{} /* greedy: temperature 0 */);
    GenerateOptions go;
    go.max_tokens = n;
    go.stop_on_eog = false;
    const GenerateResult r = s.generate(prompt, sampler, go);
    if (reused) *reused = r.reused_prompt_tokens;
    return r.tokens;
}

/// A session that has evaluated a prompt and generated 16 tokens (so the cache holds both).
Session primed(const Model& model, KvType type, int32_t context = 256) {
    Session s(model, options(type, context));
    const std::vector<TokenId> prompt = model.tokenizer().tokenize("The quick brown fox jumps over the lazy dog. Then");
    greedy(s, prompt, 16);
    return s;
}

ErrorCode load_error(Session& s, const std::filesystem::path& path, std::string& message) {
    try {
        s.load_state(path);
    } catch (const Error& e) {
        message = e.what();
        return e.code();
    }
    return ErrorCode::Ok;
}

struct TempFiles {
    std::vector<std::filesystem::path> paths;
    std::filesystem::path make(const std::string& stem) {
        paths.push_back(test::temp_path(stem, ".gkv"));
        return paths.back();
    }
    ~TempFiles() {
        std::error_code ec;
        for (const auto& p : paths) std::filesystem::remove_all(p, ec);
    }
};

}  // namespace

TEST_CASE("kv state: XXH64 matches the reference test vectors", "[kv][state]") {
    CHECK(runtime::xxh64("", 0) == 0xEF46DB3751D8E999ULL);
    CHECK(runtime::xxh64("abc", 3) == 0x44BC2CF5AD770999ULL);
    const std::string s = "Nobody inspects the spammish repetition";
    CHECK(runtime::xxh64(s.data(), s.size()) == 0xFBCEA83C8A378BF1ULL);
    // Streaming in odd pieces gives the one-shot digest.
    std::string long_text;
    for (int i = 0; i < 100; ++i) long_text += fmt::format("{} {} ", i, s);
    runtime::Xxh64 h;
    for (size_t at = 0; at < long_text.size(); at += 7) h.update(long_text.data() + at, std::min<size_t>(7, long_text.size() - at));
    CHECK(h.digest() == runtime::xxh64(long_text.data(), long_text.size()));
}

TEST_CASE("kv state: a restored session continues exactly like the original", "[kv][state][fixtures]") {
    TempFiles tmp;
    for (const KvType type : {KvType::F16, KvType::F32, KvType::Q8_0}) {
        for (const std::string name : {"qwen3-tiny-q4_k_m", "llama-tiny-f16"}) {
            DYNAMIC_SECTION(name << " kv type " << static_cast<int>(type)) {
                const Model model = Model::load(fixture(name));
                Session a = primed(model, type);
                const std::vector<TokenId> held(a.cached_tokens().begin(), a.cached_tokens().end());
                REQUIRE(held.size() > 16);
                const auto path = tmp.make("state");
                const uint64_t size = a.save_state(path);
                CHECK(size == std::filesystem::file_size(path));
                const size_t row = static_cast<size_t>(model.info().n_head_kv) * model.info().head_dim;
                const size_t row_bytes = type == KvType::F16 ? row * 2 : type == KvType::F32 ? row * 4 : row / 32 * 34;
                // Only the used cells: header + tokens + K and V of each layer.
                CHECK(size == runtime::kKvFileHeaderBytes + held.size() * 4 +
                                  2 * static_cast<size_t>(model.info().n_layer) * held.size() * row_bytes);

                // The original continues (re-evaluating its last cached token for the logits).
                const std::vector<TokenId> expected = greedy(a, held, 32);
                REQUIRE(expected.size() == 32);

                // A fresh session (larger context) restores the file and continues identically,
                // reusing every cached token.
                Session b(model, options(type, 512));
                b.load_state(path);
                CHECK(std::vector<TokenId>(b.cached_tokens().begin(), b.cached_tokens().end()) == held);
                CHECK(b.last_logits().empty());
                int32_t reused = 0;
                CHECK(greedy(b, held, 32, &reused) == expected);
                CHECK(reused == static_cast<int32_t>(held.size()) - 1);

                // Loading over a session that already holds another conversation replaces it.
                Session c = primed(model, type);
                Sampler s0(SamplerOptions{} /* greedy: temperature 0 */);
                c.generate("Something else entirely", s0);
                c.load_state(path);
                CHECK(greedy(c, held, 32) == expected);
            }
        }
    }
}

TEST_CASE("kv state: an empty session saves and restores an empty cache", "[kv][state][fixtures]") {
    TempFiles tmp;
    const Model model = Model::load(fixture("llama-tiny-f16"));
    Session empty(model, options(KvType::F16));
    const auto path = tmp.make("empty");
    CHECK(empty.save_state(path) == runtime::kKvFileHeaderBytes);
    Session s = primed(model, KvType::F16);
    s.load_state(path);
    CHECK(s.cached_tokens().empty());
}

TEST_CASE("kv state: files for another model, KV type or shape, truncated or corrupt files are rejected and the "
          "session is unchanged",
          "[kv][state][fixtures]") {
    TempFiles tmp;
    const Model model = Model::load(fixture("qwen3-tiny-q4_k_m"));
    const Model other = Model::load(fixture("qwen3-tiny-q8_0"));  // same shape, other weights
    Session victim = primed(model, KvType::F16);
    const std::vector<TokenId> held(victim.cached_tokens().begin(), victim.cached_tokens().end());
    const std::vector<float> logits(victim.last_logits().begin(), victim.last_logits().end());
    const auto before = tmp.make("before");
    victim.save_state(before);
    const std::vector<uint8_t> good = test::read_file_bytes(before);

    // A state from a session on another model of the same shape.
    const auto other_model = tmp.make("other-model");
    primed(other, KvType::F16).save_state(other_model);
    // A state with another KV type.
    const auto other_type = tmp.make("other-type");
    primed(model, KvType::Q8_0).save_state(other_type);
    // A state from another architecture (another shape; also another model).
    const auto other_shape = tmp.make("other-shape");
    primed(Model::load(fixture("llama-tiny-f16")), KvType::F16).save_state(other_shape);
    // More tokens than a small context holds.
    Session small(model, options(KvType::F16, 16));
    // Truncated, flipped bytes, trailing bytes, not a KV file.
    auto variant = [&](const std::string& stem, const std::function<void(std::vector<uint8_t>&)>& edit) {
        std::vector<uint8_t> bytes = good;
        edit(bytes);
        const auto path = tmp.make(stem);
        test::write_file_bytes(path, bytes);
        return path;
    };
    const auto truncated = variant("truncated", [](auto& b) { b.resize(b.size() - 100); });
    const auto truncated_header = variant("truncated-header", [](auto& b) { b.resize(40); });
    const auto flipped_payload = variant("flipped-payload", [](auto& b) { b[b.size() / 2] ^= 0x10; });
    const auto flipped_token = variant("flipped-token", [](auto& b) { b[runtime::kKvFileHeaderBytes + 1] ^= 0x01; });
    const auto flipped_header = variant("flipped-header", [](auto& b) { b[44] ^= 0x01; });  // n_tokens
    const auto flipped_version = variant("flipped-version", [](auto& b) { b[8] = 9; });
    const auto trailing = variant("trailing", [](auto& b) { b.push_back(0); });
    const auto not_kv = tmp.make("not-kv");
    test::write_file_bytes(not_kv, test::read_file_bytes(fixture("llama-tiny-f16")));
    const auto missing = tmp.make("missing");

    struct Case {
        std::filesystem::path path;
        ErrorCode code;
        const char* says;
    };
    const Case cases[] = {
        {other_model, ErrorCode::InvalidArgument, "another model"},
        {other_type, ErrorCode::InvalidArgument, "holds a Q8_0 KV cache, this session's is F16"},
        {other_shape, ErrorCode::InvalidArgument, "another model"},
        {truncated, ErrorCode::Format, "truncated"},
        {truncated_header, ErrorCode::Format, "truncated"},
        {flipped_payload, ErrorCode::Format, "corrupt"},
        {flipped_token, ErrorCode::Format, "corrupt"},
        {flipped_header, ErrorCode::Format, "header is corrupt"},
        {flipped_version, ErrorCode::Format, "version 9"},
        {trailing, ErrorCode::Format, "trailing bytes"},
        {not_kv, ErrorCode::Format, "not a libgenie KV state file"},
        {missing, ErrorCode::NotFound, "cannot open"},
    };
    for (const Case& c : cases) {
        INFO(c.path.filename().string());
        std::string message;
        CHECK(load_error(victim, c.path, message) == c.code);
        CHECK_THAT(message, Catch::Contains(c.says));
        CHECK_THAT(message, Catch::Contains(c.path.string()));
    }
    std::string message;
    CHECK(load_error(small, before, message) == ErrorCode::InvalidArgument);
    CHECK_THAT(message, Catch::Contains("this session's context holds 16"));
    CHECK(small.cached_tokens().empty());

    // Unchanged: same tokens, same logits, and the same KV bytes (a new save is identical).
    CHECK(std::vector<TokenId>(victim.cached_tokens().begin(), victim.cached_tokens().end()) == held);
    CHECK(std::vector<float>(victim.last_logits().begin(), victim.last_logits().end()) == logits);
    const auto after = tmp.make("after");
    victim.save_state(after);
    CHECK(test::read_file_bytes(after) == good);
}

TEST_CASE("kv state: the model fingerprint is stable per file and differs between models", "[kv][state][fixtures]") {
    const Model a1 = Model::load(fixture("qwen3-tiny-q4_k_m"));
    const Model a2 = Model::load(fixture("qwen3-tiny-q4_k_m"));
    const Model b = Model::load(fixture("qwen3-tiny-q4_k"));
    const uint64_t fa = runtime::model_fingerprint(a1.impl());
    CHECK(fa == runtime::model_fingerprint(a1.impl()));  // cached
    CHECK(fa == runtime::model_fingerprint(a2.impl()));  // another load of the same file
    CHECK(fa != runtime::model_fingerprint(b.impl()));
}

TEST_CASE("kv state: KvCacheDir keeps its budget by evicting the least recently used entry", "[kv][state][fixtures]") {
    TempFiles tmp;
    const auto dir = tmp.make("cache-dir");
    const Model model = Model::load(fixture("llama-tiny-f16"));
    Session s = primed(model, KvType::F16);
    const std::vector<TokenId> held(s.cached_tokens().begin(), s.cached_tokens().end());
    const auto probe = tmp.make("probe");
    const uint64_t entry = s.save_state(probe);

    KvCacheDir cache(dir, entry * 5 / 2);  // room for two entries
    CHECK(cache.size_bytes() == 0);
    CHECK(cache.store("conversation-a", s));
    CHECK(cache.store("conversation-b", s));
    CHECK(cache.size_bytes() == 2 * entry);
    Session r(model, options(KvType::F16));
    CHECK(cache.restore("conversation-a", r));  // a is now more recent than b
    CHECK(std::vector<TokenId>(r.cached_tokens().begin(), r.cached_tokens().end()) == held);
    CHECK(cache.store("conversation-c", s));     // over budget: b (the oldest) goes
    CHECK(cache.size_bytes() == 2 * entry);
    CHECK(std::filesystem::exists(cache.path_for("conversation-a")));
    CHECK_FALSE(std::filesystem::exists(cache.path_for("conversation-b")));
    CHECK(std::filesystem::exists(cache.path_for("conversation-c")));
    Session fresh(model, options(KvType::F16));
    CHECK_FALSE(cache.restore("conversation-b", fresh));
    CHECK(fresh.cached_tokens().empty());

    // Keys: any string, mapped inside the folder; distinct keys never share a file.
    const auto p1 = cache.path_for("user/../../etc/passwd"), p2 = cache.path_for("user_.._.._etc_passwd");
    CHECK(p1.parent_path() == dir);
    CHECK(p1 != p2);
    CHECK(p1.filename().string().find('/') == std::string::npos);
    CHECK_THROWS_AS(cache.path_for(""), Error);

    // A corrupt entry is a miss and is deleted; a mismatching one is a miss and is kept.
    {
        auto bytes = test::read_file_bytes(cache.path_for("conversation-c"));
        bytes[bytes.size() - 1] ^= 0xff;
        test::write_file_bytes(cache.path_for("conversation-c"), bytes);
    }
    CHECK_FALSE(cache.restore("conversation-c", fresh));
    CHECK_FALSE(std::filesystem::exists(cache.path_for("conversation-c")));
    Session q8(model, options(KvType::Q8_0));
    CHECK_FALSE(cache.restore("conversation-a", q8));
    CHECK(std::filesystem::exists(cache.path_for("conversation-a")));

    // A state larger than the whole budget is not kept.
    KvCacheDir tiny(dir, entry / 2);
    CHECK_FALSE(tiny.store("too-big", s));
    CHECK_FALSE(std::filesystem::exists(tiny.path_for("too-big")));
    CHECK(cache.remove("conversation-a"));
    CHECK_FALSE(cache.remove("conversation-a"));
}

TEST_CASE("kv state: the C ABI saves and restores a Q8_0 session and reports bad files", "[kv][state][capi][fixtures]") {
    TempFiles tmp;
    const std::string model_path = fixture("qwen3-tiny-q4_k_m").string();
    genie_model* model = nullptr;
    REQUIRE(genie_model_load(&model, model_path.c_str(), nullptr) == GENIE_OK);
    genie_session_options so = GENIE_SESSION_OPTIONS_INIT;
    so.context_length = 128;
    so.threads = 2;
    so.kv_type = GENIE_KV_Q8_0;
    genie_session *a = nullptr, *b = nullptr;
    REQUIRE(genie_session_create(&a, model, &so) == GENIE_OK);
    REQUIRE(genie_session_create(&b, model, &so) == GENIE_OK);
    genie_sampler* greedy = nullptr;
    genie_sampler_options sampler_options = GENIE_SAMPLER_OPTIONS_INIT;
    sampler_options.temperature = 0.0f;
    REQUIRE(genie_sampler_create(&greedy, &sampler_options) == GENIE_OK);
    genie_generate_options go = GENIE_GENERATE_OPTIONS_INIT;
    go.max_tokens = 8;
    go.stop_on_eog = 0;
    const std::string prompt = "Hello there, how are";
    REQUIRE(genie_session_generate(nullptr, a, prompt.data(), prompt.size(), greedy, &go, nullptr, nullptr) == GENIE_OK);

    const std::string path = tmp.make("capi").string();
    uint64_t bytes = 0;
    REQUIRE(genie_session_save_state(&bytes, a, path.c_str()) == GENIE_OK);
    CHECK(bytes == std::filesystem::file_size(path));
    REQUIRE(genie_session_load_state(b, path.c_str()) == GENIE_OK);
    const genie_token *ta = nullptr, *tb = nullptr;
    size_t na = 0, nb = 0;
    REQUIRE(genie_session_cached_tokens(&ta, &na, a) == GENIE_OK);
    REQUIRE(genie_session_cached_tokens(&tb, &nb, b) == GENIE_OK);
    CHECK(std::vector<genie_token>(ta, ta + na) == std::vector<genie_token>(tb, tb + nb));

    // Continuations from the original and the restored session are the same.
    const std::vector<genie_token> held(ta, ta + na);
    genie_generate_result ra = GENIE_GENERATE_RESULT_INIT, rb = GENIE_GENERATE_RESULT_INIT;
    go.max_tokens = 16;
    REQUIRE(genie_sampler_reset(greedy) == GENIE_OK);
    REQUIRE(genie_session_generate_tokens(&ra, a, held.data(), held.size(), greedy, &go, nullptr, nullptr) == GENIE_OK);
    REQUIRE(genie_sampler_reset(greedy) == GENIE_OK);
    REQUIRE(genie_session_generate_tokens(&rb, b, held.data(), held.size(), greedy, &go, nullptr, nullptr) == GENIE_OK);
    CHECK(std::vector<genie_token>(ra.tokens, ra.tokens + ra.n_tokens) ==
          std::vector<genie_token>(rb.tokens, rb.tokens + rb.n_tokens));
    CHECK(rb.reused_prompt_tokens == static_cast<int32_t>(held.size()) - 1);
    genie_generate_result_clear(&ra);
    genie_generate_result_clear(&rb);

    // A corrupt file: FORMAT naming the file; NULL arguments: INVALID_ARGUMENT.
    auto bytes_of = test::read_file_bytes(path);
    bytes_of[bytes_of.size() - 3] ^= 0x40;
    const std::string corrupt = tmp.make("capi-corrupt").string();
    test::write_file_bytes(corrupt, bytes_of);
    CHECK(genie_session_load_state(b, corrupt.c_str()) == GENIE_FORMAT);
    CHECK_THAT(genie_last_error(), Catch::Contains(corrupt) && Catch::Contains("genie_session_load_state"));
    CHECK(genie_session_load_state(b, nullptr) == GENIE_INVALID_ARGUMENT);
    CHECK(genie_session_load_state(nullptr, path.c_str()) == GENIE_INVALID_ARGUMENT);
    CHECK(genie_session_save_state(nullptr, a, "/nonexistent-folder/x.gkv") == GENIE_NOT_FOUND);

    genie_sampler_free(greedy);
    genie_session_free(a);
    genie_session_free(b);
    genie_model_free(model);
}
