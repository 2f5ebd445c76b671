// The engine's C ABI (genie.h "engine" section, capi/genie_engine_c.cpp): _INIT macros
// equal the _init functions, NULL / garbage is rejected with a status and a message, a
// load -> chat (warm turns) -> status -> trim -> unload round trip, a failed load reported
// through genie_engine_status (what the assistant's health check reads).
#include "support/test_support.hpp"

#include <genie/genie.h>

#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

std::string fixture(const std::string& name) { return (genie::test::fixture_dir() / (name + ".gguf")).string(); }

template <class T>
bool same_bytes(const T& a, const T& b) {
    return std::memcmp(&a, &b, sizeof(T)) == 0;
}

void require_error(genie_status status, genie_status expected, const char* function) {
    INFO("status " << genie_status_name(status) << ", message: " << genie_last_error());
    REQUIRE(status == expected);
    REQUIRE(std::string(genie_last_error()).find(function) != std::string::npos);
}

struct Pieces {
    std::string text;
    int calls = 0;
    float last_progress = -1.0f;
    int progress_calls = 0;
};

int on_piece(void* user, genie_piece_kind kind, const char* utf8, size_t len) {
    auto* p = static_cast<Pieces*>(user);
    if (kind == GENIE_PIECE_CONTENT) p->text.append(utf8, len);
    ++p->calls;
    return 0;
}

int on_progress(void* user, float fraction) {
    auto* p = static_cast<Pieces*>(user);
    p->last_progress = fraction;
    ++p->progress_calls;
    return 0;
}

}  // namespace

TEST_CASE("engine capi: _INIT macros equal the _init functions", "[engine][capi]") {
    genie_engine_options a = GENIE_ENGINE_OPTIONS_INIT, b;
    std::memset(&b, 0x5a, sizeof b);
    REQUIRE(genie_engine_options_init(&b, GENIE_ENGINE_OPTIONS_VERSION) == GENIE_OK);
    CHECK(same_bytes(a, b));
    genie_engine_chat_options c = GENIE_ENGINE_CHAT_OPTIONS_INIT, d;
    std::memset(&d, 0x5a, sizeof d);
    REQUIRE(genie_engine_chat_options_init(&d, GENIE_ENGINE_CHAT_OPTIONS_VERSION) == GENIE_OK);
    CHECK(c.version == d.version);  // (padding: compare field by field)
    CHECK(c.conversation_id == d.conversation_id);
    CHECK(c.priority == d.priority);
    require_error(genie_engine_options_init(&b, 0), GENIE_INVALID_ARGUMENT, "genie_engine_options_init");
    require_error(genie_engine_options_init(nullptr, 1), GENIE_INVALID_ARGUMENT, "genie_engine_options_init");
    require_error(genie_engine_chat_options_init(&d, 99), GENIE_INVALID_ARGUMENT, "genie_engine_chat_options_init");
    CHECK(a.max_conversations == 4);
    CHECK(a.max_concurrent == 1);
    CHECK(a.watchdog_timeout_ms == 60000u);
}

TEST_CASE("engine capi: NULL and garbage arguments are errors, never crashes", "[engine][capi]") {
    genie_engine* e = reinterpret_cast<genie_engine*>(0x1);
    require_error(genie_engine_create(nullptr, nullptr), GENIE_INVALID_ARGUMENT, "genie_engine_create");
    genie_engine_options bad = GENIE_ENGINE_OPTIONS_INIT;
    bad.max_concurrent = 0;
    require_error(genie_engine_create(&e, &bad), GENIE_INVALID_ARGUMENT, "genie_engine_create");
    CHECK(e == nullptr);
    bad = GENIE_ENGINE_OPTIONS_INIT;
    bad.version = 7;
    require_error(genie_engine_create(&e, &bad), GENIE_INVALID_ARGUMENT, "genie_engine_create");

    std::vector<uint64_t> garbage(16, 0x1234);
    auto* g = reinterpret_cast<genie_engine*>(garbage.data());
    require_error(genie_engine_load(nullptr, "x", nullptr, nullptr), GENIE_INVALID_ARGUMENT, "genie_engine_load");
    require_error(genie_engine_load(g, "x", nullptr, nullptr), GENIE_INVALID_ARGUMENT, "genie_engine_load");
    require_error(genie_engine_unload(g), GENIE_INVALID_ARGUMENT, "genie_engine_unload");
    require_error(genie_engine_warmup(nullptr), GENIE_INVALID_ARGUMENT, "genie_engine_warmup");
    genie_engine_status_info st = GENIE_ENGINE_STATUS_INIT;
    require_error(genie_engine_status(&st, g), GENIE_INVALID_ARGUMENT, "genie_engine_status");
    require_error(genie_engine_status(nullptr, nullptr), GENIE_INVALID_ARGUMENT, "genie_engine_status");
    genie_chat_result res = GENIE_CHAT_RESULT_INIT;
    require_error(genie_engine_chat(g, nullptr, nullptr, nullptr, nullptr, &res), GENIE_INVALID_ARGUMENT,
                  "genie_engine_chat");
    CHECK(res.finish_reason == GENIE_FINISH_ERROR);
    genie_engine_free(nullptr);
    genie_engine_free(g);  // not a live engine: ignored

    REQUIRE(genie_engine_create(&e, nullptr) == GENIE_OK);
    require_error(genie_engine_load(e, nullptr, nullptr, nullptr), GENIE_INVALID_ARGUMENT, "genie_engine_load");
    genie_chat_request rq = GENIE_CHAT_REQUEST_INIT;  // no messages
    require_error(genie_engine_chat(e, nullptr, &rq, nullptr, nullptr, &res), GENIE_INVALID_ARGUMENT,
                  "genie_engine_chat");
    genie_chat_turn turn{"user", "hi", 2};
    rq.messages = &turn;
    rq.n_messages = 1;
    require_error(genie_engine_chat(e, nullptr, &rq, nullptr, nullptr, &res), GENIE_NOT_LOADED, "genie_engine_chat");
    st.version = 0;
    require_error(genie_engine_status(&st, e), GENIE_INVALID_ARGUMENT, "genie_engine_status");
    genie_engine_free(e);
}

TEST_CASE("engine capi: load, warm chat turns, status, trim, unload", "[engine][capi]") {
    genie_engine_options o = GENIE_ENGINE_OPTIONS_INIT;
    o.backend = GENIE_BACKEND_CPU;
    o.context_length = 256;
    o.threads = 1;
    genie_engine* e = nullptr;
    REQUIRE(genie_engine_create(&e, &o) == GENIE_OK);

    genie_engine_status_info st = GENIE_ENGINE_STATUS_INIT;
    REQUIRE(genie_engine_status(&st, e) == GENIE_OK);
    CHECK(st.state == GENIE_ENGINE_UNLOADED);
    CHECK(st.health == GENIE_HEALTH_OK);
    CHECK(std::string(st.health_reason).empty());
    CHECK(std::string(st.model_path).empty());

    Pieces p;
    REQUIRE(genie_engine_load(e, fixture("qwen3-tiny-q4_k_m").c_str(), on_progress, &p) == GENIE_OK);
    genie_engine_state state = GENIE_ENGINE_FAILED;
    REQUIRE(genie_engine_wait(&state, e, -1) == GENIE_OK);
    CHECK(state == GENIE_ENGINE_READY);
    CHECK(p.last_progress == 1.0f);
    CHECK(p.progress_calls >= 2);
    REQUIRE(genie_engine_warmup(e) == GENIE_OK);

    std::string system = "You are a voice assistant.";
    for (int i = 0; i < 10; ++i) system += " Keep answers short.";
    std::vector<genie_chat_turn> turns = {{"system", system.data(), system.size()}, {"user", "Hello there", 11}};
    genie_chat_request rq = GENIE_CHAT_REQUEST_INIT;
    rq.messages = turns.data();
    rq.n_messages = turns.size();
    rq.max_tokens = 4;
    genie_engine_chat_options co = GENIE_ENGINE_CHAT_OPTIONS_INIT;
    co.conversation_id = "kitchen";
    genie_chat_result r1 = GENIE_CHAT_RESULT_INIT;
    REQUIRE(genie_engine_chat(e, &co, &rq, on_piece, &p, &r1) == GENIE_OK);
    CHECK(r1.reused_prefix_tokens == 0);
    CHECK(r1.prompt_tokens > 50);
    CHECK(r1.finish_reason != GENIE_FINISH_ERROR);
    CHECK(std::string(r1.text) == p.text);

    const std::string answer = "Hi.";  // as the application stores the answer
    turns.push_back({"assistant", answer.data(), answer.size()});
    turns.push_back({"user", "How are you", 11});
    rq.messages = turns.data();
    rq.n_messages = turns.size();
    genie_chat_result r2 = GENIE_CHAT_RESULT_INIT;
    REQUIRE(genie_engine_chat(e, &co, &rq, nullptr, nullptr, &r2) == GENIE_OK);
    CHECK(r2.reused_prefix_tokens >= r1.prompt_tokens);

    REQUIRE(genie_engine_status(&st, e) == GENIE_OK);
    CHECK(st.state == GENIE_ENGINE_READY);
    CHECK(st.health == GENIE_HEALTH_OK);
    CHECK(std::string(st.architecture) == "qwen3");
    CHECK(std::string(st.model_path) == fixture("qwen3-tiny-q4_k_m"));
    CHECK(std::string(st.backend) == "cpu");
    CHECK(st.context_length == 256);
    CHECK(st.weights_bytes > 0);
    CHECK(st.kv_bytes == uint64_t(2 * 4 * 256 * 4 * 64 * 2));
    CHECK(st.scratch_bytes > 0);
    CHECK(st.device_bytes == 0);
    CHECK(st.process_rss_bytes > 0);
    CHECK(st.requests == 2);
    CHECK(st.failures == 0);
    CHECK(st.reused_tokens == static_cast<uint64_t>(r2.reused_prefix_tokens));
    CHECK(st.generated_tokens == static_cast<uint64_t>(r1.completion_tokens + r2.completion_tokens));
    CHECK(st.conversations == 1);
    CHECK(st.last_error_status == GENIE_OK);

    uint64_t released = 0;
    REQUIRE(genie_engine_trim(&released, e, 0) == GENIE_OK);
    CHECK(released >= st.kv_bytes);
    REQUIRE(genie_engine_status(&st, e) == GENIE_OK);
    CHECK(st.kv_bytes == 0);
    CHECK(st.conversations == 0);

    REQUIRE(genie_engine_set_context_limit(e, 128) == GENIE_OK);
    REQUIRE(genie_engine_cancel(e, nullptr) == GENIE_OK);
    REQUIRE(genie_engine_forget(e, "kitchen") == GENIE_OK);
    REQUIRE(genie_engine_unload(e) == GENIE_OK);
    REQUIRE(genie_engine_status(&st, e) == GENIE_OK);
    CHECK(st.state == GENIE_ENGINE_UNLOADED);
    CHECK(st.weights_bytes == 0);
    genie_engine_status_clear(&st);
    CHECK(st.health_reason == nullptr);
    CHECK(st.version == GENIE_ENGINE_STATUS_VERSION);
    genie_chat_result_clear(&r1);
    genie_chat_result_clear(&r2);
    genie_engine_free(e);
}

TEST_CASE("engine capi: a failed load is FAILED in genie_engine_status, a good one recovers", "[engine][capi]") {
    const auto bad = genie::test::temp_path("engine-capi-bad");
    {
        std::ofstream out(bad, std::ios::binary);
        out << "not a gguf file at all";
    }
    genie_engine* e = nullptr;
    REQUIRE(genie_engine_create(&e, nullptr) == GENIE_OK);
    REQUIRE(genie_engine_load(e, bad.string().c_str(), nullptr, nullptr) == GENIE_OK);
    genie_engine_state state = GENIE_ENGINE_READY;
    require_error(genie_engine_wait(&state, e, -1), GENIE_FORMAT, "genie_engine_wait");
    CHECK(state == GENIE_ENGINE_FAILED);
    genie_engine_status_info st = GENIE_ENGINE_STATUS_INIT;
    REQUIRE(genie_engine_status(&st, e) == GENIE_OK);
    CHECK(st.state == GENIE_ENGINE_FAILED);
    CHECK(st.health == GENIE_HEALTH_FAILED);
    CHECK(std::string(st.health_reason).find("load failed") != std::string::npos);
    CHECK(st.last_error_status == GENIE_FORMAT);
    CHECK(std::string(st.last_error).find(bad.filename().string()) != std::string::npos);
    CHECK(st.load_failures == 1);

    REQUIRE(genie_engine_load(e, fixture("qwen3-tiny-q4_0").c_str(), nullptr, nullptr) == GENIE_OK);
    REQUIRE(genie_engine_wait(&state, e, -1) == GENIE_OK);
    CHECK(state == GENIE_ENGINE_READY);
    REQUIRE(genie_engine_status(&st, e) == GENIE_OK);  // clears the previous strings itself
    CHECK(st.health == GENIE_HEALTH_OK);
    CHECK(st.loads == 1);
    genie_engine_status_clear(&st);
    genie_engine_free(e);
    std::filesystem::remove(bad);
}
