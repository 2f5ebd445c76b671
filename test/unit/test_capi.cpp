// The C ABI (include/genie/genie.h, capi/genie_c.cpp): _INIT macros agree with the _init
// functions, every function rejects NULL / garbage with a status and a message (never a
// crash), and a greedy generation through the C ABI equals the C++ API and genie-cli.
#include "support/test_support.hpp"

#include <genie/constraint.hpp>
#include <genie/error.hpp>
#include <genie/genie.h>
#include <genie/version.h>
#include <genie/model.hpp>
#include <genie/session.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

std::string stories_path() { return (genie::test::testdata_dir() / "models" / "stories260K.gguf").string(); }

// The bytes of two structs of the same type (both fully initialised by value, so padding
// is zero in both on the compilers we use; compare field by field where it is not).
template <class T>
bool same_bytes(const T& a, const T& b) {
    return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// A failing call must leave a non-empty message naming the function.
void require_error(genie_status status, genie_status expected, const char* function) {
    INFO("status " << genie_status_name(status) << ", message: " << genie_last_error());
    REQUIRE(status == expected);
    REQUIRE(genie_last_error() != nullptr);
    REQUIRE(std::string(genie_last_error()).find(function) != std::string::npos);
}

struct Stream {
    std::string text;
    std::vector<genie_token> tokens;
    int stop_after = -1;  // stop (non-zero return) after this many calls
    int calls = 0;
};

int collect(void* user, const char* utf8, size_t len, genie_token token) {
    auto* s = static_cast<Stream*>(user);
    s->text.append(utf8, len);
    if (token != GENIE_NO_TOKEN) s->tokens.push_back(token);
    ++s->calls;
    return s->stop_after >= 0 && s->calls >= s->stop_after ? 1 : 0;
}

struct Loaded {
    genie_model* model = nullptr;
    genie_session* session = nullptr;
    genie_sampler* sampler = nullptr;
    Loaded() {
        REQUIRE(genie_model_load(&model, stories_path().c_str(), nullptr) == GENIE_OK);
        genie_session_options so = GENIE_SESSION_OPTIONS_INIT;
        so.context_length = 256;
        so.threads = 2;
        REQUIRE(genie_session_create(&session, model, &so) == GENIE_OK);
        REQUIRE(genie_sampler_create(&sampler, nullptr) == GENIE_OK);
    }
    ~Loaded() {
        genie_sampler_free(sampler);
        genie_session_free(session);
        genie_model_free(model);
    }
    Loaded(const Loaded&) = delete;
    Loaded& operator=(const Loaded&) = delete;
};

}  // namespace

TEST_CASE("capi: version, status names and last error", "[capi]") {
    CHECK(genie_abi_version() == GENIE_ABI_VERSION);
    CHECK(std::string(genie_version()) == GENIE_VERSION_STRING);
    CHECK(std::string(genie_status_name(GENIE_OK)) == "OK");
    CHECK(std::string(genie_status_name(GENIE_CONTEXT_OVERFLOW)) == "CONTEXT_OVERFLOW");
    CHECK(std::string(genie_status_name(static_cast<genie_status>(12345))) == "UNKNOWN");
    genie_error_clear();
    CHECK(std::string(genie_last_error()).empty());
    // Values agree with genie::ErrorCode.
    CHECK(GENIE_IO == static_cast<int>(genie::ErrorCode::Io));
    CHECK(GENIE_BUSY == static_cast<int>(genie::ErrorCode::Busy));
}

TEST_CASE("capi: _INIT macros equal the _init functions", "[capi]") {
    {
        genie_model_options a = GENIE_MODEL_OPTIONS_INIT, b;
        std::memset(&b, 0xab, sizeof b);
        REQUIRE(genie_model_options_init(&b, GENIE_MODEL_OPTIONS_VERSION) == GENIE_OK);
        // Field by field: the struct has padding before memory_budget_bytes, whose bytes
        // an initializer leaves unspecified (ASan builds leave them non-zero).
        CHECK(a.version == b.version);
        CHECK(a.backend == b.backend);
        CHECK(a.use_mmap == b.use_mmap);
        CHECK(a.memory_budget_bytes == b.memory_budget_bytes);
        CHECK(a.use_mmap == 1);
        CHECK(a.memory_budget_bytes == genie::ModelOptions{}.memory_budget_bytes);
        // A version-1 caller's struct ends after `backend`: nothing past it is written.
        std::memset(&b, 0xab, sizeof b);
        REQUIRE(genie_model_options_init(&b, 1) == GENIE_OK);
        CHECK(b.version == 1);
        CHECK(b.backend == GENIE_BACKEND_AUTO);
        const auto* bytes = reinterpret_cast<const unsigned char*>(&b);
        for (size_t i = offsetof(genie_model_options, use_mmap); i < sizeof b; ++i) CHECK(bytes[i] == 0xab);
    }
    {
        genie_session_options a = GENIE_SESSION_OPTIONS_INIT, b;
        std::memset(&b, 0xab, sizeof b);
        REQUIRE(genie_session_options_init(&b, GENIE_SESSION_OPTIONS_VERSION) == GENIE_OK);
        CHECK(same_bytes(a, b));
        // and the C++ defaults
        const genie::SessionOptions cpp;
        CHECK(a.context_length == cpp.context_length);
        CHECK(a.threads == cpp.threads);
        CHECK(a.batch_size == cpp.batch_size);
        CHECK(a.kv_type == GENIE_KV_F16);
    }
    {
        genie_sampler_options a = GENIE_SAMPLER_OPTIONS_INIT, b;
        std::memset(&b, 0xab, sizeof b);
        REQUIRE(genie_sampler_options_init(&b, GENIE_SAMPLER_OPTIONS_VERSION) == GENIE_OK);
        // Field by field: the struct has padding before its pointers.
        CHECK(a.version == b.version);
        CHECK(a.temperature == b.temperature);
        CHECK(a.top_k == b.top_k);
        CHECK(a.top_p == b.top_p);
        CHECK(a.min_p == b.min_p);
        CHECK(a.seed == b.seed);
        CHECK(a.typical_p == b.typical_p);
        CHECK(a.penalty_last_n == b.penalty_last_n);
        CHECK(a.repeat_penalty == b.repeat_penalty);
        CHECK(a.frequency_penalty == b.frequency_penalty);
        CHECK(a.presence_penalty == b.presence_penalty);
        CHECK(b.logit_bias_tokens == nullptr);
        CHECK(b.logit_bias_values == nullptr);
        CHECK(a.n_logit_bias == b.n_logit_bias);
        const genie::SamplerOptions cpp;
        CHECK(a.temperature == cpp.temperature);
        CHECK(a.top_k == cpp.top_k);
        CHECK(a.top_p == cpp.top_p);
        CHECK(a.min_p == cpp.min_p);
        CHECK(a.seed == cpp.seed);
        CHECK(a.typical_p == cpp.typical_p);
        CHECK(a.penalty_last_n == cpp.penalty_last_n);
        CHECK(a.repeat_penalty == cpp.repeat_penalty);
        CHECK(a.frequency_penalty == cpp.frequency_penalty);
        CHECK(a.presence_penalty == cpp.presence_penalty);
    }
    {
        genie_generate_options a = GENIE_GENERATE_OPTIONS_INIT, b;
        std::memset(&b, 0xab, sizeof b);
        REQUIRE(genie_generate_options_init(&b, GENIE_GENERATE_OPTIONS_VERSION) == GENIE_OK);
        CHECK(a.version == b.version);
        CHECK(a.max_tokens == b.max_tokens);
        CHECK(a.stop_on_eog == b.stop_on_eog);
        CHECK(a.add_special == b.add_special);
        CHECK(a.parse_special == b.parse_special);
        CHECK(b.stop == nullptr);
        CHECK(a.n_stop == b.n_stop);
        const genie::GenerateOptions cpp;
        CHECK(a.max_tokens == cpp.max_tokens);
        CHECK((a.stop_on_eog != 0) == cpp.stop_on_eog);
        CHECK((a.add_special != 0) == cpp.add_special);
        CHECK((a.parse_special != 0) == cpp.parse_special);
    }
    {
        genie_chat_request a = GENIE_CHAT_REQUEST_INIT, b;
        std::memset(&b, 0xab, sizeof b);
        REQUIRE(genie_chat_request_init(&b, GENIE_CHAT_REQUEST_VERSION) == GENIE_OK);
        // Field by field: the struct has padding.
        CHECK(a.version == GENIE_CHAT_REQUEST_VERSION);
        CHECK(a.version == b.version);
        CHECK(b.messages == nullptr);
        CHECK(a.n_messages == b.n_messages);
        CHECK(a.max_tokens == b.max_tokens);
        CHECK(b.sampler == nullptr);
        CHECK(a.response_format == b.response_format);
        CHECK(b.json_schema == nullptr);
        CHECK(a.json_schema_len == b.json_schema_len);
        CHECK(a.think == b.think);
        CHECK(b.stop == nullptr);
        CHECK(a.n_stop == b.n_stop);
        CHECK(a.idle_timeout_ms == b.idle_timeout_ms);
        CHECK(a.deadline_ms == b.deadline_ms);
        CHECK(b.tools_json == nullptr);
        CHECK(a.tools_json_len == b.tools_json_len);
        CHECK(a.max_tokens == genie::GenerateOptions{}.max_tokens);
        CHECK(a.response_format == GENIE_RESPONSE_FORMAT_NONE);
        CHECK(a.think == GENIE_THINK_DEFAULT);
        CHECK(a.n_messages == 0);
        CHECK(a.idle_timeout_ms == 0);
        CHECK(a.deadline_ms == 0);
        CHECK(b.message_extras == nullptr);
        CHECK(a.tool_choice == b.tool_choice);
        CHECK(a.tool_choice == GENIE_TOOL_CHOICE_AUTO);
        CHECK(b.tool_choice_function == nullptr);
        CHECK(a.parallel_tool_calls == b.parallel_tool_calls);
        CHECK(a.parallel_tool_calls == -1);
        CHECK(b.grammar == nullptr);
        CHECK(a.grammar_len == b.grammar_len);
    }
    {
        // A version-1 caller's struct ends at tools_json_len: init writes nothing past it.
        genie_chat_request b;
        std::memset(&b, 0xab, sizeof b);
        REQUIRE(genie_chat_request_init(&b, 1) == GENIE_OK);
        CHECK(b.version == 1);
        CHECK(b.tools_json == nullptr);
        const auto* bytes = reinterpret_cast<const unsigned char*>(&b);
        bool untouched = true;
        for (size_t i = offsetof(genie_chat_request, message_extras); i < sizeof b; ++i) untouched = untouched && bytes[i] == 0xab;
        CHECK(untouched);
        genie_chat_result r;
        std::memset(&r, 0, sizeof r);
        r.version = 1;
        std::memset(reinterpret_cast<unsigned char*>(&r) + offsetof(genie_chat_result, tool_calls), 0xab,
                    sizeof r - offsetof(genie_chat_result, tool_calls));
        genie_chat_result_clear(&r);
        const auto* rb = reinterpret_cast<const unsigned char*>(&r);
        untouched = true;
        for (size_t i = offsetof(genie_chat_result, tool_calls); i < sizeof r; ++i) untouched = untouched && rb[i] == 0xab;
        CHECK(untouched);
        CHECK(r.version == 1);
    }
    {
        // The result's INIT is all empty; clear() brings a result back to it.
        genie_chat_result a = GENIE_CHAT_RESULT_INIT;
        CHECK(a.version == GENIE_CHAT_RESULT_VERSION);
        CHECK(a.text == nullptr);
        CHECK(a.reasoning == nullptr);
        CHECK(a.tool_name == nullptr);
        CHECK(a.tool_arguments == nullptr);
        CHECK(a.finish_reason == GENIE_FINISH_STOP);
        a.prompt_tokens = 5;
        a.total_ms = 2.0;
        genie_chat_result_clear(&a);
        const genie_chat_result b = GENIE_CHAT_RESULT_INIT;
        CHECK(same_bytes(a, b));
    }
    // Unknown versions are rejected.
    genie_model_options mo;
    require_error(genie_model_options_init(&mo, 0), GENIE_INVALID_ARGUMENT, "genie_model_options_init");
    require_error(genie_model_options_init(&mo, GENIE_MODEL_OPTIONS_VERSION + 1), GENIE_INVALID_ARGUMENT,
                  "genie_model_options_init");
    require_error(genie_session_options_init(nullptr, 1), GENIE_INVALID_ARGUMENT, "genie_session_options_init");
    require_error(genie_sampler_options_init(nullptr, 1), GENIE_INVALID_ARGUMENT, "genie_sampler_options_init");
    require_error(genie_generate_options_init(nullptr, 1), GENIE_INVALID_ARGUMENT, "genie_generate_options_init");
}

TEST_CASE("capi: NULL and garbage arguments give an error, never a crash", "[capi]") {
    // Readable memory that is not a live handle of the right type.
    alignas(16) std::array<unsigned char, 256> junk{};
    junk.fill(0x5a);
    auto* bad_model = reinterpret_cast<genie_model*>(junk.data());
    auto* bad_session = reinterpret_cast<genie_session*>(junk.data());
    auto* bad_sampler = reinterpret_cast<genie_sampler*>(junk.data());

    genie_model* model = reinterpret_cast<genie_model*>(&junk);  // must be overwritten with NULL
    require_error(genie_model_load(nullptr, "x.gguf", nullptr), GENIE_INVALID_ARGUMENT, "genie_model_load");
    require_error(genie_model_load(&model, nullptr, nullptr), GENIE_INVALID_ARGUMENT, "genie_model_load");
    CHECK(model == nullptr);
    require_error(genie_model_load(&model, "/nonexistent/model.gguf", nullptr), GENIE_NOT_FOUND, "genie_model_load");
    CHECK(model == nullptr);
    {
        const auto path = genie::test::temp_path("capi_garbage");
        genie::test::write_file_bytes(path, {'G', 'G', 'U', 'F', 3, 0, 0, 0, 1, 2, 3});
        const genie_status s = genie_model_load(&model, path.string().c_str(), nullptr);
        CHECK(s == GENIE_FORMAT);
        CHECK(model == nullptr);
        std::filesystem::remove(path);
    }
    genie_model_options mo = GENIE_MODEL_OPTIONS_INIT;
    mo.version = 77;
    require_error(genie_model_load(&model, stories_path().c_str(), &mo), GENIE_INVALID_ARGUMENT, "genie_model_load");
    mo = genie_model_options GENIE_MODEL_OPTIONS_INIT;
    mo.backend = static_cast<genie_backend>(99);
    require_error(genie_model_load(&model, stories_path().c_str(), &mo), GENIE_INVALID_ARGUMENT, "genie_model_load");

    genie_model_info info = GENIE_MODEL_INFO_INIT;
    require_error(genie_model_get_info(&info, nullptr), GENIE_INVALID_ARGUMENT, "genie_model_get_info");
    require_error(genie_model_get_info(&info, bad_model), GENIE_INVALID_ARGUMENT, "genie_model_get_info");
    require_error(genie_model_get_info(nullptr, bad_model), GENIE_INVALID_ARGUMENT, "genie_model_get_info");
    int eog = 7;
    require_error(genie_model_token_is_eog(&eog, bad_model, 0), GENIE_INVALID_ARGUMENT, "genie_model_token_is_eog");
    CHECK(eog == 0);
    const char* tmpl = "x";
    require_error(genie_model_chat_template(&tmpl, nullptr), GENIE_INVALID_ARGUMENT, "genie_model_chat_template");
    CHECK(tmpl == nullptr);
    genie_token* tokens = reinterpret_cast<genie_token*>(&junk);
    size_t count = 99;
    require_error(genie_model_tokenize(&tokens, &count, bad_model, "hi", 2, 0), GENIE_INVALID_ARGUMENT,
                  "genie_model_tokenize");
    CHECK(tokens == nullptr);
    CHECK(count == 0);
    char* text = reinterpret_cast<char*>(&junk);
    require_error(genie_model_detokenize(&text, nullptr, nullptr, nullptr, 0, 0), GENIE_INVALID_ARGUMENT,
                  "genie_model_detokenize");
    CHECK(text == nullptr);
    require_error(genie_model_apply_chat_template(&text, nullptr, bad_model, nullptr, 0, 1), GENIE_INVALID_ARGUMENT,
                  "genie_model_apply_chat_template");

    genie_session* session = nullptr;
    require_error(genie_session_create(&session, nullptr, nullptr), GENIE_INVALID_ARGUMENT, "genie_session_create");
    require_error(genie_session_create(&session, bad_model, nullptr), GENIE_INVALID_ARGUMENT, "genie_session_create");
    require_error(genie_session_create(nullptr, bad_model, nullptr), GENIE_INVALID_ARGUMENT, "genie_session_create");
    CHECK(session == nullptr);

    genie_sampler* sampler = nullptr;
    genie_sampler_options sa = GENIE_SAMPLER_OPTIONS_INIT;
    sa.version = 0;
    require_error(genie_sampler_create(&sampler, &sa), GENIE_INVALID_ARGUMENT, "genie_sampler_create");
    require_error(genie_sampler_create(nullptr, nullptr), GENIE_INVALID_ARGUMENT, "genie_sampler_create");
    require_error(genie_sampler_reset(bad_sampler), GENIE_INVALID_ARGUMENT, "genie_sampler_reset");
    require_error(genie_sampler_accept(nullptr, 1), GENIE_INVALID_ARGUMENT, "genie_sampler_accept");
    genie_token token = 5;
    const float logits[2] = {0.f, 1.f};
    require_error(genie_sampler_sample(&token, bad_sampler, logits, 2), GENIE_INVALID_ARGUMENT, "genie_sampler_sample");
    CHECK(token == GENIE_NO_TOKEN);

    genie_generate_result result = GENIE_GENERATE_RESULT_INIT;
    require_error(genie_session_generate(&result, bad_session, "hi", 2, bad_sampler, nullptr, nullptr, nullptr),
                  GENIE_INVALID_ARGUMENT, "genie_session_generate");
    CHECK(result.finish_reason == GENIE_FINISH_ERROR);
    CHECK(result.text == nullptr);
    require_error(genie_session_generate(nullptr, nullptr, nullptr, 5, nullptr, nullptr, nullptr, nullptr),
                  GENIE_INVALID_ARGUMENT, "genie_session_generate");
    genie_generate_result bad_result;
    std::memset(&bad_result, 0x5a, sizeof bad_result);  // garbage version: rejected, not freed
    require_error(genie_session_generate(&bad_result, bad_session, "hi", 2, bad_sampler, nullptr, nullptr, nullptr),
                  GENIE_INVALID_ARGUMENT, "genie_session_generate");
    require_error(genie_session_generate_tokens(nullptr, nullptr, nullptr, 3, nullptr, nullptr, nullptr, nullptr),
                  GENIE_INVALID_ARGUMENT, "genie_session_generate_tokens");
    {
        const genie_chat_turn turn = {"user", "hi", 2};
        genie_chat_request request = GENIE_CHAT_REQUEST_INIT;
        request.messages = &turn;
        request.n_messages = 1;
        genie_chat_result chat = GENIE_CHAT_RESULT_INIT;
        require_error(genie_session_chat(bad_session, &request, nullptr, nullptr, &chat), GENIE_INVALID_ARGUMENT,
                      "genie_session_chat");
        CHECK(chat.finish_reason == GENIE_FINISH_ERROR);
        CHECK(chat.text == nullptr);
        require_error(genie_session_chat(nullptr, nullptr, nullptr, nullptr, nullptr), GENIE_INVALID_ARGUMENT,
                      "genie_session_chat");
        genie_chat_result bad_chat;
        std::memset(&bad_chat, 0x5a, sizeof bad_chat);  // garbage version: rejected, not freed
        require_error(genie_session_chat(bad_session, &request, nullptr, nullptr, &bad_chat), GENIE_INVALID_ARGUMENT,
                      "genie_session_chat");
        require_error(genie_chat_request_init(nullptr, GENIE_CHAT_REQUEST_VERSION), GENIE_INVALID_ARGUMENT,
                      "genie_chat_request_init");
        require_error(genie_chat_request_init(&request, 0), GENIE_INVALID_ARGUMENT, "genie_chat_request_init");
        genie_chat_result_clear(nullptr);
    }
    require_error(genie_session_cancel(nullptr), GENIE_INVALID_ARGUMENT, "genie_session_cancel");
    require_error(genie_session_cancel(bad_session), GENIE_INVALID_ARGUMENT, "genie_session_cancel");
    const float* out_logits = logits;
    require_error(genie_session_evaluate(&out_logits, &count, bad_session, nullptr, 0), GENIE_INVALID_ARGUMENT,
                  "genie_session_evaluate");
    CHECK(out_logits == nullptr);
    require_error(genie_session_last_logits(&out_logits, &count, nullptr), GENIE_INVALID_ARGUMENT,
                  "genie_session_last_logits");
    const genie_token* cached = nullptr;
    require_error(genie_session_cached_tokens(&cached, nullptr, bad_session), GENIE_INVALID_ARGUMENT,
                  "genie_session_cached_tokens");
    int32_t n_ctx = 0;
    require_error(genie_session_context_length(&n_ctx, bad_session), GENIE_INVALID_ARGUMENT,
                  "genie_session_context_length");
    require_error(genie_session_reset(bad_session), GENIE_INVALID_ARGUMENT, "genie_session_reset");

    // Frees of NULL and of foreign memory are no-ops.
    genie_model_free(nullptr);
    genie_model_free(bad_model);
    genie_session_free(nullptr);
    genie_session_free(bad_session);
    genie_sampler_free(nullptr);
    genie_sampler_free(bad_sampler);
    genie_string_free(nullptr);
    genie_tokens_free(nullptr);
    genie_generate_result_clear(nullptr);
}

TEST_CASE("capi: model info, tokenize and detokenize", "[capi]") {
    Loaded l;
    genie_model_info info = GENIE_MODEL_INFO_INIT;
    REQUIRE(genie_model_get_info(&info, l.model) == GENIE_OK);
    CHECK(std::string(info.architecture) == "llama");
    CHECK(info.n_vocab == 512);
    CHECK(info.n_layer > 0);
    CHECK(info.bos == 1);
    CHECK(info.load_time_ms >= 0);
    CHECK(info.decode_bytes > 0);
    CHECK(info.decode_bytes <= info.weight_bytes);
    CHECK(info.decode_bytes == genie::Model::load(stories_path()).info().decode_bytes);
    // A version-1 caller's struct ends after load_time_ms: nothing past it is written.
    genie_model_info v1;
    std::memset(&v1, 0xab, sizeof v1);
    v1.version = 1;
    REQUIRE(genie_model_get_info(&v1, l.model) == GENIE_OK);
    CHECK(v1.n_vocab == 512);
    const auto* bytes = reinterpret_cast<const unsigned char*>(&v1);
    for (size_t i = offsetof(genie_model_info, decode_bytes); i < sizeof v1; ++i) CHECK(bytes[i] == 0xab);
    info.version = GENIE_MODEL_INFO_VERSION + 1;
    CHECK(genie_model_get_info(&info, l.model) == GENIE_INVALID_ARGUMENT);

    const char* tmpl = nullptr;
    REQUIRE(genie_model_chat_template(&tmpl, l.model) == GENIE_OK);
    REQUIRE(tmpl != nullptr);

    genie_token* tokens = nullptr;
    size_t count = 0;
    const std::string text = "Once upon a time";
    REQUIRE(genie_model_tokenize(&tokens, &count, l.model, text.data(), text.size(), GENIE_TOKENIZE_ADD_SPECIAL) ==
            GENIE_OK);
    REQUIRE(count > 1);
    CHECK(tokens[0] == info.bos);
    char* back = nullptr;
    size_t back_len = 0;
    REQUIRE(genie_model_detokenize(&back, &back_len, l.model, tokens, count, GENIE_DETOKENIZE_REMOVE_SPECIAL) ==
            GENIE_OK);
    // SentencePiece: the text comes back with the space prefix the vocabulary adds.
    CHECK(std::string(back, back_len).ends_with(text));
    CHECK(std::strlen(back) == back_len);
    genie_string_free(back);

    // An id out of range is an error, not a crash.
    tokens[0] = 1 << 30;
    back = nullptr;
    CHECK(genie_model_detokenize(&back, nullptr, l.model, tokens, count, 0) == GENIE_INVALID_ARGUMENT);
    CHECK(back == nullptr);
    genie_tokens_free(tokens);

    // Empty text: no tokens, NULL array.
    REQUIRE(genie_model_tokenize(&tokens, &count, l.model, nullptr, 0, 0) == GENIE_OK);
    CHECK(count == 0);
    CHECK(tokens == nullptr);
    CHECK(genie_model_tokenize(&tokens, &count, l.model, nullptr, 3, 0) == GENIE_INVALID_ARGUMENT);
    CHECK(genie_model_tokenize(&tokens, &count, l.model, "a", 1, 0x100) == GENIE_INVALID_ARGUMENT);

    int eog = 0;
    REQUIRE(genie_model_token_is_eog(&eog, l.model, info.eos) == GENIE_OK);
    CHECK(eog == 1);
    REQUIRE(genie_model_token_is_eog(&eog, l.model, -5) == GENIE_OK);
    CHECK(eog == 0);
}

TEST_CASE("capi: greedy generation equals the C++ API and genie-cli", "[capi]") {
    const std::string prompt = "Once upon a time";
    // The C++ API, as genie-cli run uses it (default session options, greedy).
    const genie::Model cpp_model = genie::Model::load(stories_path());
    genie::Session cpp_session(cpp_model);
    genie::Sampler cpp_sampler;
    genie::GenerateOptions go;
    go.max_tokens = 32;
    const genie::GenerateResult expected = cpp_session.generate(prompt, cpp_sampler, go);
    REQUIRE(!expected.text.empty());

    genie_model* model = nullptr;
    REQUIRE(genie_model_load(&model, stories_path().c_str(), nullptr) == GENIE_OK);
    genie_session* session = nullptr;
    REQUIRE(genie_session_create(&session, model, nullptr) == GENIE_OK);
    genie_model_free(model);  // the session keeps the model alive
    genie_sampler* sampler = nullptr;
    REQUIRE(genie_sampler_create(&sampler, nullptr) == GENIE_OK);
    genie_generate_options opts = GENIE_GENERATE_OPTIONS_INIT;
    opts.max_tokens = 32;
    genie_generate_result result = GENIE_GENERATE_RESULT_INIT;
    Stream stream;
    REQUIRE(genie_session_generate(&result, session, prompt.data(), prompt.size(), sampler, &opts, collect, &stream) ==
            GENIE_OK);
    CHECK(std::string(result.text, result.text_len) == expected.text);
    CHECK(stream.text == expected.text);
    CHECK(std::vector<genie_token>(result.tokens, result.tokens + result.n_tokens) == expected.tokens);
    CHECK(stream.tokens == expected.tokens);
    CHECK(result.finish_reason == (expected.finish_reason == genie::FinishReason::Length ? GENIE_FINISH_LENGTH
                                                                                         : GENIE_FINISH_STOP));
    CHECK(result.prompt_tokens == expected.prompt_tokens);
    CHECK(result.completion_tokens == expected.completion_tokens);
    CHECK(result.reused_prompt_tokens == 0);
    CHECK(result.time_to_first_token_ms > 0);

    // genie-cli run prints the same text (and a newline).
    const auto cli = genie::test::bin_dir() / "genie-cli";
    if (std::filesystem::exists(cli)) {
        const std::string command = "'" + cli.string() + "' run -m '" + stories_path() + "' -p '" + prompt + "' -n 32";
        FILE* pipe = popen(command.c_str(), "r");
        REQUIRE(pipe != nullptr);
        std::string out;
        std::array<char, 4096> buffer{};
        size_t n = 0;
        while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out.append(buffer.data(), n);
        REQUIRE(pclose(pipe) == 0);
        CHECK(out == std::string(result.text, result.text_len) + "\n");
    } else {
        WARN("genie-cli not built at " << cli << ": compared with the C++ API only");
    }

    // Again: the whole prompt is reused from the cache except its last token; same text.
    genie_generate_result again = GENIE_GENERATE_RESULT_INIT;
    REQUIRE(genie_session_generate(&again, session, prompt.data(), prompt.size(), sampler, &opts, nullptr, nullptr) ==
            GENIE_OK);
    CHECK(again.reused_prompt_tokens == again.prompt_tokens - 1);
    CHECK(std::string(again.text) == std::string(result.text));
    genie_generate_result_clear(&again);
    CHECK(again.text == nullptr);
    CHECK(again.version == GENIE_GENERATE_RESULT_VERSION);

    // Token prompt: same output.
    genie::TokenizeOptions add_special;
    add_special.add_special = true;
    const std::vector<genie::TokenId> prompt_tokens = cpp_model.tokenizer().tokenize(prompt, add_special);
    REQUIRE(genie_session_reset(session) == GENIE_OK);
    REQUIRE(genie_session_generate_tokens(&again, session, prompt_tokens.data(), prompt_tokens.size(), sampler, &opts,
                                          nullptr, nullptr) == GENIE_OK);
    CHECK(std::string(again.text) == std::string(result.text));
    genie_generate_result_clear(&again);

    // The callback's non-zero return stops.
    Stream stopper;
    stopper.stop_after = 3;
    REQUIRE(genie_session_generate(&again, session, prompt.data(), prompt.size(), sampler, &opts, collect, &stopper) ==
            GENIE_OK);
    CHECK(again.finish_reason == GENIE_FINISH_STOP);
    CHECK(again.completion_tokens == 3);
    genie_generate_result_clear(&again);

    // Stop strings end the generation; the stop string is not in the text.
    {
        const std::string full(result.text, result.text_len);
        const std::string stop_at = full.substr(full.size() / 2, 4);
        const char* stops[1] = {stop_at.c_str()};
        opts.stop = stops;
        opts.n_stop = 1;
        REQUIRE(genie_session_generate(&again, session, prompt.data(), prompt.size(), sampler, &opts, nullptr,
                                       nullptr) == GENIE_OK);
        CHECK(again.finish_reason == GENIE_FINISH_STOP);
        CHECK(std::string(again.text) == full.substr(0, full.find(stop_at)));
        genie_generate_result_clear(&again);
        opts.stop = nullptr;
        CHECK(genie_session_generate(&again, session, prompt.data(), prompt.size(), sampler, &opts, nullptr,
                                     nullptr) == GENIE_INVALID_ARGUMENT);
        opts.n_stop = 0;
    }
    // A logit bias that bans the greedy first token changes it.
    {
        genie_sampler_options so = GENIE_SAMPLER_OPTIONS_INIT;
        const genie_token banned[1] = {result.tokens[0]};
        const float bias[1] = {-1e30f};
        so.logit_bias_tokens = banned;
        so.logit_bias_values = bias;
        so.n_logit_bias = 1;
        genie_sampler* biased = nullptr;
        REQUIRE(genie_sampler_create(&biased, &so) == GENIE_OK);
        REQUIRE(genie_session_generate(&again, session, prompt.data(), prompt.size(), biased, &opts, nullptr,
                                       nullptr) == GENIE_OK);
        REQUIRE(again.n_tokens > 0);
        CHECK(again.tokens[0] != result.tokens[0]);
        genie_generate_result_clear(&again);
        genie_sampler_free(biased);
        so.logit_bias_values = nullptr;
        CHECK(genie_sampler_create(&biased, &so) == GENIE_INVALID_ARGUMENT);
        CHECK(biased == nullptr);
    }

    // Errors from generate become statuses.
    opts.add_special = 0;  // no BOS: the empty prompt has no tokens
    CHECK(genie_session_generate(&again, session, "", 0, sampler, &opts, nullptr, nullptr) == GENIE_INVALID_ARGUMENT);
    opts.add_special = 1;
    CHECK(again.finish_reason == GENIE_FINISH_ERROR);
    opts.max_tokens = -1;
    CHECK(genie_session_generate(&again, session, "a", 1, sampler, &opts, nullptr, nullptr) == GENIE_INVALID_ARGUMENT);
    std::string long_prompt;
    for (int i = 0; i < 3000; ++i) long_prompt += " time";
    opts.max_tokens = 4;
    genie_session_options small = GENIE_SESSION_OPTIONS_INIT;
    small.context_length = 64;
    genie_session* small_session = nullptr;
    // the model handle was freed above; create from a fresh one
    genie_model* model2 = nullptr;
    REQUIRE(genie_model_load(&model2, stories_path().c_str(), nullptr) == GENIE_OK);
    REQUIRE(genie_session_create(&small_session, model2, &small) == GENIE_OK);
    CHECK(genie_session_generate(&again, small_session, long_prompt.data(), long_prompt.size(), sampler, &opts,
                                 nullptr, nullptr) == GENIE_CONTEXT_OVERFLOW);
    CHECK(std::string(genie_last_error()).find("context") != std::string::npos);
    genie_session_free(small_session);
    genie_model_free(model2);

    genie_generate_result_clear(&result);
    genie_sampler_free(sampler);
    genie_session_free(session);
}

TEST_CASE("capi: evaluate, last logits, cached tokens", "[capi]") {
    Loaded l;
    const float* logits = nullptr;
    size_t count = 0;
    REQUIRE(genie_session_last_logits(&logits, &count, l.session) == GENIE_OK);
    CHECK(count == 0);
    const genie_token tokens[3] = {1, 400, 200};
    REQUIRE(genie_session_evaluate(&logits, &count, l.session, tokens, 3) == GENIE_OK);
    CHECK(count == 512);
    const float first = logits[0];
    const float* last = nullptr;
    size_t last_count = 0;
    REQUIRE(genie_session_last_logits(&last, &last_count, l.session) == GENIE_OK);
    CHECK(last_count == 512);
    CHECK(last[0] == first);
    const genie_token* cached = nullptr;
    REQUIRE(genie_session_cached_tokens(&cached, &count, l.session) == GENIE_OK);
    REQUIRE(count == 3);
    CHECK(cached[2] == 200);
    int32_t n_ctx = 0;
    REQUIRE(genie_session_context_length(&n_ctx, l.session) == GENIE_OK);
    CHECK(n_ctx == 256);

    const genie_token bad[1] = {100000};
    CHECK(genie_session_evaluate(&logits, &count, l.session, bad, 1) == GENIE_INVALID_ARGUMENT);
    CHECK(genie_session_evaluate(&logits, &count, l.session, nullptr, 0) == GENIE_INVALID_ARGUMENT);

    // Sampler on those logits: greedy picks the arg max.
    REQUIRE(genie_session_evaluate(&logits, &count, l.session, tokens, 3) == GENIE_OK);
    genie_token chosen = GENIE_NO_TOKEN;
    REQUIRE(genie_sampler_sample(&chosen, l.sampler, logits, count) == GENIE_OK);
    size_t best = 0;
    for (size_t i = 1; i < count; ++i)
        if (logits[i] > logits[best]) best = i;
    CHECK(chosen == static_cast<genie_token>(best));
    CHECK(genie_sampler_accept(l.sampler, chosen) == GENIE_OK);
    CHECK(genie_sampler_reset(l.sampler) == GENIE_OK);
}

namespace {
struct CancelState {
    genie_session* session = nullptr;
    int calls = 0;
};
int cancel_on_second(void* user, const char*, size_t, genie_token) {
    auto* s = static_cast<CancelState*>(user);
    if (++s->calls == 2) {
        // From another thread, as a UI would.
        std::thread([session = s->session] { genie_session_cancel(session); }).join();
    }
    return 0;
}
int busy_probe(void* user, const char*, size_t, genie_token) {
    auto* l = static_cast<Loaded*>(user);
    genie_generate_result r = GENIE_GENERATE_RESULT_INIT;
    // A second call on the busy session from inside the callback is refused.
    const genie_status s = genie_session_generate(&r, l->session, "a", 1, l->sampler, nullptr, nullptr, nullptr);
    return s == GENIE_BUSY ? 1 : 0;  // stop once we saw BUSY
}
}  // namespace

TEST_CASE("capi: cancel from another thread, busy sessions", "[capi]") {
    Loaded l;
    genie_generate_options opts = GENIE_GENERATE_OPTIONS_INIT;
    opts.max_tokens = 50;
    opts.stop_on_eog = 0;
    genie_generate_result result = GENIE_GENERATE_RESULT_INIT;
    CancelState state{l.session, 0};
    REQUIRE(genie_session_generate(&result, l.session, "Once", 4, l.sampler, &opts, cancel_on_second, &state) ==
            GENIE_OK);
    CHECK(result.finish_reason == GENIE_FINISH_CANCELLED);
    CHECK(result.completion_tokens == 2);
    genie_generate_result_clear(&result);

    REQUIRE(genie_session_generate(&result, l.session, "Once", 4, l.sampler, &opts, busy_probe, &l) == GENIE_OK);
    CHECK(result.finish_reason == GENIE_FINISH_STOP);
    CHECK(result.completion_tokens == 1);
    CHECK(std::string(genie_last_error()).find("in use") != std::string::npos);
    genie_generate_result_clear(&result);
    CHECK(genie_session_cancel(l.session) == GENIE_OK);  // nothing runs: a no-op
}

namespace {
struct LogSink {
    std::vector<std::string> messages;
};
void record_log(void* user, genie_log_level level, const char* message) {
    if (level == GENIE_LOG_ERROR) static_cast<LogSink*>(user)->messages.emplace_back(message);
}
}  // namespace

TEST_CASE("capi: log callback receives errors", "[capi]") {
    LogSink sink;
    REQUIRE(genie_log_set(record_log, &sink) == GENIE_OK);
    genie_model* model = nullptr;
    CHECK(genie_model_load(&model, "/nonexistent/x.gguf", nullptr) == GENIE_NOT_FOUND);
    REQUIRE(genie_log_set(nullptr, nullptr) == GENIE_OK);
    CHECK(genie_model_load(&model, "/nonexistent/y.gguf", nullptr) == GENIE_NOT_FOUND);
    REQUIRE(sink.messages.size() == 1);
    // The text genie_last_error() had after the first call.
    CHECK(sink.messages[0] == "genie_model_load: /nonexistent/x.gguf: cannot open: No such file or directory");
}

TEST_CASE("capi: chat template rendering", "[capi]") {
    Loaded l;
    const genie_chat_message messages[2] = {{"system", "Be brief."}, {"user", "Tell a story."}};
    char* text = nullptr;
    size_t len = 0;
    REQUIRE(genie_model_apply_chat_template(&text, &len, l.model, messages, 2, 1) == GENIE_OK);
    const std::string rendered(text, len);
    genie_string_free(text);
    const char* tmpl = nullptr;
    REQUIRE(genie_model_chat_template(&tmpl, l.model) == GENIE_OK);
    if (std::string(tmpl).empty()) {
        // ChatML fallback.
        CHECK(rendered ==
              "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nTell a story.<|im_end|>\n"
              "<|im_start|>assistant\n");
    }
}

namespace {

struct ChatStream {
    std::vector<std::pair<genie_piece_kind, std::string>> pieces;
    bool complete_utf8 = true;
    int cancel_after = -1;  // non-zero return after this many pieces
    int sleep_ms = 0;       // a slow consumer
    genie_session* cancel_session = nullptr;  // genie_session_cancel from another thread at the 2nd piece
    std::string text(genie_piece_kind kind) const {
        std::string out;
        for (const auto& [k, t] : pieces)
            if (k == kind) out += t;
        return out;
    }
};

bool is_complete_utf8(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (n == 0 || i + n > s.size()) return false;
        for (size_t k = 1; k < n; ++k)
            if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
        i += n;
    }
    return true;
}

int chat_piece(void* user, genie_piece_kind kind, const char* utf8, size_t len) {
    auto* s = static_cast<ChatStream*>(user);
    const std::string text(utf8, len);
    if (len == 0 || !is_complete_utf8(text)) s->complete_utf8 = false;
    s->pieces.emplace_back(kind, text);
    if (s->sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(s->sleep_ms));
    if (s->cancel_session && s->pieces.size() == 2)
        std::thread([session = s->cancel_session] { genie_session_cancel(session); }).join();
    return s->cancel_after >= 0 && static_cast<int>(s->pieces.size()) >= s->cancel_after ? 1 : 0;
}

std::string result_text(const genie_chat_result& r) { return r.text ? std::string(r.text, r.text_len) : std::string(); }

// The checks every chat call's outcome passes: text equals the CONTENT pieces, complete UTF-8.
void check_stream(const genie_chat_result& r, const ChatStream& s) {
    CHECK(s.complete_utf8);
    CHECK(result_text(r) == s.text(GENIE_PIECE_CONTENT));
    REQUIRE(r.text != nullptr);
    CHECK(std::strlen(r.text) == r.text_len);
    REQUIRE(r.reasoning != nullptr);
    CHECK(std::strlen(r.reasoning) == r.reasoning_len);
}

genie_chat_turn turn(const char* role, const char* content) { return {role, content, std::strlen(content)}; }

}  // namespace

TEST_CASE("capi: chat request on stories260K (ChatML): pieces, stop strings, JSON, timeouts, cancel", "[capi]") {
    Loaded l;
    const genie_chat_turn messages[3] = {turn("system", "Be brief."), turn("system", "Tell stories."),
                                         turn("user", "Tell a story.")};
    genie_chat_request request = GENIE_CHAT_REQUEST_INIT;
    request.messages = messages;
    request.n_messages = 3;
    request.max_tokens = 24;
    genie_chat_result result = GENIE_CHAT_RESULT_INIT;
    ChatStream stream;
    REQUIRE(genie_session_chat(l.session, &request, chat_piece, &stream, &result) == GENIE_OK);
    const std::string full = result_text(result);
    INFO("answer: " << full);
    check_stream(result, stream);
    CHECK(!full.empty());
    CHECK(stream.text(GENIE_PIECE_REASONING).empty());
    CHECK((result.finish_reason == GENIE_FINISH_LENGTH || result.finish_reason == GENIE_FINISH_STOP));
    CHECK(result.prompt_tokens > 10);
    CHECK(result.completion_tokens > 0);
    CHECK(result.completion_tokens <= 24);
    CHECK(result.reused_prefix_tokens == 0);
    CHECK(result.time_to_first_token_ms > 0);
    CHECK(result.prefill_tokens_per_s > 0);
    CHECK(result.total_ms >= result.time_to_first_token_ms);
    CHECK(result.n_tool_calls == 0);
    CHECK(result.tool_name == nullptr);

    // The same as the C++ API (greedy, same messages).
    {
        const genie::Model model = genie::Model::load(stories_path());
        genie::Session session(model);
        genie::Sampler greedy;
        genie::ChatOptions co;
        co.generate.max_tokens = 24;
        std::vector<genie::ChatMessage> cpp_messages(3);
        cpp_messages[0].role = "system";
        cpp_messages[0].content = "Be brief.";
        cpp_messages[1].role = "system";
        cpp_messages[1].content = "Tell stories.";
        cpp_messages[2].role = "user";
        cpp_messages[2].content = "Tell a story.";
        CHECK(session.chat(cpp_messages, greedy, co).generation.text == full);
    }

    // Again: the conversation's prefix is reused; the text is the same; the result may be
    // reused without clearing (the call frees what it held). The text may be taken and
    // freed with genie_string_free.
    {
        REQUIRE(genie_session_chat(l.session, &request, nullptr, nullptr, &result) == GENIE_OK);
        CHECK(result.reused_prefix_tokens > 0);
        CHECK(result_text(result) == full);
        char* taken = result.text;
        result.text = nullptr;
        genie_string_free(taken);
        genie_chat_result_clear(&result);
        CHECK(result.version == GENIE_CHAT_RESULT_VERSION);
        // out may be NULL.
        CHECK(genie_session_chat(l.session, &request, nullptr, nullptr, nullptr) == GENIE_OK);
    }

    // Stop strings: the answer ends before the stop string.
    if (full.size() >= 8) {
        const std::string stop_at = full.substr(full.size() / 2, 3);
        const char* stops[1] = {stop_at.c_str()};
        request.stop = stops;
        request.n_stop = 1;
        ChatStream s;
        REQUIRE(genie_session_chat(l.session, &request, chat_piece, &s, &result) == GENIE_OK);
        check_stream(result, s);
        CHECK(result.finish_reason == GENIE_FINISH_STOP);
        CHECK(result_text(result) == full.substr(0, full.find(stop_at)));
        genie_chat_result_clear(&result);
        request.stop = nullptr;
        CHECK(genie_session_chat(l.session, &request, nullptr, nullptr, &result) == GENIE_INVALID_ARGUMENT);
        CHECK(result.finish_reason == GENIE_FINISH_ERROR);
        request.n_stop = 0;
    } else {
        WARN("stories260K's answer is too short for the stop-string check: '" << full << "'");
    }

    // Callback non-zero -> CANCELLED, after exactly that many pieces.
    {
        ChatStream s;
        s.cancel_after = 2;
        REQUIRE(genie_session_chat(l.session, &request, chat_piece, &s, &result) == GENIE_OK);
        CHECK(result.finish_reason == GENIE_FINISH_CANCELLED);
        CHECK(s.pieces.size() == 2);
        check_stream(result, s);
    }
    // genie_session_cancel from another thread -> CANCELLED.
    {
        ChatStream s;
        s.cancel_session = l.session;
        request.max_tokens = 64;
        REQUIRE(genie_session_chat(l.session, &request, chat_piece, &s, &result) == GENIE_OK);
        CHECK(result.finish_reason == GENIE_FINISH_CANCELLED);
        CHECK(s.pieces.size() <= 3);  // within one token (plus text released at the end)
        check_stream(result, s);
    }
    // A total deadline of 1 ms -> TIMEOUT (a consumer that takes 2 ms per piece makes sure
    // it passes before the answer ends).
    {
        ChatStream s;
        s.sleep_ms = 2;
        request.deadline_ms = 1;
        REQUIRE(genie_session_chat(l.session, &request, chat_piece, &s, &result) == GENIE_OK);
        CHECK(result.finish_reason == GENIE_FINISH_TIMEOUT);
        CHECK(s.pieces.size() == 1);  // the first piece arrives after >= 1 ms of the call
        check_stream(result, s);
        request.deadline_ms = 0;
        // The idle timeout counts the model's time between pieces, not the consumer's.
        request.idle_timeout_ms = 1000;
        s = ChatStream{};
        s.sleep_ms = 2;
        request.max_tokens = 8;
        REQUIRE(genie_session_chat(l.session, &request, chat_piece, &s, &result) == GENIE_OK);
        CHECK(result.finish_reason != GENIE_FINISH_TIMEOUT);
        request.idle_timeout_ms = 0;
    }

    // Response format JSON object: the text is JSON (a complete object on STOP, a prefix of
    // one on LENGTH).
    {
        const genie::Model model = genie::Model::load(stories_path());
        const auto constraint = genie::JsonConstraint::any_object(model.tokenizer());
        request.response_format = GENIE_RESPONSE_FORMAT_JSON_OBJECT;
        request.max_tokens = 24;
        ChatStream s;
        REQUIRE(genie_session_chat(l.session, &request, chat_piece, &s, &result) == GENIE_OK);
        check_stream(result, s);
        const std::string json = result_text(result);
        INFO("JSON answer: " << json);
        // At most max_whitespace (2) bytes of whitespace may come before the value.
        REQUIRE(json.find_first_not_of(" \t\r\n") <= 2);
        CHECK(json[json.find_first_not_of(" \t\r\n")] == '{');
        genie::JsonMatcher matcher(constraint);
        CHECK(matcher.accept_text(json));
        if (result.finish_reason == GENIE_FINISH_STOP) CHECK(matcher.is_complete());
        else CHECK(result.finish_reason == GENIE_FINISH_LENGTH);

        // A JSON schema; an invalid one is INVALID_ARGUMENT before anything is generated.
        const std::string schema = R"({"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],
                                       "additionalProperties":false})";
        request.response_format = GENIE_RESPONSE_FORMAT_JSON_SCHEMA;
        request.json_schema = schema.data();
        request.json_schema_len = schema.size();
        ChatStream s2;
        REQUIRE(genie_session_chat(l.session, &request, chat_piece, &s2, &result) == GENIE_OK);
        check_stream(result, s2);
        const std::string typed = result_text(result);
        INFO("schema answer: " << typed);
        genie::JsonMatcher schema_matcher(genie::JsonConstraint::from_schema(schema, model.tokenizer()));
        CHECK(schema_matcher.accept_text(typed));
        CHECK(typed.find_first_not_of(" \t\r\n") == typed.find('{'));
        if (result.finish_reason == GENIE_FINISH_STOP) CHECK(schema_matcher.is_complete());

        const std::string bad = R"({"type":"object","properties":{"n":{"type":"integer","multipleOf":3}}})";
        request.json_schema = bad.data();
        request.json_schema_len = bad.size();
        ChatStream s3;
        require_error(genie_session_chat(l.session, &request, chat_piece, &s3, &result), GENIE_INVALID_ARGUMENT,
                      "genie_session_chat");
        CHECK(std::string(genie_last_error()).find("#/properties/n/multipleOf") != std::string::npos);
        CHECK(s3.pieces.empty());
        CHECK(result.finish_reason == GENIE_FINISH_ERROR);
        CHECK(result.text == nullptr);
        request.json_schema = "{not json";
        request.json_schema_len = 9;
        CHECK(genie_session_chat(l.session, &request, nullptr, nullptr, &result) == GENIE_INVALID_ARGUMENT);
        request.json_schema_len = 0;
        CHECK(genie_session_chat(l.session, &request, nullptr, nullptr, &result) == GENIE_INVALID_ARGUMENT);
        request.json_schema = nullptr;
        request.response_format = static_cast<genie_response_format>(9);
        CHECK(genie_session_chat(l.session, &request, nullptr, nullptr, &result) == GENIE_INVALID_ARGUMENT);
        request.response_format = GENIE_RESPONSE_FORMAT_NONE;
    }

    // Bad requests.
    {
        genie_chat_request bad = request;
        bad.version = GENIE_CHAT_REQUEST_VERSION + 1;
        CHECK(genie_session_chat(l.session, &bad, nullptr, nullptr, &result) == GENIE_INVALID_ARGUMENT);
        bad = request;
        bad.n_messages = 0;
        CHECK(genie_session_chat(l.session, &bad, nullptr, nullptr, &result) == GENIE_INVALID_ARGUMENT);
        bad = request;
        bad.max_tokens = -1;
        CHECK(genie_session_chat(l.session, &bad, nullptr, nullptr, &result) == GENIE_INVALID_ARGUMENT);
        bad = request;
        bad.think = static_cast<genie_think>(7);
        CHECK(genie_session_chat(l.session, &bad, nullptr, nullptr, &result) == GENIE_INVALID_ARGUMENT);
        const genie_chat_turn no_role[1] = {{nullptr, "x", 1}};
        bad = request;
        bad.messages = no_role;
        bad.n_messages = 1;
        require_error(genie_session_chat(l.session, &bad, nullptr, nullptr, &result), GENIE_INVALID_ARGUMENT,
                      "genie_session_chat");
        const genie_chat_turn null_content[1] = {{"user", nullptr, 3}};
        bad.messages = null_content;
        CHECK(genie_session_chat(l.session, &bad, nullptr, nullptr, &result) == GENIE_INVALID_ARGUMENT);
        genie_sampler_options so = GENIE_SAMPLER_OPTIONS_INIT;
        so.version = 0;
        bad = request;
        bad.sampler = &so;
        CHECK(genie_session_chat(l.session, &bad, nullptr, nullptr, &result) == GENIE_INVALID_ARGUMENT);
        CHECK(result.finish_reason == GENIE_FINISH_ERROR);
    }
    // Content given by length: bytes after content_len are not read.
    {
        const char buffer[] = "Tell a story.XXXX";
        const genie_chat_turn by_length[3] = {messages[0], messages[1], {"user", buffer, 13}};
        request.messages = by_length;
        request.max_tokens = 24;
        REQUIRE(genie_session_chat(l.session, &request, nullptr, nullptr, &result) == GENIE_OK);
        CHECK(result_text(result) == full);
    }
    genie_chat_result_clear(&result);
}

TEST_CASE("capi: chat request on the Qwen3 fixture: reasoning pieces, think switch, tool calls", "[capi]") {
    const auto path = genie::test::fixture_dir() / "qwen3-tiny-q4_k_m.gguf";
    if (!std::filesystem::exists(path)) {
        WARN("SKIPPED: fixture missing: " << path << " (created by ctest's fixture setup or scripts/make-fixtures)");
        return;
    }
    genie_model* model = nullptr;
    REQUIRE(genie_model_load(&model, path.string().c_str(), nullptr) == GENIE_OK);
    genie_session_options so = GENIE_SESSION_OPTIONS_INIT;
    so.context_length = 512;
    so.threads = 2;
    genie_session* session = nullptr;
    REQUIRE(genie_session_create(&session, model, &so) == GENIE_OK);
    genie_model_free(model);

    const genie_chat_turn messages[2] = {turn("system", "You are a helpful assistant."),
                                         turn("user", "Turn on the kitchen light")};
    genie_chat_request request = GENIE_CHAT_REQUEST_INIT;
    request.messages = messages;
    request.n_messages = 2;
    request.max_tokens = 48;
    genie_chat_result result = GENIE_CHAT_RESULT_INIT;
    for (const genie_think think : {GENIE_THINK_DEFAULT, GENIE_THINK_ON, GENIE_THINK_OFF}) {
        request.think = think;
        ChatStream s;
        REQUIRE(genie_session_chat(session, &request, chat_piece, &s, &result) == GENIE_OK);
        INFO("think " << think << ": content '" << result_text(result) << "', reasoning '" << result.reasoning << "'");
        check_stream(result, s);
        // The reasoning pieces are the reasoning text (the result's is trimmed).
        const std::string reasoning = s.text(GENIE_PIECE_REASONING);
        CHECK(reasoning.find(std::string(result.reasoning, result.reasoning_len)) != std::string::npos);
        CHECK(reasoning.find("<think>") == std::string::npos);
        CHECK(result_text(result).find("<think>") == std::string::npos);
        CHECK(result_text(result).find("<|im_end|>") == std::string::npos);
        if (think == GENIE_THINK_OFF) CHECK(reasoning.empty());
        CHECK((result.n_tool_calls > 0) == (result.tool_name != nullptr));
        CHECK((result.n_tool_calls > 0) == (result.tool_arguments != nullptr));
    }
    // JSON schema on a BPE vocabulary.
    const std::string schema = R"({"type":"object","properties":{"on":{"type":"boolean"}},"required":["on"]})";
    request.think = GENIE_THINK_DEFAULT;
    request.response_format = GENIE_RESPONSE_FORMAT_JSON_SCHEMA;
    request.json_schema = schema.data();
    request.json_schema_len = schema.size();
    ChatStream s;
    REQUIRE(genie_session_chat(session, &request, chat_piece, &s, &result) == GENIE_OK);
    check_stream(result, s);
    CHECK(s.text(GENIE_PIECE_REASONING).empty());
    const std::string json = result_text(result);
    INFO("JSON answer: " << json);
    REQUIRE(json.find('{') != std::string::npos);
    CHECK(json.find_first_not_of(" \t\r\n") == json.find('{'));
    genie_chat_result_clear(&result);
    genie_session_free(session);
}

TEST_CASE("capi: chat request v2: forced tool calls, every call in the result, tool messages, grammar", "[capi]") {
    Loaded l;
    const char* tools = R"([{"type":"function","function":{"name":"set_light","parameters":{"type":"object",
        "properties":{"room":{"type":"string","maxLength":8},"level":{"type":"integer","minimum":0,"maximum":100}},
        "required":["room","level"],"additionalProperties":false}}},
        {"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{},"additionalProperties":false}}}])";
    const genie_chat_turn messages[3] = {turn("user", "Dim the hall."), turn("assistant", ""), turn("tool", "done")};
    const genie_chat_turn_extra extras[3] = {
        {nullptr, nullptr, nullptr},
        {R"([{"id":"call_0","type":"function","function":{"name":"get_time","arguments":"{}"}}])", nullptr, nullptr},
        {nullptr, "call_0", "get_time"}};
    genie_chat_request request = GENIE_CHAT_REQUEST_INIT;
    request.messages = messages;
    request.message_extras = extras;
    request.n_messages = 3;
    request.max_tokens = 96;
    request.tools_json = tools;
    request.tools_json_len = std::strlen(tools);
    request.tool_choice = GENIE_TOOL_CHOICE_REQUIRED;
    request.parallel_tool_calls = 1;
    genie_chat_result result = GENIE_CHAT_RESULT_INIT;
    REQUIRE(genie_session_chat(l.session, &request, nullptr, nullptr, &result) == GENIE_OK);
    INFO("answer: " << result.text);
    if (result.finish_reason == GENIE_FINISH_STOP) {
        // A complete forced answer is one or more calls of offered tools with valid arguments.
        REQUIRE(result.n_tool_calls >= 1);
        REQUIRE(result.tool_calls != nullptr);
        for (size_t i = 0; i < result.n_tool_calls; ++i) {
            const genie_tool_call& c = result.tool_calls[i];
            CHECK((std::string(c.name) == "set_light" || std::string(c.name) == "get_time"));
            CHECK(c.id != nullptr);
            CHECK(c.error == nullptr);
            CHECK(nlohmann::json::parse(c.arguments).is_object());
        }
        CHECK(std::string(result.tool_name) == result.tool_calls[0].name);
        CHECK(result.n_rejected_tool_calls == 0);
    } else {
        CHECK(result.finish_reason == GENIE_FINISH_LENGTH);
    }
    // A named function.
    request.tool_choice = GENIE_TOOL_CHOICE_FUNCTION;
    request.tool_choice_function = "get_time";
    request.parallel_tool_calls = -1;
    REQUIRE(genie_session_chat(l.session, &request, nullptr, nullptr, &result) == GENIE_OK);
    REQUIRE(result.finish_reason == GENIE_FINISH_STOP);
    REQUIRE(result.n_tool_calls == 1);
    CHECK(std::string(result.tool_calls[0].name) == "get_time");
    CHECK(nlohmann::json::parse(result.tool_calls[0].arguments) == nlohmann::json::object());
    // Errors: a named function that was not offered; a forced call without tools.
    request.tool_choice_function = "joke";
    require_error(genie_session_chat(l.session, &request, nullptr, nullptr, &result), GENIE_INVALID_ARGUMENT,
                  "not among the tools");
    request.tool_choice = GENIE_TOOL_CHOICE_REQUIRED;
    request.tools_json = nullptr;
    request.tools_json_len = 0;
    require_error(genie_session_chat(l.session, &request, nullptr, nullptr, &result), GENIE_INVALID_ARGUMENT,
                  "tools_json is empty");
    // A GBNF grammar.
    request.tool_choice = GENIE_TOOL_CHOICE_AUTO;
    const char* grammar = "root ::= (\"yes\" | \"no\") \" it is\"";
    request.response_format = GENIE_RESPONSE_FORMAT_GRAMMAR;
    request.grammar = grammar;
    request.grammar_len = std::strlen(grammar);
    const genie_status grammar_status = genie_session_chat(l.session, &request, nullptr, nullptr, &result);
    INFO("last error: " << genie_last_error());
    REQUIRE(grammar_status == GENIE_OK);
    CHECK(result.finish_reason == GENIE_FINISH_STOP);
    CHECK((std::string(result.text) == "yes it is" || std::string(result.text) == "no it is"));
    request.grammar = "root ::= undefined";
    request.grammar_len = std::strlen(request.grammar);
    require_error(genie_session_chat(l.session, &request, nullptr, nullptr, &result), GENIE_INVALID_ARGUMENT,
                  "rule 'undefined' is used but not defined");
    genie_chat_result_clear(&result);
}
