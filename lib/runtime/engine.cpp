// Engine: one model's lifecycle (background load, swap, unload), admission of chat
// requests by priority, warm conversations (a kept Session per conversation id, LRU),
// memory accounting, and health with a watchdog thread. docs/engine.md.
#include "core/system_memory.hpp"
#include "model/model_impl.hpp"

#include <genie/constraint.hpp>
#include <genie/engine.hpp>
#include <genie/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace genie {

const char* engine_state_name(EngineState state) noexcept {
    switch (state) {
        case EngineState::Unloaded: return "UNLOADED";
        case EngineState::Loading: return "LOADING";
        case EngineState::Ready: return "READY";
        case EngineState::Busy: return "BUSY";
        case EngineState::Failed: return "FAILED";
    }
    return "UNKNOWN";
}

const char* engine_health_name(EngineHealth health) noexcept {
    switch (health) {
        case EngineHealth::Ok: return "OK";
        case EngineHealth::Degraded: return "DEGRADED";
        case EngineHealth::Failed: return "FAILED";
    }
    return "UNKNOWN";
}

namespace {

using Clock = std::chrono::steady_clock;

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}
double ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

/// Resident set of this process in bytes (0 when /proc is not there).
uint64_t process_rss() {
    std::ifstream in("/proc/self/statm");
    uint64_t size = 0, resident = 0;
    if (!(in >> size >> resident)) return 0;
    const long page = sysconf(_SC_PAGESIZE);
    return resident * static_cast<uint64_t>(page > 0 ? page : 4096);
}

/// Gives freed heap pages back to the OS (glibc keeps them otherwise).
void release_heap() noexcept {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

struct Conversation {
    std::string id;  // "" for a one-off request
    std::unique_ptr<Session> session;
    uint64_t model_gen = 0;
    bool in_use = false;
    uint64_t last_used = 0;    // LRU tick
    uint64_t kv_bytes = 0;     // of `session`, recorded under the engine's lock
    uint64_t scratch_bytes = 0;
    std::atomic<int64_t> last_progress_ns{0};
    std::atomic<bool> cancel{false};
    bool stuck_reported = false;
};

/// A no-op sampler stage that marks the conversation alive each time a token is sampled
/// (the watchdog's heartbeat; pieces alone miss tokens that produce no text yet).
class Heartbeat final : public SamplerStage {
public:
    explicit Heartbeat(std::shared_ptr<Conversation> c) : conv_(std::move(c)) {}
    void apply(std::span<float>) override { conv_->last_progress_ns.store(now_ns()); }

private:
    std::shared_ptr<Conversation> conv_;
};

struct Ticket {
    int32_t priority = 0;
    uint64_t seq = 0;
    std::string conversation;
};

// Which engine's piece callback runs on this thread (re-entrancy guard).
thread_local const void* t_in_callback = nullptr;

}  // namespace

struct Engine::Impl {
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
    std::map<std::string, std::shared_ptr<Conversation>, std::less<>> convs;
    std::vector<std::shared_ptr<Conversation>> active;
    std::vector<const Ticket*> waiting;
    uint64_t next_seq = 0;
    uint64_t tick = 0;
    int32_t ctx_limit = 0;

    // ---- JSON constraints of the current model (built outside the lock)
    uint64_t constraint_gen = UINT64_MAX;
    std::map<std::string, std::shared_ptr<const JsonConstraint>, std::less<>> schemas;  // constraint_for's cache

    EngineCounters counters;

    // ---- watchdog
    std::thread watchdog;
    bool stopping = false;

    explicit Impl(const EngineOptions& o) : opts(o) {
        if (opts.max_conversations < 1) throw Error(ErrorCode::InvalidArgument, "max_conversations must be >= 1");
        if (opts.max_concurrent < 1) throw Error(ErrorCode::InvalidArgument, "max_concurrent must be >= 1");
        if (opts.session.context_length < 0) throw Error(ErrorCode::InvalidArgument, "context_length must be >= 0");
        if (opts.session.batch_size <= 0) throw Error(ErrorCode::InvalidArgument, "batch_size must be > 0");
        if (opts.session.threads < 0) throw Error(ErrorCode::InvalidArgument, "threads must be >= 0");
        ctx_limit = opts.session.context_length;
        if (opts.watchdog_timeout_s > 0) watchdog = std::thread([this] { watchdog_loop(); });
    }

    // ---- helpers (lock held) ------------------------------------------------------------

    int32_t effective_ctx() const {
        if (ctx_limit > 0) return ctx_limit;
        return model ? std::min(model->info().n_ctx_train, 4096) : 0;
    }

    void record_error(ErrorCode code, const std::string& message) {
        last_error_code = code;
        last_error = message;
        if (code == ErrorCode::OutOfMemory) {
            ++counters.out_of_memory;
            oom_reason = "out of memory: " + message;
        } else if (code == ErrorCode::Device) {
            device_reason = "device error: " + message;
        }
    }

    bool better(const Ticket& a, const Ticket& b) const {
        return a.priority != b.priority ? a.priority > b.priority : a.seq < b.seq;
    }
    bool eligible(const Ticket& t) const {
        if (t.conversation.empty()) return true;
        auto it = convs.find(t.conversation);
        return it == convs.end() || !it->second->in_use;
    }
    bool my_turn(const Ticket& t) const {
        if (static_cast<int32_t>(active.size()) >= opts.max_concurrent || !eligible(t)) return false;
        for (const Ticket* w : waiting)
            if (w != &t && eligible(*w) && better(*w, t)) return false;
        return true;
    }

    /// Drops idle sessions that cannot serve again (another model, another context size),
    /// moving them to `out` so they are freed after the lock is released.
    void collect_unusable(std::vector<std::unique_ptr<Session>>& out) {
        const int32_t ctx = effective_ctx();
        for (auto& [id, c] : convs)
            if (!c->in_use && c->session && (c->model_gen != gen || !model || c->session->context_length() != ctx)) {
                out.push_back(std::move(c->session));
                c->kv_bytes = c->scratch_bytes = 0;
            }
    }

    // ---- admission ----------------------------------------------------------------------

    struct Turn {
        std::shared_ptr<Conversation> conv;
        Model model;
        uint64_t gen;
        int32_t ctx;
        bool warm;
        Clock::time_point admitted;
    };

    /// Waits for a turn (priority, then arrival), then marks the conversation in use.
    /// `id` "" = a one-off conversation.
    Turn acquire(const std::string& id, int32_t priority, bool counted = true) {
        std::vector<std::unique_ptr<Session>> to_free;
        std::unique_lock<std::mutex> lk(mu);
        if (!model)
            throw Error(ErrorCode::NotLoaded, loading ? "the model is still loading" : "no model is loaded");
        Ticket ticket{priority, next_seq++, id};
        waiting.push_back(&ticket);
        cv.wait(lk, [&] { return !model || stopping || my_turn(ticket); });
        waiting.erase(std::find(waiting.begin(), waiting.end(), &ticket));
        if (!model || stopping) {
            cv.notify_all();
            throw Error(ErrorCode::NotLoaded, "the model was unloaded while the request waited for its turn");
        }
        std::shared_ptr<Conversation> conv;
        if (!id.empty()) {
            auto it = convs.find(id);
            if (it != convs.end()) conv = it->second;
        }
        const int32_t ctx = effective_ctx();
        if (conv && conv->session && (conv->model_gen != gen || conv->session->context_length() != ctx)) {
            to_free.push_back(std::move(conv->session));
            conv->kv_bytes = conv->scratch_bytes = 0;
        }
        if (!conv) {
            conv = std::make_shared<Conversation>();
            conv->id = id;
            if (!id.empty()) {
                // Evict least recently used idle conversations to make room.
                while (static_cast<int32_t>(convs.size()) >= opts.max_conversations) {
                    auto victim = convs.end();
                    for (auto it = convs.begin(); it != convs.end(); ++it)
                        if (!it->second->in_use && (victim == convs.end() || it->second->last_used < victim->second->last_used))
                            victim = it;
                    if (victim == convs.end()) break;  // all in use: exceed the count for now
                    if (victim->second->session) to_free.push_back(std::move(victim->second->session));
                    convs.erase(victim);
                }
                convs.emplace(id, conv);
            }
        }
        conv->in_use = true;
        conv->model_gen = gen;
        conv->cancel.store(false);
        conv->stuck_reported = false;
        conv->last_progress_ns.store(now_ns());
        active.push_back(conv);
        if (counted) ++counters.requests;
        Turn turn{conv, *model, gen, ctx, conv->session != nullptr, Clock::now()};
        lk.unlock();
        to_free.clear();
        return turn;
    }

    /// Ends a turn: the conversation becomes idle (or its session is freed when it cannot
    /// serve again), waiters are woken.
    void release(Turn& turn, bool drop_session) {
        std::unique_ptr<Session> to_free;
        {
            std::lock_guard<std::mutex> lk(mu);
            Conversation& c = *turn.conv;
            active.erase(std::find(active.begin(), active.end(), turn.conv));
            c.in_use = false;
            c.last_used = ++tick;
            auto it = c.id.empty() ? convs.end() : convs.find(c.id);
            const bool kept = it != convs.end() && it->second == turn.conv;
            if (c.session && (drop_session || !kept || !model || c.model_gen != gen ||
                              c.session->context_length() != effective_ctx())) {
                to_free = std::move(c.session);
                c.kv_bytes = c.scratch_bytes = 0;
            } else if (c.session) {
                c.kv_bytes = c.session->kv_bytes();
                c.scratch_bytes = c.session->scratch_bytes();
            }
            cv.notify_all();
        }
        to_free.reset();
    }

    /// The conversation's session, created (outside the lock) when it has none.
    Session& session_for(Turn& turn) {
        Conversation& c = *turn.conv;
        if (c.session) return *c.session;
        SessionOptions so = opts.session;
        so.context_length = turn.ctx;
        if (opts.check_available_memory) {
            const ModelInfo& info = turn.model.info();
            const double element = so.kv_type == KvType::F32 ? 4.0 : so.kv_type == KvType::F16 ? 2.0 : 34.0 / 32.0;
            const double need = 2.0 * info.n_layer * static_cast<double>(turn.ctx) * info.n_head_kv * info.head_dim * element;
            const uint64_t avail = core::read_system_memory().usable();  // 0: unknown
            if (avail > 0 && need > static_cast<double>(avail))
                throw Error(ErrorCode::OutOfMemory,
                            fmt::format("a KV cache of {} tokens needs {:.0f} bytes but only {} bytes are available; "
                                        "lower the context limit or trim()",
                                        turn.ctx, need, avail));
        }
        auto session = std::make_unique<Session>(turn.model, so);
        std::lock_guard<std::mutex> lk(mu);
        c.kv_bytes = session->kv_bytes();
        c.scratch_bytes = session->scratch_bytes();
        c.session = std::move(session);
        return *c.session;
    }

    std::shared_ptr<const JsonConstraint> constraint_for(const Turn& turn, const EngineChatRequest& request) {
        const ResponseFormat format = request.response_format;
        if (format == ResponseFormat::Text) return nullptr;
        if (format == ResponseFormat::JsonSchema && request.json_schema.empty())
            throw Error(ErrorCode::InvalidArgument, "response_format is JsonSchema but json_schema is empty");
        if (format == ResponseFormat::Grammar && request.grammar.empty())
            throw Error(ErrorCode::InvalidArgument, "response_format is Grammar but grammar is empty");
        // The cache key: the kind, the options that shape the output, and the text.
        const JsonConstraintOptions& o = request.constraint_options;
        std::string key = fmt::format("{}:{}:{}:{}:{}:{}:", static_cast<int>(format), o.max_whitespace, o.max_nesting,
                                      o.max_string_length, o.close_after_bytes, o.mask_cache_entries);
        key += format == ResponseFormat::Grammar ? request.grammar : request.json_schema;
        {
            std::lock_guard<std::mutex> lk(mu);
            if (constraint_gen != turn.gen) {
                schemas.clear();
                constraint_gen = turn.gen;
            }
            auto it = schemas.find(key);
            if (it != schemas.end()) return it->second;
        }
        const Tokenizer& tok = turn.model.tokenizer();
        auto built = format == ResponseFormat::JsonObject ? JsonConstraint::any_object(tok, o)
                     : format == ResponseFormat::Grammar  ? JsonConstraint::from_grammar(request.grammar, tok, o)
                                                          : JsonConstraint::from_schema(request.json_schema, tok, o);
        std::lock_guard<std::mutex> lk(mu);
        if (constraint_gen == turn.gen) {
            if (schemas.size() >= 8) schemas.clear();
            schemas.emplace(std::move(key), built);
        }
        return built;
    }

    // ---- loading ------------------------------------------------------------------------

    void start_load(const std::filesystem::path& path, const ModelOptions& options) {
        // lifecycle_mu held by the caller.
        std::unique_lock<std::mutex> lk(mu);
        if (loading) throw Error(ErrorCode::Busy, "a load or swap is already running");
        if (loader.joinable()) loader.join();  // finished: it set loading = false last
        loading = true;
        loading_path = path.string();
        progress.store(0.0f);
        cancel_load.store(false);
        loader = std::thread([this, path, options] { run_load(path, options); });
    }

    void run_load(const std::filesystem::path& path, ModelOptions options) {
        const auto user_progress = options.progress;
        options.progress = [this, user_progress](float f) {
            progress.store(f);
            if (cancel_load.load()) return false;
            return user_progress ? user_progress(f) : true;
        };
        std::optional<Model> loaded;
        ErrorCode code = ErrorCode::Ok;
        std::string message;
        // The progress callback runs on this thread: load/swap/unload/wait from it would
        // wait for this very load (refused with Busy, as from a piece callback).
        t_in_callback = this;
        try {
            loaded.emplace(Model::load(path, options));
        } catch (const Error& e) {
            code = e.code();
            message = e.what();
        } catch (const std::bad_alloc&) {
            code = ErrorCode::OutOfMemory;
            message = fmt::format("'{}': out of memory while loading", path.string());
        } catch (const std::exception& e) {
            code = ErrorCode::Internal;
            message = fmt::format("'{}': unexpected exception while loading: {}", path.string(), e.what());
        } catch (...) {
            code = ErrorCode::Internal;
            message = fmt::format("'{}': unexpected exception while loading", path.string());
        }
        std::optional<Model> old;
        std::vector<std::unique_ptr<Session>> to_free;
        {
            std::lock_guard<std::mutex> lk(mu);
            if (loaded) {
                old = std::move(model);
                model = std::move(loaded);
                model_path = path.string();
                ++gen;
                ++counters.loads;
                failed = false;
                last_load_failed = false;
                last_load_code = ErrorCode::Ok;
                last_load_message.clear();
                swap_failure.clear();
                oom_reason.clear();
                device_reason.clear();
                collect_unusable(to_free);
            } else {
                last_load_failed = true;
                last_load_code = code;
                last_load_message = message;
                ++counters.load_failures;
                record_error(code, message);
                // A load cancelled by unload() (or the progress callback) is not a failure of the engine.
                if (code != ErrorCode::Cancelled) {
                    if (model)
                        swap_failure = "swap failed: " + message;
                    else
                        failed = true;
                }
            }
            loading = false;
            loading_path.clear();
            cv.notify_all();
        }
        // Freed here: sessions of the old model that were idle, and the old model itself
        // unless a running request still holds it (then it goes with that request).
        to_free.clear();
        old.reset();
        release_heap();
    }

    void wait_load(std::unique_lock<std::mutex>& lk) {
        if (loading) cv.wait(lk, [&] { return !loading; });
    }

    void throw_if_load_failed() const {
        if (last_load_failed) throw Error(last_load_code, last_load_message);
    }

    // ---- watchdog ----------------------------------------------------------------------

    void watchdog_loop() {
        const auto timeout_ns = static_cast<int64_t>(opts.watchdog_timeout_s * 1e9);
        const auto period = std::chrono::nanoseconds(std::clamp<int64_t>(timeout_ns / 4, 5'000'000, 1'000'000'000));
        std::unique_lock<std::mutex> lk(mu);
        while (!stopping) {
            cv.wait_for(lk, period);
            if (stopping) break;
            const int64_t now = now_ns();
            for (auto& c : active) {
                if (c->stuck_reported || now - c->last_progress_ns.load() <= timeout_ns) continue;
                c->stuck_reported = true;
                ++counters.stuck_events;
                if (opts.cancel_stuck) {
                    c->cancel.store(true);
                    if (c->session) c->session->cancel();
                }
            }
        }
    }

    void cancel_active() {
        for (auto& c : active) {
            c->cancel.store(true);
            if (c->session) c->session->cancel();
        }
    }
};

// ---- Engine ------------------------------------------------------------------------------

Engine::Engine(const EngineOptions& options) : impl_(std::make_unique<Impl>(options)) {}

Engine::~Engine() {
    Impl& d = *impl_;
    std::lock_guard<std::mutex> life(d.lifecycle_mu);
    std::thread loader;
    {
        std::unique_lock<std::mutex> lk(d.mu);
        d.cancel_load.store(true);
        d.stopping = true;
        d.cancel_active();
        d.cv.notify_all();
        d.cv.wait(lk, [&] { return d.active.empty() && d.waiting.empty(); });
        d.wait_load(lk);
        loader = std::move(d.loader);
    }
    if (loader.joinable()) loader.join();
    if (d.watchdog.joinable()) d.watchdog.join();
}

void Engine::load(const std::filesystem::path& path, const ModelOptions& options) {
    if (t_in_callback == impl_.get()) throw Error(ErrorCode::Busy, "Engine::load called from a piece callback");
    {
        std::lock_guard<std::mutex> lk(impl_->mu);
        if (impl_->loading) throw Error(ErrorCode::Busy, "a load or swap is already running");
    }
    unload();
    std::lock_guard<std::mutex> life(impl_->lifecycle_mu);
    impl_->start_load(path, options);
}

void Engine::swap(const std::filesystem::path& path, const ModelOptions& options) {
    if (t_in_callback == impl_.get()) throw Error(ErrorCode::Busy, "Engine::swap called from a piece callback");
    std::lock_guard<std::mutex> life(impl_->lifecycle_mu);
    impl_->start_load(path, options);
}

void Engine::wait() {
    if (t_in_callback == impl_.get()) throw Error(ErrorCode::Busy, "Engine::wait called from a piece callback");
    std::unique_lock<std::mutex> lk(impl_->mu);
    impl_->wait_load(lk);
    impl_->throw_if_load_failed();
}

bool Engine::wait_for(std::chrono::milliseconds timeout) {
    if (t_in_callback == impl_.get()) throw Error(ErrorCode::Busy, "Engine::wait_for called from a piece callback");
    std::unique_lock<std::mutex> lk(impl_->mu);
    if (!impl_->cv.wait_for(lk, timeout, [&] { return !impl_->loading; })) return false;
    impl_->throw_if_load_failed();
    return true;
}

void Engine::unload() {
    if (t_in_callback == impl_.get()) throw Error(ErrorCode::Busy, "Engine::unload called from a piece callback");
    Impl& d = *impl_;
    std::lock_guard<std::mutex> life(d.lifecycle_mu);
    std::thread loader;
    std::optional<Model> old;
    std::vector<std::unique_ptr<Session>> to_free;
    {
        std::unique_lock<std::mutex> lk(d.mu);
        if (d.loading) {
            d.cancel_load.store(true);
            d.wait_load(lk);
        }
        loader = std::move(d.loader);
        old = std::move(d.model);
        d.model.reset();
        d.model_path.clear();
        ++d.gen;
        d.cancel_active();
        d.cv.notify_all();  // waiters see no model and fail with NotLoaded
        d.cv.wait(lk, [&] { return d.active.empty(); });
        for (auto& [id, c] : d.convs)
            if (c->session) to_free.push_back(std::move(c->session));
        d.convs.clear();
        d.schemas.clear();
        d.failed = false;
        d.last_load_failed = false;
        d.swap_failure.clear();
        d.oom_reason.clear();
        d.device_reason.clear();
    }
    if (loader.joinable()) loader.join();
    to_free.clear();
    old.reset();
    release_heap();
}

void Engine::warmup() {
    Impl& d = *impl_;
    Impl::Turn turn = d.acquire("", INT32_MAX, false);
    try {
        (void)turn.model.impl().chat_template();  // parse once (a template error surfaces at chat time)
    } catch (const Error&) {
    }
    try {
        SessionOptions so = d.opts.session;
        so.context_length = 8;
        Session session(turn.model, so);
        const Tokenizer& tok = turn.model.tokenizer();
        const TokenId first = tok.bos() != kNoToken ? tok.bos() : 0;
        const TokenId tokens[1] = {first};
        session.evaluate(tokens);
    } catch (const Error& e) {
        {
            std::lock_guard<std::mutex> lk(d.mu);
            d.record_error(e.code(), e.what());
        }
        d.release(turn, true);
        throw;
    } catch (const std::bad_alloc&) {
        {
            std::lock_guard<std::mutex> lk(d.mu);
            d.record_error(ErrorCode::OutOfMemory, "out of memory during warmup");
        }
        d.release(turn, true);
        throw Error(ErrorCode::OutOfMemory, "out of memory during warmup");
    } catch (...) {
        {
            std::lock_guard<std::mutex> lk(d.mu);
            d.record_error(ErrorCode::Internal, "unexpected exception during warmup");
        }
        d.release(turn, true);
        throw;
    }
    d.release(turn, true);
}

void Engine::set_context_limit(int32_t n_ctx) {
    if (n_ctx < 0) throw Error(ErrorCode::InvalidArgument, "the context limit must be >= 0 (0 = the default)");
    std::vector<std::unique_ptr<Session>> to_free;
    {
        std::lock_guard<std::mutex> lk(impl_->mu);
        impl_->ctx_limit = n_ctx;
        impl_->collect_unusable(to_free);
    }
    to_free.clear();
    release_heap();
}

uint64_t Engine::trim(int32_t keep_idle) {
    Impl& d = *impl_;
    std::vector<std::unique_ptr<Session>> to_free;
    uint64_t released = 0;
    {
        std::lock_guard<std::mutex> lk(d.mu);
        std::vector<std::shared_ptr<Conversation>> idle;
        for (auto& [id, c] : d.convs)
            if (!c->in_use && c->session) idle.push_back(c);
        std::sort(idle.begin(), idle.end(), [](const auto& a, const auto& b) { return a->last_used > b->last_used; });
        for (size_t i = static_cast<size_t>(std::max(keep_idle, 0)); i < idle.size(); ++i) {
            released += idle[i]->kv_bytes + idle[i]->scratch_bytes;
            to_free.push_back(std::move(idle[i]->session));
            idle[i]->kv_bytes = idle[i]->scratch_bytes = 0;
            d.convs.erase(idle[i]->id);
        }
        d.oom_reason.clear();  // memory was given back: let the next request try again
    }
    to_free.clear();
    release_heap();
    return released;
}

void Engine::forget(std::string_view conversation_id) {
    std::unique_ptr<Session> to_free;
    {
        std::lock_guard<std::mutex> lk(impl_->mu);
        auto it = impl_->convs.find(conversation_id);
        if (it == impl_->convs.end()) return;
        if (!it->second->in_use) to_free = std::move(it->second->session);
        impl_->convs.erase(it);  // a running one is freed by release()
    }
}

void Engine::cancel(std::string_view conversation_id) noexcept {
    std::lock_guard<std::mutex> lk(impl_->mu);
    for (auto& c : impl_->active)
        if (c->id == conversation_id) {
            c->cancel.store(true);
            if (c->session) c->session->cancel();
        }
}

void Engine::cancel_all() noexcept {
    std::lock_guard<std::mutex> lk(impl_->mu);
    impl_->cancel_active();
}

EngineStatus Engine::status() const {
    const Impl& d = *impl_;
    EngineStatus s;
    const uint64_t rss = process_rss();
    std::lock_guard<std::mutex> lk(d.mu);
    if (d.model)
        s.state = d.active.empty() ? EngineState::Ready : EngineState::Busy;
    else if (d.loading)
        s.state = EngineState::Loading;
    else if (d.failed)
        s.state = EngineState::Failed;
    else
        s.state = EngineState::Unloaded;
    s.loading = d.loading;
    s.load_progress = d.progress.load();
    s.loading_path = d.loading_path;
    if (d.model) {
        const ModelInfo& info = d.model->info();
        s.model_path = d.model_path;
        s.model_name = info.name;
        s.architecture = info.architecture;
        s.backend = "cpu";
        s.context_length = d.effective_ctx();
        s.n_ctx_train = info.n_ctx_train;
        s.memory.weights = info.weight_bytes;
    } else {
        s.context_length = d.ctx_limit;
    }
    std::set<const Conversation*> seen;
    auto add = [&](const Conversation& c) {
        if (!seen.insert(&c).second) return;
        s.memory.kv += c.kv_bytes;
        s.memory.scratch += c.scratch_bytes;
    };
    for (const auto& [id, c] : d.convs) {
        add(*c);
        if (c->session) ++s.conversations;
    }
    for (const auto& c : d.active) add(*c);
    s.memory.device = 0;
    s.memory.process_rss = rss;
    s.last_error_code = d.last_error_code;
    s.last_error = d.last_error;
    s.counters = d.counters;
    s.active_requests = static_cast<int32_t>(d.active.size());
    s.queued_requests = static_cast<int32_t>(d.waiting.size());

    // Health.
    std::vector<std::string> reasons;
    const int64_t now = now_ns();
    int64_t longest = 0;
    const Conversation* slowest = nullptr;
    for (const auto& c : d.active) {
        const int64_t since = now - c->last_progress_ns.load();
        if (since > longest) {
            longest = since;
            slowest = c.get();
        }
    }
    s.seconds_since_token = static_cast<double>(longest) / 1e9;
    if (d.opts.watchdog_timeout_s > 0 && slowest && s.seconds_since_token > d.opts.watchdog_timeout_s)
        reasons.push_back(fmt::format("stuck: {} produced no token for {:.1f} s (watchdog {:.1f} s)",
                                      slowest->id.empty() ? std::string("a one-off request")
                                                          : fmt::format("conversation '{}'", slowest->id),
                                      s.seconds_since_token, d.opts.watchdog_timeout_s));
    if (!d.oom_reason.empty()) reasons.push_back(d.oom_reason);
    if (!d.device_reason.empty()) reasons.push_back(d.device_reason);
    if (!d.swap_failure.empty()) reasons.push_back(d.swap_failure);
    if (s.state == EngineState::Failed) {
        s.health = EngineHealth::Failed;
        reasons.insert(reasons.begin(), "load failed: " + d.last_load_message);
    } else if (!reasons.empty()) {
        s.health = EngineHealth::Degraded;
    }
    for (size_t i = 0; i < reasons.size(); ++i) {
        if (i) s.health_reason += "; ";
        s.health_reason += reasons[i];
    }
    return s;
}

EngineChatResult Engine::chat(const EngineChatRequest& request, const PieceCallback& on_piece) {
    Impl& d = *impl_;
    if (t_in_callback == &d) throw Error(ErrorCode::Busy, "Engine::chat called from a piece callback of the same engine");
    if (request.messages.empty()) throw Error(ErrorCode::InvalidArgument, "the request has no messages");
    const auto start = Clock::now();
    Impl::Turn turn = d.acquire(request.conversation_id, request.priority);
    EngineChatResult result;
    result.queue_ms = ms_between(start, turn.admitted);
    result.warm = turn.warm;
    Conversation& conv = *turn.conv;
    auto fail = [&](ErrorCode code, const std::string& message) {
        {
            std::lock_guard<std::mutex> lk(d.mu);
            ++d.counters.failures;
            d.record_error(code, message);
        }
        // After an out-of-memory the session is freed so the memory goes back.
        d.release(turn, code == ErrorCode::OutOfMemory);
    };
    try {
        Session& session = d.session_for(turn);
        bool cancelled_early = false;
        if (conv.cancel.load()) {  // cancelled before generation began
            std::lock_guard<std::mutex> lk(d.mu);
            if (!d.model || d.gen != turn.gen)
                throw Error(ErrorCode::NotLoaded, "the model was unloaded before the request started");
            cancelled_early = true;
        }
        if (cancelled_early) {
            result.chat.generation.finish_reason = FinishReason::Cancelled;
            {
                std::lock_guard<std::mutex> lk(d.mu);
                ++d.counters.cancelled;
            }
            d.release(turn, false);
            result.total_ms = ms_between(start, Clock::now());
            return result;
        }
        ChatOptions options = request.options;
        if (request.response_format != ResponseFormat::Text)
            options.generate.constraint = d.constraint_for(turn, request);
        Sampler sampler(request.sampler);
        sampler.add_stage(std::make_shared<Heartbeat>(turn.conv));
        const PieceCallback wrapped = [&](const Piece& piece) {
            conv.last_progress_ns.store(now_ns());
            if (conv.cancel.load()) return false;
            bool go = true;
            if (on_piece) {
                struct Guard {
                    const void* prev;
                    ~Guard() { t_in_callback = prev; }
                } guard{t_in_callback};
                t_in_callback = &d;
                go = on_piece(piece);
            }
            return go && !conv.cancel.load();
        };
        result.chat = session.chat(request.messages, sampler, options, wrapped);
        if (conv.cancel.load()) result.chat.generation.finish_reason = FinishReason::Cancelled;
    } catch (const Error& e) {
        fail(e.code(), e.what());
        throw;
    } catch (const std::bad_alloc&) {
        fail(ErrorCode::OutOfMemory, "out of memory during a chat request");
        throw Error(ErrorCode::OutOfMemory, "out of memory during a chat request");
    } catch (const std::exception& e) {
        fail(ErrorCode::Internal, e.what());
        throw;
    } catch (...) {
        fail(ErrorCode::Internal, "unexpected exception of unknown type");
        throw;
    }
    const GenerateResult& g = result.chat.generation;
    result.reused_tokens = g.reused_prompt_tokens;
    {
        std::lock_guard<std::mutex> lk(d.mu);
        d.counters.prompt_tokens += static_cast<uint64_t>(g.prompt_tokens);
        d.counters.reused_tokens += static_cast<uint64_t>(g.reused_prompt_tokens);
        d.counters.generated_tokens += static_cast<uint64_t>(g.completion_tokens);
        if (g.finish_reason == FinishReason::Cancelled) ++d.counters.cancelled;
        d.oom_reason.clear();
        d.device_reason.clear();
    }
    d.release(turn, false);
    result.total_ms = ms_between(start, Clock::now());
    return result;
}

}  // namespace genie
