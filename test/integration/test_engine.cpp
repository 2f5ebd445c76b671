// genie::Engine on the fixture models: background load with progress, bad file -> FAILED,
// unload frees (RSS), swap under a running request, status under concurrent requests,
// priority admission, the watchdog, out-of-memory health, warm turns, trim, the bounded
// queue (Busy), cancellation while waiting and running, text completions, spare sessions.
#include "support/test_support.hpp"

#include <genie/engine.hpp>
#include <genie/error.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <thread>
#include <unistd.h>

using namespace genie;
using namespace std::chrono_literals;

namespace {

std::filesystem::path fixture(const std::string& name) { return test::fixture_dir() / (name + ".gguf"); }

uint64_t rss_bytes() {
    std::ifstream in("/proc/self/statm");
    uint64_t size = 0, resident = 0;
    in >> size >> resident;
    return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

EngineOptions small_engine() {
    EngineOptions o;
    o.session.context_length = 256;
    o.session.threads = 1;
    o.watchdog_timeout_s = 0;  // tests that need it turn it on
    return o;
}

/// Greedy, and every token that is not ordinary text banned, so each token of the random
/// fixture models yields a piece (no end-of-generation, no control tokens).
SamplerOptions text_only_sampler(Engine& engine) {
    (void)engine;
    static const std::vector<std::pair<TokenId, float>> bias = [] {
        const Model m = Model::load(fixture("qwen3-tiny-q8_0"));
        std::vector<std::pair<TokenId, float>> b;
        const Tokenizer& tok = m.tokenizer();
        for (size_t id = 0; id < tok.vocab_size(); ++id)
            if (tok.token_type(static_cast<TokenId>(id)) != TokenType::Normal)
                b.emplace_back(static_cast<TokenId>(id), -INFINITY);
        return b;
    }();
    SamplerOptions s;
    s.logit_bias = bias;
    return s;
}

EngineChatRequest request(Engine& engine, const std::string& conversation, std::vector<ChatMessage> messages,
                          int32_t max_tokens = 6) {
    EngineChatRequest r;
    r.conversation_id = conversation;
    r.messages = std::move(messages);
    r.options.generate.max_tokens = max_tokens;
    r.sampler = text_only_sampler(engine);
    return r;
}

ChatMessage msg(std::string role, std::string content) {
    ChatMessage m;
    m.role = std::move(role);
    m.content = std::move(content);
    return m;
}

/// Polls `pred` until true or ~30 s passed (a deadlock guard, not a timing assertion).
template <class Pred>
bool eventually(Pred pred) {
    for (int i = 0; i < 3000; ++i) {
        if (pred()) return true;
        std::this_thread::sleep_for(10ms);
    }
    return pred();
}

/// A gate a piece callback waits at until the test opens it.
struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    bool open = false;
    int arrived = 0;
    void wait() {
        std::unique_lock<std::mutex> lk(mu);
        ++arrived;
        cv.notify_all();
        cv.wait_for(lk, 30s, [&] { return open; });
    }
    void release() {
        std::lock_guard<std::mutex> lk(mu);
        open = true;
        cv.notify_all();
    }
    int count() {
        std::lock_guard<std::mutex> lk(mu);
        return arrived;
    }
};

}  // namespace

TEST_CASE("engine: background load reports progress and ends READY", "[engine]") {
    Engine engine(small_engine());
    CHECK(engine.status().state == EngineState::Unloaded);
    std::vector<float> fractions;
    std::mutex mu;
    ErrorCode from_progress = ErrorCode::Ok;
    ModelOptions mo;
    mo.progress = [&](float f) {
        std::lock_guard<std::mutex> lk(mu);
        if (fractions.empty()) {
            try {
                engine.unload();  // would wait for this very load
            } catch (const Error& e) {
                from_progress = e.code();
            }
        }
        fractions.push_back(f);
        return true;
    };
    engine.load(fixture("qwen3-tiny-q4_k_m"), mo);
    engine.wait();
    const EngineStatus s = engine.status();
    CHECK(s.state == EngineState::Ready);
    CHECK(s.health == EngineHealth::Ok);
    CHECK(s.load_progress == 1.0f);
    CHECK(s.architecture == "qwen3");
    CHECK(s.model_path == fixture("qwen3-tiny-q4_k_m").string());
    CHECK(s.context_length == 256);
    CHECK(s.memory.weights > 0);
    CHECK(s.memory.kv == 0);
    CHECK(s.counters.loads == 1);
    REQUIRE(fractions.size() >= 2);
    CHECK(fractions.back() == 1.0f);
    CHECK(std::is_sorted(fractions.begin(), fractions.end()));
    CHECK(from_progress == ErrorCode::Busy);
    engine.warmup();
    CHECK(engine.status().memory.kv == 0);  // warmup keeps nothing
}

TEST_CASE("engine: a bad file leaves the engine FAILED with a message, a good load recovers", "[engine]") {
    const auto bad = test::temp_path("engine-bad");
    {
        std::ofstream out(bad, std::ios::binary);
        out << "this is not a model file";
    }
    Engine engine(small_engine());
    engine.load(bad);
    try {
        engine.wait();
        FAIL("wait() should have thrown");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::Format);
    }
    EngineStatus s = engine.status();
    CHECK(s.state == EngineState::Failed);
    CHECK(s.health == EngineHealth::Failed);
    CHECK(s.health_reason.find("load failed") != std::string::npos);
    CHECK(s.last_error.find(bad.filename().string()) != std::string::npos);
    CHECK(s.last_error_code == ErrorCode::Format);
    CHECK(s.counters.load_failures == 1);
    CHECK_THROWS_AS(engine.chat(request(engine, "a", {msg("user", "hi")})), Error);

    engine.load(test::fixture_dir() / "does-not-exist.gguf");
    CHECK_THROWS_AS(engine.wait(), Error);
    CHECK(engine.status().last_error_code == ErrorCode::NotFound);

    engine.load(fixture("qwen3-tiny-q8_0"));
    engine.wait();
    s = engine.status();
    CHECK(s.state == EngineState::Ready);
    CHECK(s.health == EngineHealth::Ok);
    const EngineChatResult r = engine.chat(request(engine, "a", {msg("user", "hello")}));
    CHECK(r.chat.generation.completion_tokens == 6);
    std::filesystem::remove(bad);
}

TEST_CASE("engine: unload frees the weights and the KV caches (RSS back near the baseline)", "[engine]") {
    // qwen3-tiny-f32: 174 MB of weights, all touched by a forward pass (tied output).
    EngineOptions o = small_engine();
    o.session.context_length = 2048;
    Engine engine(o);
    auto cycle = [&](uint64_t* peak) {
        engine.load(fixture("qwen3-tiny-f32"));
        engine.wait();
        engine.warmup();
        engine.chat(request(engine, "a", {msg("user", "one")}, 2));
        engine.chat(request(engine, "b", {msg("user", "two")}, 2));
        if (peak) *peak = rss_bytes();
        const EngineStatus s = engine.status();
        CHECK(s.memory.kv == 2 * uint64_t(2 * 4 * 2048 * 4 * 64 * 2));  // 2 sessions, F16, 4 layers, 4 kv heads x 64
        CHECK(s.memory.scratch > 0);
        CHECK(s.conversations == 2);
        engine.unload();
    };
    cycle(nullptr);  // first-use allocations (thread-locals, allocator arenas) out of the way
    const uint64_t baseline = rss_bytes();
    uint64_t peak = 0;
    cycle(&peak);
    const uint64_t after = rss_bytes();
    INFO("baseline " << baseline / 1e6 << " MB, loaded " << peak / 1e6 << " MB, after unload " << after / 1e6 << " MB");
    REQUIRE(peak > baseline + 150'000'000);  // the model really was resident
#if GENIE_TEST_SANITIZED
    // The sanitizer's allocator keeps freed blocks in quarantine: RSS says nothing there.
    WARN("sanitizer build: RSS after unload not checked (" << after / 1e6 << " MB)");
#else
    CHECK(after < baseline + 16'000'000);
#endif
    const EngineStatus s = engine.status();
    CHECK(s.state == EngineState::Unloaded);
    CHECK(s.memory.weights == 0);
    CHECK(s.memory.kv == 0);
    CHECK(s.memory.scratch == 0);
    CHECK(s.conversations == 0);
}

TEST_CASE("engine: swap under a running request", "[engine]") {
    Engine engine(small_engine());
    engine.load(fixture("qwen3-tiny-q8_0"));
    engine.wait();
    engine.chat(request(engine, "idle", {msg("user", "kept")}));
    CHECK(engine.status().conversations == 1);

    Gate gate;
    EngineChatResult running;
    std::thread t([&] {
        bool first = true;
        running = engine.chat(request(engine, "a", {msg("user", "tell me")}, 8), [&](const Piece&) {
            if (first) gate.wait();
            first = false;
            return true;
        });
    });
    REQUIRE(eventually([&] { return gate.count() == 1; }));
    CHECK(engine.status().state == EngineState::Busy);

    // A failed swap leaves the old model serving, Degraded.
    engine.swap(test::fixture_dir() / "no-such-model.gguf");
    CHECK_THROWS_AS(engine.wait(), Error);
    EngineStatus s = engine.status();
    CHECK(s.state == EngineState::Busy);
    CHECK(s.health == EngineHealth::Degraded);
    CHECK(s.health_reason.find("swap failed") != std::string::npos);
    CHECK(s.model_path == fixture("qwen3-tiny-q8_0").string());

    // A good swap replaces it while the request still runs on the old one.
    engine.swap(fixture("llama-tiny-q8_0"));
    engine.wait();
    s = engine.status();
    CHECK(s.architecture == "llama");
    CHECK(s.model_path == fixture("llama-tiny-q8_0").string());
    CHECK(s.state == EngineState::Busy);
    CHECK(s.health == EngineHealth::Ok);
    CHECK(s.conversations == 1);  // the idle session of the old model was freed, the running one stays
    gate.release();
    t.join();
    CHECK(running.chat.generation.completion_tokens == 8);
    CHECK(running.chat.generation.finish_reason == FinishReason::Length);
    s = engine.status();
    CHECK(s.state == EngineState::Ready);
    CHECK(s.conversations == 0);  // the running one's session belonged to the old model
    CHECK(s.counters.loads == 2);
    CHECK(s.counters.load_failures == 1);

    // The conversation continues cold on the new model.
    EngineChatRequest r;
    r.conversation_id = "a";
    r.messages = {msg("user", "tell me")};
    r.options.generate.max_tokens = 4;
    const EngineChatResult next = engine.chat(r);
    CHECK_FALSE(next.warm);
    CHECK(next.reused_tokens == 0);
}

namespace {
/// Runs a chat whose first piece waits at `gate`, recording the order first pieces arrive.
struct Runner {
    Engine& engine;
    Gate& gate;
    std::mutex mu;
    std::vector<std::string> order;
    void run(const std::string& id, int32_t priority) {
        EngineChatRequest r = request(engine, id, {msg("user", "question " + id)}, 4);
        r.priority = priority;
        bool first = true;
        engine.chat(r, [&](const Piece&) {
            if (first) {
                {
                    std::lock_guard<std::mutex> lk(mu);
                    order.push_back(id);
                }
                gate.wait();
            }
            first = false;
            return true;
        });
    }
};
}  // namespace

TEST_CASE("engine: status under concurrent requests", "[engine]") {
    EngineOptions o = small_engine();
    o.max_concurrent = 2;
    o.max_conversations = 3;
    Engine engine(o);
    engine.load(fixture("qwen3-tiny-q4_0"));
    engine.wait();

    Gate gate;
    Runner runner{engine, gate, {}, {}};
    std::vector<std::thread> threads;
    threads.emplace_back([&] { runner.run("a", 0); });
    threads.emplace_back([&] { runner.run("b", 0); });
    REQUIRE(eventually([&] { return gate.count() == 2; }));
    threads.emplace_back([&] { runner.run("c", 0); });
    threads.emplace_back([&] { runner.run("d", 3); });
    REQUIRE(eventually([&] { return engine.status().queued_requests == 2; }));

    EngineStatus s = engine.status();
    CHECK(s.state == EngineState::Busy);
    CHECK(s.active_requests == 2);
    CHECK(s.queued_requests == 2);
    CHECK(s.counters.requests == 2);
    CHECK(s.memory.kv == 2 * uint64_t(2 * 4 * 256 * 4 * 64 * 2));
    // Status stays consistent while the requests run (checked on another thread, reported here).
    std::atomic<bool> stop{false};
    std::atomic<int> bad{0}, polls{0};
    std::thread poller([&] {
        while (!stop) {
            const EngineStatus p = engine.status();
            if (p.active_requests > 2 || p.conversations > 3 || p.active_requests + p.queued_requests > 4 ||
                (p.active_requests > 0) != (p.state == EngineState::Busy))
                ++bad;
            ++polls;
            std::this_thread::sleep_for(1ms);
        }
    });
    gate.release();
    for (auto& t : threads) t.join();
    stop = true;
    poller.join();
    CHECK(bad == 0);
    CHECK(polls > 0);
    CHECK(runner.order.size() == 4);
    s = engine.status();
    CHECK(s.state == EngineState::Ready);
    CHECK(s.active_requests == 0);
    CHECK(s.counters.requests == 4);
    CHECK(s.counters.generated_tokens == 16);
    CHECK(s.counters.failures == 0);
    CHECK(s.conversations == 3);  // max_conversations: the least recently used one was evicted
}

TEST_CASE("engine: serialized requests are admitted by priority", "[engine]") {
    Engine engine(small_engine());  // max_concurrent 1
    engine.load(fixture("qwen3-tiny-q4_0"));
    engine.wait();
    Gate gate;
    Runner runner{engine, gate, {}, {}};
    std::vector<std::thread> threads;
    threads.emplace_back([&] { runner.run("first", 0); });
    REQUIRE(eventually([&] { return gate.count() == 1; }));
    threads.emplace_back([&] { runner.run("low", 0); });
    REQUIRE(eventually([&] { return engine.status().queued_requests == 1; }));
    threads.emplace_back([&] { runner.run("low2", 0); });
    REQUIRE(eventually([&] { return engine.status().queued_requests == 2; }));
    threads.emplace_back([&] { runner.run("high", 5); });
    REQUIRE(eventually([&] { return engine.status().queued_requests == 3; }));
    gate.release();
    for (auto& t : threads) t.join();
    CHECK(runner.order == std::vector<std::string>{"first", "high", "low", "low2"});
}

TEST_CASE("engine: the watchdog reports a stuck generation", "[engine]") {
    EngineOptions o = small_engine();
    o.watchdog_timeout_s = 0.2;
    Engine engine(o);
    engine.load(fixture("qwen3-tiny-q4_0"));
    engine.wait();

    Gate gate;
    std::thread t([&] {
        bool first = true;
        engine.chat(request(engine, "slow", {msg("user", "hi")}, 3), [&](const Piece&) {
            if (first) gate.wait();  // "stuck" until the test saw it
            first = false;
            return true;
        });
    });
    REQUIRE(eventually([&] { return engine.status().health == EngineHealth::Degraded; }));
    EngineStatus s = engine.status();
    CHECK(s.state == EngineState::Busy);
    CHECK(s.health_reason.find("stuck") != std::string::npos);
    CHECK(s.health_reason.find("'slow'") != std::string::npos);
    CHECK(s.seconds_since_token > 0.2);
    REQUIRE(eventually([&] { return engine.status().counters.stuck_events == 1; }));
    gate.release();
    t.join();
    s = engine.status();
    CHECK(s.health == EngineHealth::Ok);
    CHECK(s.state == EngineState::Ready);
    CHECK(s.counters.stuck_events == 1);

}

TEST_CASE("engine: the watchdog can cancel a stuck generation", "[engine]") {
    EngineOptions oc = small_engine();
    oc.watchdog_timeout_s = 0.2;
    oc.cancel_stuck = true;
    Engine e2(oc);
    e2.load(fixture("qwen3-tiny-q4_0"));
    e2.wait();
    int calls = 0;
    const EngineChatResult r = e2.chat(request(e2, "slow", {msg("user", "hi")}, 50), [&](const Piece&) {
        if (++calls == 1) eventually([&] { return e2.status().counters.stuck_events == 1; });
        return true;
    });
    CHECK(r.chat.generation.finish_reason == FinishReason::Cancelled);
    CHECK(r.chat.generation.completion_tokens < 50);
    CHECK(e2.status().counters.cancelled == 1);
    CHECK(e2.status().health == EngineHealth::Ok);
}

TEST_CASE("engine: out of memory makes it DEGRADED until a request succeeds", "[engine]") {
    Engine engine(small_engine());
    engine.load(fixture("qwen3-tiny-q4_0"));
    engine.wait();
    engine.set_context_limit(1 << 30);  // ~4.4 TB of KV cache
    try {
        engine.chat(request(engine, "a", {msg("user", "hi")}));
        FAIL("chat should have thrown");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::OutOfMemory);
    }
    EngineStatus s = engine.status();
    CHECK(s.state == EngineState::Ready);
    CHECK(s.health == EngineHealth::Degraded);
    CHECK(s.health_reason.find("out of memory") != std::string::npos);
    CHECK(s.counters.out_of_memory == 1);
    CHECK(s.counters.failures == 1);
    CHECK(s.memory.kv == 0);
    engine.set_context_limit(0);
    CHECK(engine.status().context_length == 4096);
    engine.set_context_limit(128);
    engine.chat(request(engine, "a", {msg("user", "hi")}));
    s = engine.status();
    CHECK(s.health == EngineHealth::Ok);
    CHECK(s.context_length == 128);
}

TEST_CASE("engine: warm turns reuse the conversation's KV cache", "[engine]") {
    EngineOptions o = small_engine();
    o.session.context_length = 512;
    o.max_conversations = 2;
    Engine engine(o);
    engine.load(fixture("qwen3-tiny-q4_k_m"));
    engine.wait();
    std::string system = "You are a helpful voice assistant.";
    for (int i = 0; i < 20; ++i) system += " Answer briefly and clearly.";
    std::vector<ChatMessage> history = {msg("system", system), msg("user", "What time is it?")};

    const EngineChatResult first = engine.chat(request(engine, "kitchen", history, 4));
    CHECK_FALSE(first.warm);
    CHECK(first.reused_tokens == 0);
    const int32_t first_prompt = first.chat.generation.prompt_tokens;
    CHECK(first_prompt > 100);

    // (The answer is written as the application would store it. With the generated text
    // itself, a tokenization that merges across the header's last "\n" can cost one token.)
    history.push_back(msg("assistant", "It is noon."));
    history.push_back(msg("user", "And the weather?"));
    const EngineChatResult second = engine.chat(request(engine, "kitchen", history, 4));
    CHECK(second.warm);
    // Everything up to the first answer's header is reused; only the answer's re-render
    // and the new user turn are evaluated.
    CHECK(second.reused_tokens >= first_prompt);
    const int32_t evaluated = second.chat.generation.prompt_tokens - second.reused_tokens;
    CHECK(evaluated < 30);
    CHECK(second.chat.generation.reused_prompt_tokens == second.reused_tokens);

    // Another conversation is cold; a third evicts the least recently used (kitchen is
    // used again in between, so "car" goes).
    const EngineChatResult other = engine.chat(request(engine, "car", {msg("user", "Navigate home")}, 2));
    CHECK_FALSE(other.warm);
    history.push_back(msg("assistant", "Sunny."));
    history.push_back(msg("user", "Thanks"));
    CHECK(engine.chat(request(engine, "kitchen", history, 2)).warm);
    engine.chat(request(engine, "garage", {msg("user", "Open the door")}, 2));
    CHECK(engine.status().conversations == 2);
    CHECK_FALSE(engine.chat(request(engine, "car", {msg("user", "Navigate home")}, 2)).warm);

    EngineStatus s = engine.status();
    CHECK(s.counters.reused_tokens >= static_cast<uint64_t>(second.reused_tokens));
    CHECK(s.counters.requests == 6);

    // One-off requests keep nothing.
    engine.chat(request(engine, "", {msg("user", "one-off")}, 2));
    CHECK(engine.status().conversations == 2);

    // trim frees idle sessions; keep_idle keeps the most recent ones.
    const uint64_t kv_before = engine.status().memory.kv;
    CHECK(engine.trim(1) > 0);
    s = engine.status();
    CHECK(s.conversations == 1);
    CHECK(s.memory.kv == kv_before / 2);
    CHECK(engine.trim() > 0);
    s = engine.status();
    CHECK(s.conversations == 0);
    CHECK(s.memory.kv == 0);
    CHECK(s.memory.scratch == 0);
    CHECK(engine.trim() == 0);
}

TEST_CASE("engine: unload cancels running requests and fails queued ones", "[engine]") {
    Engine engine(small_engine());
    engine.load(fixture("qwen3-tiny-q4_0"));
    engine.wait();
    Gate gate;
    std::atomic<int> not_loaded{0};
    EngineChatResult running;
    std::thread a([&] {
        bool first = true;
        running = engine.chat(request(engine, "a", {msg("user", "long")}, 100), [&](const Piece&) {
            if (first) gate.wait();
            first = false;
            return true;
        });
    });
    REQUIRE(eventually([&] { return gate.count() == 1; }));
    std::thread b([&] {
        try {
            engine.chat(request(engine, "b", {msg("user", "queued")}));
        } catch (const Error& e) {
            if (e.code() == ErrorCode::NotLoaded) ++not_loaded;
        }
    });
    REQUIRE(eventually([&] { return engine.status().queued_requests == 1; }));
    std::thread opener([&] {
        std::this_thread::sleep_for(50ms);
        gate.release();
    });
    engine.unload();
    a.join();
    b.join();
    opener.join();
    CHECK(running.chat.generation.finish_reason == FinishReason::Cancelled);
    CHECK(running.chat.generation.completion_tokens < 100);
    CHECK(not_loaded == 1);
    const EngineStatus s = engine.status();
    CHECK(s.state == EngineState::Unloaded);
    CHECK(s.active_requests == 0);
    CHECK(s.queued_requests == 0);
    try {
        engine.chat(request(engine, "a", {msg("user", "x")}));
        FAIL("chat without a model should throw");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::NotLoaded);
    }
}

TEST_CASE("engine: calls from a piece callback that would deadlock are refused", "[engine]") {
    Engine engine(small_engine());
    engine.load(fixture("qwen3-tiny-q4_0"));
    engine.wait();
    ErrorCode code = ErrorCode::Ok;
    engine.chat(request(engine, "a", {msg("user", "x")}, 2), [&](const Piece&) {
        try {
            engine.unload();
        } catch (const Error& e) {
            code = e.code();
        }
        return false;
    });
    CHECK(code == ErrorCode::Busy);
    CHECK(engine.status().state == EngineState::Ready);
}

TEST_CASE("engine: a full queue answers Busy at once, a request that gives up while waiting is removed", "[engine]") {
    EngineOptions o = small_engine();
    o.max_queued = 1;
    Engine engine(o);
    engine.load(fixture("qwen3-tiny-q4_0"));
    engine.wait();
    Gate gate;
    Runner runner{engine, gate, {}, {}};
    std::thread first([&] { runner.run("first", 0); });
    REQUIRE(eventually([&] { return gate.count() == 1; }));

    // A waiting request whose client leaves: it leaves the queue with Cancelled, never runs.
    std::atomic<bool> client_gone{false};
    std::atomic<int> cancelled{0};
    std::thread leaver([&] {
        EngineChatRequest r = request(engine, "leaver", {msg("user", "x")});
        r.cancelled = [&] { return client_gone.load(); };
        try {
            engine.chat(r);
        } catch (const Error& e) {
            if (e.code() == ErrorCode::Cancelled) ++cancelled;
        }
    });
    REQUIRE(eventually([&] { return engine.status().queued_requests == 1; }));
    // The queue holds one: the next request is refused at once, before it waits.
    try {
        engine.chat(request(engine, "third", {msg("user", "y")}));
        FAIL("a request beyond max_queued should be refused");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::Busy);
    }
    client_gone = true;
    leaver.join();
    CHECK(cancelled == 1);
    EngineStatus s = engine.status();
    CHECK(s.queued_requests == 0);
    CHECK(s.counters.requests == 1);  // only "first" ran
    CHECK(s.counters.rejected_busy == 1);
    gate.release();
    first.join();
    // The engine keeps serving.
    CHECK(engine.chat(request(engine, "after", {msg("user", "z")}, 2)).chat.generation.completion_tokens == 2);
    CHECK(engine.status().counters.requests == 2);
}

TEST_CASE("engine: a running request's CancelCheck cancels it within a token", "[engine]") {
    Engine engine(small_engine());
    engine.load(fixture("qwen3-tiny-q4_0"));
    engine.wait();
    EngineChatRequest r = request(engine, "", {msg("user", "long")}, 100);
    std::atomic<int> checks{0};
    r.cancelled = [&] { return ++checks > 3; };
    const EngineChatResult result = engine.chat(r);
    CHECK(result.chat.generation.finish_reason == FinishReason::Cancelled);
    CHECK(result.chat.generation.completion_tokens < 10);
    CHECK(engine.status().counters.cancelled == 1);
}

TEST_CASE("engine: text completions, the prompt check before waiting and the max_tokens cap", "[engine]") {
    Engine engine(small_engine());  // 256 tokens of context
    engine.load(fixture("qwen3-tiny-q4_0"));
    engine.wait();
    EngineTextRequest t;
    t.prompt = "Once upon a time";
    t.generate.max_tokens = 6;
    t.sampler = text_only_sampler(engine);
    const EngineChatResult r = engine.complete(t);
    CHECK(r.chat.prompt == t.prompt);
    CHECK(r.chat.generation.completion_tokens == 6);
    CHECK(r.chat.tool_calls.empty());
    // The same as a Session generating from the same prompt (no chat template applied).
    const Model model = *engine.model();
    SessionOptions so;
    so.context_length = 256;
    so.threads = 1;
    Session session(model, so);
    Sampler sampler(t.sampler);
    CHECK(session.generate(t.prompt, sampler, t.generate).tokens == r.chat.generation.tokens);
    // Prompt tokens instead of text.
    EngineTextRequest by_tokens = t;
    by_tokens.prompt.clear();
    TokenizeOptions to;
    to.add_special = true;
    to.parse_special = true;
    by_tokens.prompt_tokens = model.tokenizer().tokenize(t.prompt, to);
    CHECK(engine.complete(by_tokens).chat.generation.tokens == r.chat.generation.tokens);
    by_tokens.prompt_tokens = {static_cast<TokenId>(model.tokenizer().vocab_size())};
    CHECK_THROWS_AS(engine.prepare(by_tokens), Error);

    // A prompt over the context is refused before it waits; its size is known.
    EngineTextRequest long_prompt = t;
    long_prompt.prompt.clear();
    for (int i = 0; i < 300; ++i) long_prompt.prompt += " hello";
    EngineTicket ticket = engine.prepare(long_prompt);
    CHECK(ticket.prompt_tokens() > 256);
    CHECK(ticket.context_length() == 256);
    try {
        ticket.wait_turn();
        FAIL("the prompt does not fit");
    } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::ContextOverflow);
    }
    CHECK(engine.status().active_requests == 0);
    // max_tokens is lowered to what the context leaves after the prompt.
    EngineTextRequest big = t;
    big.generate.max_tokens = 1'000'000;
    EngineTicket capped = engine.prepare(big);
    CHECK(capped.max_tokens() == 256 - capped.prompt_tokens());
    capped.wait_turn();
    CHECK(engine.status().active_requests == 1);  // the ticket holds its turn ...
    { EngineTicket gone = std::move(capped); }   // ... until it is dropped unrun
    CHECK(engine.status().active_requests == 0);
}

TEST_CASE("engine: one-off requests reuse a spare session by prompt prefix", "[engine]") {
    EngineOptions o = small_engine();
    o.session.context_length = 512;
    o.keep_one_off_sessions = true;
    o.max_conversations = 2;
    Engine engine(o);
    engine.load(fixture("qwen3-tiny-q4_0"));
    engine.wait();
    std::string system = "You are a helpful voice assistant.";
    for (int i = 0; i < 10; ++i) system += " Answer briefly.";
    const EngineChatResult a = engine.chat(request(engine, "", {msg("system", system), msg("user", "Hi")}, 2));
    CHECK(a.reused_tokens == 0);
    EngineStatus s = engine.status();
    CHECK(s.conversations == 0);  // a spare is not a conversation ...
    CHECK(s.memory.kv > 0);       // ... but keeps its KV cache
    const EngineChatResult b = engine.chat(request(engine, "", {msg("system", system), msg("user", "Bye")}, 2));
    CHECK(b.warm);
    CHECK(b.reused_tokens > 40);
    // Conversations take the room of spares first; trim frees spares too.
    engine.chat(request(engine, "x", {msg("user", "1")}, 1));
    engine.chat(request(engine, "y", {msg("user", "2")}, 1));
    CHECK(engine.status().conversations == 2);
    CHECK(engine.status().memory.kv == 2 * s.memory.kv);  // the spare went first
    engine.trim();
    CHECK(engine.status().memory.kv == 0);
}
