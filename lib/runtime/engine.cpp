// Engine: one model's lifecycle (background load, swap, unload), memory accounting, and
// health with a watchdog thread. Requests (prepare, admission, generation) are in
// engine_request.cpp; admission rules in admission.cpp, kept sessions in
// conversation_store.cpp. docs/engine.md.
#include "runtime/engine_impl.hpp"

#include "model/model_impl.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <fstream>
#include <set>
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

namespace runtime {

thread_local const void* t_in_callback = nullptr;

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}
double ms_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
}

void release_heap() noexcept {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

}  // namespace runtime

using runtime::now_ns;
using runtime::release_heap;
using runtime::t_in_callback;

namespace {

/// Resident set of this process in bytes (0 when /proc is not there).
uint64_t process_rss() {
    std::ifstream in("/proc/self/statm");
    uint64_t size = 0, resident = 0;
    if (!(in >> size >> resident)) return 0;
    const long page = sysconf(_SC_PAGESIZE);
    return resident * static_cast<uint64_t>(page > 0 ? page : 4096);
}

}  // namespace

Engine::Impl::Impl(const EngineOptions& o)
    : opts(o), store(o.max_conversations, o.keep_one_off_sessions), admission(o.max_concurrent, o.max_queued) {
    if (opts.max_conversations < 1) throw Error(ErrorCode::InvalidArgument, "max_conversations must be >= 1");
    if (opts.max_concurrent < 1) throw Error(ErrorCode::InvalidArgument, "max_concurrent must be >= 1");
    if (opts.session.context_length < 0) throw Error(ErrorCode::InvalidArgument, "context_length must be >= 0");
    if (opts.session.batch_size <= 0) throw Error(ErrorCode::InvalidArgument, "batch_size must be > 0");
    if (opts.session.threads < 0) throw Error(ErrorCode::InvalidArgument, "threads must be >= 0");
    ctx_limit = opts.session.context_length;
    if (opts.watchdog_timeout_s > 0) watchdog = std::thread([this] { watchdog_loop(); });
}

void Engine::Impl::record_error(ErrorCode code, const std::string& message) {
    last_error_code = code;
    last_error = message;
    if (code == ErrorCode::OutOfMemory) {
        ++counters.out_of_memory;
        oom_reason = "out of memory: " + message;
    } else if (code == ErrorCode::Device) {
        device_reason = "device error: " + message;
    }
}

void Engine::Impl::cancel_active() {
    for (auto& c : active) {
        c->cancel.store(true);
        if (c->session) c->session->cancel();
    }
}

// ---- loading ----------------------------------------------------------------------------
void Engine::Impl::start_load(const std::filesystem::path& path, const ModelOptions& options) {
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

void Engine::Impl::run_load(const std::filesystem::path& path, ModelOptions options) {
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
    runtime::SessionList to_free;
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
            store.drop_unusable([this](const runtime::Conversation& c) { return !usable(c); }, to_free);
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

// ---- watchdog ----------------------------------------------------------------------------

void Engine::Impl::watchdog_loop() {
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
        d.cv.wait(lk, [&] { return d.active.empty() && d.admission.waiting() == 0; });
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
    runtime::SessionList to_free;
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
        d.store.clear(to_free);
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
    if (t_in_callback == &d) throw Error(ErrorCode::Busy, "Engine::warmup called from a piece callback");
    // A turn like a request's (not counted as one); its conversation's session is untouched.
    Impl::Turn turn = d.acquire("", INT32_MAX, {}, {});
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
        d.release(turn, false);
        throw;
    } catch (const std::bad_alloc&) {
        {
            std::lock_guard<std::mutex> lk(d.mu);
            d.record_error(ErrorCode::OutOfMemory, "out of memory during warmup");
        }
        d.release(turn, false);
        throw Error(ErrorCode::OutOfMemory, "out of memory during warmup");
    } catch (...) {
        {
            std::lock_guard<std::mutex> lk(d.mu);
            d.record_error(ErrorCode::Internal, "unexpected exception during warmup");
        }
        d.release(turn, false);
        throw;
    }
    d.release(turn, false);
}

void Engine::set_context_limit(int32_t n_ctx) {
    if (n_ctx < 0) throw Error(ErrorCode::InvalidArgument, "the context limit must be >= 0 (0 = the default)");
    runtime::SessionList to_free;
    {
        std::lock_guard<std::mutex> lk(impl_->mu);
        impl_->ctx_limit = n_ctx;
        impl_->store.drop_unusable([&](const runtime::Conversation& c) { return !impl_->usable(c); }, to_free);
    }
    to_free.clear();
    release_heap();
}

uint64_t Engine::trim(int32_t keep_idle) {
    Impl& d = *impl_;
    runtime::SessionList to_free;
    uint64_t released = 0;
    {
        std::lock_guard<std::mutex> lk(d.mu);
        released = d.store.trim(keep_idle, to_free);
        d.oom_reason.clear();  // memory was given back: let the next request try again
    }
    to_free.clear();
    release_heap();
    return released;
}

void Engine::forget(std::string_view conversation_id) {
    runtime::SessionList to_free;
    {
        std::lock_guard<std::mutex> lk(impl_->mu);
        impl_->store.forget(conversation_id, to_free);
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
    std::set<const runtime::Conversation*> seen;
    auto add = [&](const runtime::Conversation& c) {
        if (!seen.insert(&c).second) return;
        s.memory.kv += c.kv_bytes;
        s.memory.scratch += c.scratch_bytes;
    };
    d.store.for_each(add);
    s.conversations = d.store.conversations_with_session();
    for (const auto& c : d.active) add(*c);
    s.memory.device = 0;
    s.memory.process_rss = rss;
    s.last_error_code = d.last_error_code;
    s.last_error = d.last_error;
    s.counters = d.counters;
    s.active_requests = static_cast<int32_t>(d.active.size());
    s.queued_requests = d.admission.waiting();

    // Health.
    std::vector<std::string> reasons;
    const int64_t now = now_ns();
    int64_t longest = 0;
    const runtime::Conversation* slowest = nullptr;
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

}  // namespace genie
