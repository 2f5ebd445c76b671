// Reliability: concurrency, faults and hostile input must come back as errors, never as a
// crash (docs/reliability.md). Small models only (stories260K, the tiny Qwen3 fixture):
// every case runs in a few seconds, also under the sanitizers.
#include "core/fault_injection.hpp"
#include "support/test_support.hpp"

#include <genie/error.hpp>
#include <genie/genie.h>
#include <genie/model.hpp>
#include <genie/session.hpp>
#include <genie/tokenizer.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <malloc.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace genie;
namespace fs = std::filesystem;

namespace {

fs::path stories() { return test::testdata_dir() / "models" / "stories260K.gguf"; }
fs::path qwen3_fixture() { return test::fixture_dir() / "qwen3-tiny-q4_0.gguf"; }

SessionOptions small_session(int32_t context = 256) {
    SessionOptions so;
    so.context_length = context;
    so.threads = 1;
    return so;
}

/// A private copy of `from` (tests that change the file on disk).
fs::path copy_model(const fs::path& from, const std::string& tag) {
    const fs::path to = test::temp_path("reliability-" + tag);
    fs::copy_file(from, to, fs::copy_options::overwrite_existing);
    return to;
}

std::vector<TokenId> greedy(Session& s, std::string_view prompt, int n) {
    Sampler sampler;
    GenerateOptions go;
    go.max_tokens = n;
    go.stop_on_eog = false;
    return s.generate(prompt, sampler, go).tokens;
}

ErrorCode error_code_of(const std::function<void()>& f, std::string* message = nullptr) {
    try {
        f();
    } catch (const Error& e) {
        if (message) *message = e.what();
        return e.code();
    }
    return ErrorCode::Ok;
}

bool valid_utf8(std::string_view s) { return sanitize_utf8(s) == s; }

/// Resident set size in bytes (/proc/self/statm).
size_t rss_bytes() {
    std::ifstream in("/proc/self/statm");
    size_t pages = 0, resident = 0;
    in >> pages >> resident;
    return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

struct CancelBeforeGenerate {};  // thrown from a callback to abandon a generation mid-way

}  // namespace

// ---- concurrency ------------------------------------------------------------------------

TEST_CASE("reliability: 8 sessions generate at once on one model with random cancellation and destruction",
          "[reliability][concurrency]") {
    auto model = std::make_unique<Model>(Model::load(stories()));
    const std::vector<std::string> prompts = {"Once upon a time", "The little dog", "Lily and Tom went", "One day"};
    // Reference: each prompt's greedy continuation, computed alone.
    std::vector<std::vector<TokenId>> expected;
    {
        Session s(*model, small_session());
        for (const auto& p : prompts) {
            s.reset();
            expected.push_back(greedy(s, p, 24));
        }
    }

    constexpr int kThreads = 8;
    constexpr int kRounds = 6;
    std::mutex slots_mutex;
    std::vector<Session*> live(kThreads, nullptr);  // what the canceller may cancel (under slots_mutex)
    std::atomic<bool> done{false};
    std::atomic<int> completed{0}, cancelled{0}, abandoned{0}, mismatches{0}, failures{0};
    std::vector<std::string> failure_messages(kThreads);

    std::vector<std::thread> workers;
    for (int t = 0; t < kThreads; ++t) {
        workers.emplace_back([&, t, m = *model] {
            std::mt19937 rng(1234u + static_cast<unsigned>(t));
            try {
                for (int round = 0; round < kRounds; ++round) {
                    auto session = std::make_unique<Session>(m, small_session());
                    const size_t which = rng() % prompts.size();
                    // 0: abandoned by an exception from the callback, 1: runs to the end,
                    // 2-3: open to the canceller. Only the last are registered with it, so
                    // every outcome occurs however fast or slow (TSan: ~10x) the machine is.
                    const int action = static_cast<int>(rng() % 4);
                    const int abandon_at = 1 + static_cast<int>(rng() % 12);
                    if (action >= 2) {
                        std::lock_guard<std::mutex> lock(slots_mutex);
                        live[t] = session.get();
                    }
                    Sampler sampler;
                    GenerateOptions go;
                    go.max_tokens = 24;
                    go.stop_on_eog = false;
                    int pieces = 0;
                    try {
                        const GenerateResult r = session->generate(prompts[which], sampler, go, [&](const Piece& p) {
                            if (!valid_utf8(p.text)) throw std::runtime_error("a piece is not valid UTF-8");
                            if (action == 0 && ++pieces == abandon_at) throw CancelBeforeGenerate{};
                            return true;
                        });
                        if (r.finish_reason == FinishReason::Cancelled) {
                            ++cancelled;
                            // A cancelled generation is a prefix of the full one.
                            const auto& full = expected[which];
                            if (r.tokens.size() > full.size() || !std::equal(r.tokens.begin(), r.tokens.end(), full.begin()))
                                ++mismatches;
                        } else {
                            ++completed;
                            if (r.tokens != expected[which]) ++mismatches;
                        }
                    } catch (const CancelBeforeGenerate&) {
                        ++abandoned;  // unwound out of generate: the session is destroyed right below
                    }
                    {
                        std::lock_guard<std::mutex> lock(slots_mutex);
                        live[t] = nullptr;
                    }
                    session.reset();  // destroyed while the other 7 keep generating
                }
            } catch (const std::exception& e) {
                failure_messages[t] = e.what();
                ++failures;
            }
        });
    }
    // The canceller: cancels random live sessions while they run.
    std::thread canceller([&] {
        std::mt19937 rng(99);
        while (!done.load()) {
            {
                std::lock_guard<std::mutex> lock(slots_mutex);
                if (Session* s = live[rng() % kThreads]) s->cancel();
            }
            std::this_thread::sleep_for(std::chrono::microseconds(200 + rng() % 2000));
        }
    });
    model.reset();  // the workers' copies keep the model alive
    for (auto& w : workers) w.join();
    done = true;
    canceller.join();

    for (const auto& msg : failure_messages) CHECK(msg.empty());
    CHECK(failures.load() == 0);
    CHECK(mismatches.load() == 0);
    CHECK(completed + cancelled + abandoned == kThreads * kRounds);
    INFO("completed " << completed << ", cancelled " << cancelled << ", abandoned " << abandoned);
    CHECK(abandoned.load() > 0);
    CHECK(completed.load() > 0);
}

TEST_CASE("reliability: cancel from another thread and a concurrent second call through the C ABI",
          "[reliability][concurrency][capi]") {
    genie_model* model = nullptr;
    REQUIRE(genie_model_load(&model, stories().string().c_str(), nullptr) == GENIE_OK);
    genie_session_options so = GENIE_SESSION_OPTIONS_INIT;
    so.context_length = 256;
    so.threads = 1;
    genie_session* session = nullptr;
    REQUIRE(genie_session_create(&session, model, &so) == GENIE_OK);

    genie_chat_turn turn{"user", "Tell me a story", std::strlen("Tell me a story")};
    genie_chat_request rq = GENIE_CHAT_REQUEST_INIT;
    rq.messages = &turn;
    rq.n_messages = 1;
    rq.max_tokens = 200;
    struct State {
        genie_session* session;
        std::atomic<int> pieces{0};
        genie_status second_call = GENIE_OK;
        const genie_chat_request* rq;
    } state{session, {0}, GENIE_OK, &rq};
    auto on_piece = [](void* user, genie_piece_kind, const char*, size_t) -> int {
        auto* st = static_cast<State*>(user);
        if (st->pieces.fetch_add(1) == 2) {
            // A second call on the same session from another thread while this one runs: BUSY.
            std::thread other([st] {
                genie_chat_result r2 = GENIE_CHAT_RESULT_INIT;
                st->second_call = genie_session_chat(st->session, st->rq, nullptr, nullptr, &r2);
                genie_chat_result_clear(&r2);
                genie_session_cancel(st->session);  // and a cancel, which must end the first
            });
            other.join();
        }
        return 0;
    };
    genie_chat_result result = GENIE_CHAT_RESULT_INIT;
    REQUIRE(genie_session_chat(session, &rq, on_piece, &state, &result) == GENIE_OK);
    CHECK(state.second_call == GENIE_BUSY);
    CHECK(result.finish_reason == GENIE_FINISH_CANCELLED);
    CHECK(result.completion_tokens < 200);
    genie_chat_result_clear(&result);
    // Usable afterwards.
    rq.max_tokens = 4;
    REQUIRE(genie_session_chat(session, &rq, nullptr, nullptr, &result) == GENIE_OK);
    CHECK(result.finish_reason != GENIE_FINISH_ERROR);
    genie_chat_result_clear(&result);
    genie_session_free(session);
    genie_model_free(model);
}

// ---- the model file changing on disk ---------------------------------------------------

TEST_CASE("reliability: a mapped model file truncated after load gives Io errors, not SIGBUS",
          "[reliability][fault]") {
    const fs::path path = copy_model(stories(), "truncate");
    const Model model = Model::load(path);
    Session before(model, small_session());
    const auto reference = greedy(before, "Once upon a time", 8);

    fs::resize_file(path, fs::file_size(path) / 2);
    std::string message;
    CHECK(error_code_of([&] { Session s(model, small_session()); }, &message) == ErrorCode::Io);
    CHECK_THAT(message, Catch::Contains("model file changed on disk"));
    // A session made before the change: its next generate fails before reading a weight.
    before.reset();
    CHECK(error_code_of([&] { greedy(before, "Once upon a time", 8); }, &message) == ErrorCode::Io);
    CHECK_THAT(message, Catch::Contains("changed on disk"));
    // Through the C ABI: a status, nothing thrown.
    genie_model* cm = nullptr;
    const fs::path path2 = copy_model(stories(), "truncate-c");
    REQUIRE(genie_model_load(&cm, path2.string().c_str(), nullptr) == GENIE_OK);
    fs::resize_file(path2, 4096);
    genie_session* cs = nullptr;
    CHECK(genie_session_create(&cs, cm, nullptr) == GENIE_IO);
    CHECK(cs == nullptr);
    CHECK_THAT(std::string(genie_last_error()), Catch::Contains("changed on disk"));
    genie_model_free(cm);
    fs::remove(path);
    fs::remove(path2);
    (void)reference;
}

TEST_CASE("reliability: a mapped model file rewritten in place is detected, one replaced by rename is harmless",
          "[reliability][fault]") {
    const fs::path path = copy_model(stories(), "rewrite");
    {
        const Model model = Model::load(path);
        Session s(model, small_session());
        const auto reference = greedy(s, "Once upon a time", 8);
        // Same size, new bytes and a new modification time.
        std::vector<uint8_t> bytes = test::read_file_bytes(path);
        for (size_t i = bytes.size() / 2; i < bytes.size(); ++i) bytes[i] ^= 0x5a;
        {
            std::fstream out(path, std::ios::in | std::ios::out | std::ios::binary);
            out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        }
        fs::last_write_time(path, fs::last_write_time(path) + std::chrono::seconds(5));
        s.reset();
        std::string message;
        CHECK(error_code_of([&] { greedy(s, "Once upon a time", 8); }, &message) == ErrorCode::Io);
        CHECK_THAT(message, Catch::Contains("changed on disk"));
        (void)reference;
    }
    {
        fs::copy_file(stories(), path, fs::copy_options::overwrite_existing);
        const Model model = Model::load(path);
        Session s(model, small_session());
        const auto reference = greedy(s, "Once upon a time", 8);
        // Replace by rename (how installers and `cp --remove-destination`-style tools update):
        // the loaded model keeps the old inode, so it is unaffected.
        const fs::path other = test::temp_path("reliability-other");
        fs::copy_file(test::testdata_dir() / "models" / "llama-2-tiny-random.gguf", other);
        fs::rename(other, path);
        s.reset();
        CHECK(greedy(s, "Once upon a time", 8) == reference);
        Session s2(model, small_session());
        CHECK(greedy(s2, "Once upon a time", 8) == reference);
    }
    fs::remove(path);
}

TEST_CASE("reliability: use_mmap false reads the weights into memory, immune to the file changing",
          "[reliability][fault]") {
    const fs::path path = copy_model(stories(), "nommap");
    ModelOptions mo;
    mo.use_mmap = false;
    const Model model = Model::load(path, mo);
    Session s(model, small_session());
    const auto reference = greedy(s, "Once upon a time", 12);
    {
        const Model mapped = Model::load(stories());
        Session m(mapped, small_session());
        CHECK(greedy(m, "Once upon a time", 12) == reference);  // same tokens as the mapped load
    }
    fs::resize_file(path, 100);
    fs::last_write_time(path, fs::last_write_time(path) + std::chrono::seconds(5));
    s.reset();
    CHECK(greedy(s, "Once upon a time", 12) == reference);
    Session s2(model, small_session());
    CHECK(greedy(s2, "Once upon a time", 12) == reference);
    fs::remove(path);
    s2.reset();
    CHECK(greedy(s2, "Once upon a time", 12) == reference);

    // The same through the C ABI (genie_model_options version 2): a session made after the
    // file was truncated works; the mapped default fails with GENIE_IO instead.
    const fs::path path_c = copy_model(stories(), "nommap-c");
    genie_model_options co = GENIE_MODEL_OPTIONS_INIT;
    CHECK(co.use_mmap == 1);
    co.use_mmap = 0;
    genie_model* cm = nullptr;
    REQUIRE(genie_model_load(&cm, path_c.string().c_str(), &co) == GENIE_OK);
    fs::resize_file(path_c, 100);
    genie_session* cs = nullptr;
    CHECK(genie_session_create(&cs, cm, nullptr) == GENIE_OK);
    genie_session_free(cs);
    genie_model_free(cm);
    // Over a tiny memory budget: GENIE_OUT_OF_MEMORY before anything is allocated.
    co.use_mmap = 1;
    co.memory_budget_bytes = 4096;
    CHECK(genie_model_load(&cm, stories().c_str(), &co) == GENIE_OUT_OF_MEMORY);
    CHECK(cm == nullptr);
    co.memory_budget_bytes = 0;
    co.use_mmap = 2;
    CHECK(genie_model_load(&cm, stories().c_str(), &co) == GENIE_INVALID_ARGUMENT);
    CHECK_THAT(std::string(genie_last_error()), Catch::Contains("use_mmap"));
    CHECK(cm == nullptr);
    fs::remove(path_c);
}

// ---- memory ------------------------------------------------------------------------------

TEST_CASE("reliability: an out-of-memory KV allocation is an OutOfMemory error and the model stays usable",
          "[reliability][fault]") {
    const Model model = Model::load(stories());
    detail::set_alloc_failure_for_testing(1);
    std::string message;
    CHECK(error_code_of([&] { Session s(model, small_session()); }, &message) == ErrorCode::OutOfMemory);
    CHECK_THAT(message, Catch::Contains("KV cache"));
    Session ok(model, small_session());  // the hook disarmed itself
    CHECK(greedy(ok, "Once upon a time", 4).size() == 4);

    // Through the C ABI: GENIE_OUT_OF_MEMORY, *out stays NULL, then a session works.
    genie_model* cm = nullptr;
    REQUIRE(genie_model_load(&cm, stories().string().c_str(), nullptr) == GENIE_OK);
    genie_session* cs = nullptr;
    detail::set_alloc_failure_for_testing(1);
    CHECK(genie_session_create(&cs, cm, nullptr) == GENIE_OUT_OF_MEMORY);
    CHECK(cs == nullptr);
    CHECK_THAT(std::string(genie_last_error()), Catch::Contains("out of memory"));
    REQUIRE(genie_session_create(&cs, cm, nullptr) == GENIE_OK);
    genie_session_free(cs);
    genie_model_free(cm);
    detail::set_alloc_failure_for_testing(0);
}

TEST_CASE("reliability: a load over the address-space limit is an OutOfMemory error, mapped or read",
          "[reliability][fault]") {
    if (GENIE_TEST_SANITIZED) {
        WARN("skipped under a sanitizer: its shadow memory needs more address space than RLIMIT_AS allows");
        return;
    }
    const fs::path big = test::fixture_dir() / "llama-tiny-f32.gguf";  // ~76 MB
    REQUIRE(fs::exists(big));
    // In a child process: the limit would otherwise apply to the whole test run.
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        int code = 0;
        // Address space in use now + 48 MB: the model does not fit.
        std::ifstream status("/proc/self/status");
        std::string line;
        size_t vm_kb = 0;
        while (std::getline(status, line))
            if (line.rfind("VmSize:", 0) == 0) vm_kb = std::stoul(line.substr(7));
        const rlim_t limit = static_cast<rlim_t>(vm_kb) * 1024 + (48u << 20);
        const rlimit rl{limit, limit};
        if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(10);
        for (bool mmap_weights : {true, false}) {
            ModelOptions mo;
            mo.use_mmap = mmap_weights;
            try {
                Model m = Model::load(big, mo);
                code |= mmap_weights ? 1 : 2;  // loaded: the limit did not bite
            } catch (const Error& e) {
                if (e.code() != ErrorCode::OutOfMemory) code |= mmap_weights ? 4 : 8;
            } catch (...) {
                code |= 16;
            }
        }
        // A small model still loads and runs under the limit.
        try {
            const Model small = Model::load(stories());
            Session s(small, small_session());
            if (greedy(s, "Once", 2).size() != 2) code |= 32;
        } catch (...) {
            code |= 64;
        }
        std::fflush(nullptr);
        _exit(code);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));  // not killed by a signal
    CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("reliability: loading and unloading a model 100 times returns RSS to its baseline",
          "[reliability][leak]") {
    if (GENIE_TEST_SANITIZED) {
        WARN("skipped under a sanitizer: its allocator quarantine keeps freed memory resident (LSan checks leaks there)");
        return;
    }
    auto cycle = [](bool use_mmap) {
        ModelOptions mo;
        mo.use_mmap = use_mmap;
        const Model m = Model::load(stories(), mo);
        Session s(m, small_session(128));
        if (greedy(s, "Once", 2).size() != 2) throw std::runtime_error("generation failed");
    };
    for (int i = 0; i < 5; ++i) cycle(i % 2 == 0);  // warm-up: allocator arenas, thread-locals, caches
    malloc_trim(0);
    const size_t baseline = rss_bytes();
    for (int i = 0; i < 100; ++i) cycle(i % 2 == 0);
    malloc_trim(0);
    const size_t after = rss_bytes();
    const double grown_mb = (static_cast<double>(after) - static_cast<double>(baseline)) / (1024.0 * 1024.0);
    INFO("RSS baseline " << baseline / 1024 << " KiB, after 100 load/unload cycles " << after / 1024 << " KiB");
    // Each use_mmap=false cycle holds the 1.1 MB of weights in anonymous memory plus the
    // vocabulary, a session and its KV cache (~1.5 MB in all): losing one cycle's memory 50
    // times would add ~60 MB. 4 MB leaves room for allocator noise only.
    CHECK(grown_mb < 4.0);
}

// ---- hostile chat input ------------------------------------------------------------------

TEST_CASE("reliability: invalid UTF-8 and NUL bytes in chat messages are passed through, never a crash",
          "[reliability][input]") {
    const Model model = Model::load(stories());
    Session s(model, small_session());
    Sampler sampler;
    ChatOptions co;
    co.generate.max_tokens = 6;
    const std::string bad = "bad \xc3\x28 \xff\xfe lone \x80 cut \xe2\x82";
    const std::string nul = std::string("a\0b\0\0c", 6);
    std::vector<ChatMessage> messages{{"user", bad}, {"assistant", nul}, {"user", "and?"}};
    ChatResult r = s.chat(messages, sampler, co, [](const Piece& p) {
        if (!valid_utf8(p.text)) throw std::runtime_error("piece is not valid UTF-8");
        return true;
    });
    CHECK(r.prompt.find(bad) != std::string::npos);  // rendered as given ...
    CHECK(r.prompt.find(nul) != std::string::npos);
    CHECK(valid_utf8(r.generation.text));  // ... and the output is always valid UTF-8
    CHECK(r.generation.completion_tokens <= 6);

    // The C ABI: the same bytes (content_len covers the NULs) give GENIE_OK.
    genie_model* cm = nullptr;
    REQUIRE(genie_model_load(&cm, stories().string().c_str(), nullptr) == GENIE_OK);
    genie_session* cs = nullptr;
    genie_session_options so = GENIE_SESSION_OPTIONS_INIT;
    so.context_length = 256;
    so.threads = 1;
    REQUIRE(genie_session_create(&cs, cm, &so) == GENIE_OK);
    const genie_chat_turn turns[] = {{"user", bad.data(), bad.size()}, {"assistant", nul.data(), nul.size()},
                                     {"user", "and?", 4}};
    genie_chat_request rq = GENIE_CHAT_REQUEST_INIT;
    rq.messages = turns;
    rq.n_messages = 3;
    rq.max_tokens = 6;
    genie_chat_result result = GENIE_CHAT_RESULT_INIT;
    CHECK(genie_session_chat(cs, &rq, nullptr, nullptr, &result) == GENIE_OK);
    CHECK(result.finish_reason != GENIE_FINISH_ERROR);
    CHECK(valid_utf8(std::string_view(result.text, result.text_len)));
    genie_chat_result_clear(&result);
    // Invalid UTF-8 in a role (a C string) too.
    const genie_chat_turn bad_role[] = {{"us\xc3\x28r", "hi", 2}};
    rq.messages = bad_role;
    rq.n_messages = 1;
    const genie_status st = genie_session_chat(cs, &rq, nullptr, nullptr, &result);
    CHECK((st == GENIE_OK || st == GENIE_INVALID_ARGUMENT));
    genie_chat_result_clear(&result);
    genie_session_free(cs);
    genie_model_free(cm);
}

TEST_CASE("reliability: a 1 MB message is a clean ContextOverflow and the session stays usable",
          "[reliability][input]") {
    REQUIRE(fs::exists(qwen3_fixture()));
    const Model model = Model::load(qwen3_fixture());
    Session s(model, small_session(512));
    Sampler sampler;
    ChatOptions co;
    co.generate.max_tokens = 4;
    std::string huge;
    huge.reserve(1 << 20);
    while (huge.size() < (1u << 20)) huge += "All work and no play makes Jack a dull boy. ";
    huge.resize(1 << 20);
    std::string message;
    const std::vector<ChatMessage> big{{"user", huge}};
    CHECK(error_code_of([&] { s.chat(big, sampler, co); }, &message) == ErrorCode::ContextOverflow);
    CHECK(s.cached_tokens().empty());  // nothing was evaluated
    const std::vector<ChatMessage> small{{"user", "Hello"}};
    const ChatResult r = s.chat(small, sampler, co);
    CHECK(r.generation.completion_tokens <= 4);
    CHECK(r.generation.prompt_tokens > 0);

    // The same through the C ABI.
    genie_model* cm = nullptr;
    REQUIRE(genie_model_load(&cm, qwen3_fixture().string().c_str(), nullptr) == GENIE_OK);
    genie_session* cs = nullptr;
    genie_session_options so = GENIE_SESSION_OPTIONS_INIT;
    so.context_length = 512;
    so.threads = 1;
    REQUIRE(genie_session_create(&cs, cm, &so) == GENIE_OK);
    const genie_chat_turn turn{"user", huge.data(), huge.size()};
    genie_chat_request rq = GENIE_CHAT_REQUEST_INIT;
    rq.messages = &turn;
    rq.n_messages = 1;
    rq.max_tokens = 4;
    genie_chat_result result = GENIE_CHAT_RESULT_INIT;
    CHECK(genie_session_chat(cs, &rq, nullptr, nullptr, &result) == GENIE_CONTEXT_OVERFLOW);
    CHECK(result.finish_reason == GENIE_FINISH_ERROR);
    const genie_chat_turn hello{"user", "Hello", 5};
    rq.messages = &hello;
    CHECK(genie_session_chat(cs, &rq, nullptr, nullptr, &result) == GENIE_OK);
    genie_chat_result_clear(&result);
    genie_session_free(cs);
    genie_model_free(cm);
}

TEST_CASE("reliability: a context overflow in the middle of a multi-turn chat leaves the session usable",
          "[reliability][input]") {
    const Model model = Model::load(stories());
    Session s(model, small_session(160));
    Sampler sampler;
    ChatOptions co;
    co.generate.max_tokens = 8;
    std::vector<ChatMessage> conversation;
    bool overflowed = false;
    for (int turn = 0; turn < 40 && !overflowed; ++turn) {
        conversation.push_back({"user", "Tell me more about the little cat and the big dog, turn " + std::to_string(turn)});
        const std::vector<TokenId> cached_before(s.cached_tokens().begin(), s.cached_tokens().end());
        try {
            const ChatResult r = s.chat(conversation, sampler, co);
            conversation.push_back({"assistant", r.generation.text});
        } catch (const Error& e) {
            REQUIRE(e.code() == ErrorCode::ContextOverflow);
            overflowed = true;
            // "the cache is left as it was"
            CHECK(std::vector<TokenId>(s.cached_tokens().begin(), s.cached_tokens().end()) == cached_before);
        }
    }
    REQUIRE(overflowed);
    // A generation may also run into the end of the context: finish reason Length, no error.
    s.reset();
    const std::vector<ChatMessage> fresh{{"user", "Hello again"}};
    const ChatResult r = s.chat(fresh, sampler, co);
    CHECK(r.generation.prompt_tokens > 0);
    CHECK(r.generation.reused_prompt_tokens == 0);

    // C ABI: CONTEXT_OVERFLOW mid-conversation, then reset and continue.
    genie_model* cm = nullptr;
    REQUIRE(genie_model_load(&cm, stories().string().c_str(), nullptr) == GENIE_OK);
    genie_session* cs = nullptr;
    genie_session_options so = GENIE_SESSION_OPTIONS_INIT;
    so.context_length = 160;
    so.threads = 1;
    REQUIRE(genie_session_create(&cs, cm, &so) == GENIE_OK);
    std::vector<std::string> texts;
    genie_status st = GENIE_OK;
    for (int turn = 0; turn < 40 && st == GENIE_OK; ++turn) {
        texts.push_back("Tell me more about the little cat and the big dog, turn " + std::to_string(turn));
        std::vector<genie_chat_turn> turns;
        for (size_t i = 0; i < texts.size(); ++i)
            turns.push_back({i % 2 ? "assistant" : "user", texts[i].data(), texts[i].size()});
        genie_chat_request rq = GENIE_CHAT_REQUEST_INIT;
        rq.messages = turns.data();
        rq.n_messages = turns.size();
        rq.max_tokens = 8;
        genie_chat_result result = GENIE_CHAT_RESULT_INIT;
        st = genie_session_chat(cs, &rq, nullptr, nullptr, &result);
        if (st == GENIE_OK) texts.emplace_back(result.text, result.text_len);
        genie_chat_result_clear(&result);
    }
    CHECK(st == GENIE_CONTEXT_OVERFLOW);
    REQUIRE(genie_session_reset(cs) == GENIE_OK);
    const genie_chat_turn hello{"user", "Hello", 5};
    genie_chat_request rq = GENIE_CHAT_REQUEST_INIT;
    rq.messages = &hello;
    rq.n_messages = 1;
    rq.max_tokens = 4;
    genie_chat_result result = GENIE_CHAT_RESULT_INIT;
    CHECK(genie_session_chat(cs, &rq, nullptr, nullptr, &result) == GENIE_OK);
    genie_chat_result_clear(&result);
    genie_session_free(cs);
    genie_model_free(cm);
}
