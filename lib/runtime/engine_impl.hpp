// Engine's state, shared by lib/runtime/engine.cpp (the model's lifecycle, status, the
// watchdog) and lib/runtime/engine_request.cpp (requests: prepare, admission, generation).
// Admission rules live in runtime/admission, kept sessions in runtime/conversation_store.
#pragma once

#include "runtime/admission.hpp"
#include "runtime/conversation_store.hpp"

#include <genie/constraint.hpp>
#include <genie/engine.hpp>
#include <genie/error.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace genie {

namespace runtime {
using Clock = std::chrono::steady_clock;
int64_t now_ns();
double ms_between(Clock::time_point a, Clock::time_point b);
/// Gives freed heap pages back to the OS (glibc keeps them otherwise).
void release_heap() noexcept;
/// Which engine's piece (or load progress) callback runs on this thread: load, swap,
/// unload, wait and chat from there are refused with Busy.
extern thread_local const void* t_in_callback;
}  // namespace runtime

struct Engine::Impl {
    using Clock = runtime::Clock;

    EngineOptions opts;
    mutable std::mutex mu;  // everything below
    std::condition_variable cv;
    std::mutex lifecycle_mu;  // serializes load/swap/unload/destruction (never taken by the loader)

    // ---- the model
    std::optional<Model> model;
    std::string model_path;
    uint64_t gen = 0;  // bumped whenever the serving model changes

    // ---- loading
    std::thread loader;
    bool loading = false;
    std::string loading_path;
    std::atomic<float> progress{0.0f};
    std::atomic<bool> cancel_load{false};
    bool last_load_failed = false;
    ErrorCode last_load_code = ErrorCode::Ok;
    std::string last_load_message;

    // ---- health
    bool failed = false;        // the last load failed and nothing serves
    std::string swap_failure;   // Degraded: a swap failed, the old model serves
    std::string oom_reason;     // Degraded: out of memory since the last success
    std::string device_reason;  // Degraded: device error since the last success
    ErrorCode last_error_code = ErrorCode::Ok;
    std::string last_error;

    // ---- conversations and admission
    runtime::ConversationStore store;
    runtime::Admission admission;
    std::vector<std::shared_ptr<runtime::Conversation>> active;
    int32_t ctx_limit = 0;

    // ---- JSON constraints of the current model (built outside the lock)
    uint64_t constraint_gen = UINT64_MAX;
    std::map<std::string, std::shared_ptr<const JsonConstraint>, std::less<>> schemas;  // constraint_for's cache

    EngineCounters counters;

    // ---- watchdog
    std::thread watchdog;
    bool stopping = false;

    explicit Impl(const EngineOptions& o);

    // ---- helpers (lock held)
    int32_t effective_ctx() const {
        if (ctx_limit > 0) return ctx_limit;
        return model ? std::min(model->info().n_ctx_train, 4096) : 0;
    }
    void record_error(ErrorCode code, const std::string& message);
    /// A request that ended with an error: counted and recorded (takes the lock).
    void count_failure(ErrorCode code, const std::string& message) {
        std::lock_guard<std::mutex> lk(mu);
        ++counters.failures;
        record_error(code, message);
    }
    /// Whether an idle session can serve the next request (same model, same context size).
    bool usable(const runtime::Conversation& c) const {
        return model && c.model_gen == gen && c.session && c.session->context_length() == effective_ctx();
    }
    void cancel_active();

    // ---- requests (engine_request.cpp)

    /// The serving model and what a request prepared on it needs.
    struct Snapshot {
        Model model;
        uint64_t gen;
        int32_t ctx;
    };
    Snapshot snapshot() const;

    struct Turn {
        std::shared_ptr<runtime::Conversation> conv;
        Model model;
        uint64_t gen;
        int32_t ctx;
        bool warm;
        Clock::time_point admitted;
    };
    /// Waits for a turn (priority, then arrival; Busy when the queue is full, Cancelled when
    /// `cancelled` fires), then marks the conversation in use. `id` "" = a one-off request,
    /// which takes the spare session that best matches `prompt`.
    Turn acquire(const std::string& id, int32_t priority, std::span<const TokenId> prompt,
                 const CancelCheck& cancelled);
    /// Ends a turn: the conversation becomes idle (its session freed when it cannot serve
    /// again or `drop_session`), waiters are woken.
    void release(Turn& turn, bool drop_session);
    /// The conversation's session, created (outside the lock) when it has none.
    Session& session_for(Turn& turn);
    std::shared_ptr<const JsonConstraint> constraint_for(const Model& model, uint64_t model_gen,
                                                         const EngineChatRequest& request);

    // ---- loading and the watchdog (engine.cpp)
    void start_load(const std::filesystem::path& path, const ModelOptions& options);
    void run_load(const std::filesystem::path& path, ModelOptions options);
    void wait_load(std::unique_lock<std::mutex>& lk) {
        if (loading) cv.wait(lk, [&] { return !loading; });
    }
    void throw_if_load_failed() const {
        if (last_load_failed) throw Error(last_load_code, last_load_message);
    }
    void watchdog_loop();
};

}  // namespace genie
