// libgenie: the in-process engine — one model's lifecycle (load, swap, unload), health,
// memory control and warm multi-turn conversations, for an application (a voice
// assistant) that keeps the model inside its own process. docs/engine.md.
#pragma once

#include <genie/chat.hpp>
#include <genie/error.hpp>
#include <genie/export.h>
#include <genie/model.hpp>
#include <genie/sampler.hpp>
#include <genie/session.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace genie {

/// Where the engine's model is in its life.
enum class EngineState {
    Unloaded,  ///< no model (initially, after unload(), after a cancelled first load)
    Loading,   ///< a load runs and no model serves yet (a swap keeps the old one serving: Ready/Busy)
    Ready,     ///< a model serves and no request runs
    Busy,      ///< a model serves and at least one request runs
    Failed,    ///< the last load failed and no model serves (status().last_error says why)
};

/// Whether the engine needs attention.
enum class EngineHealth {
    Ok,
    Degraded,  ///< serving, but: a stuck generation, an out-of-memory, a failed swap, a device error
    Failed,    ///< not serving: the last load failed
};

/// Short upper-case names: "UNLOADED", "LOADING", ... and "OK", "DEGRADED", "FAILED".
GENIE_API const char* engine_state_name(EngineState state) noexcept;
GENIE_API const char* engine_health_name(EngineHealth health) noexcept;

/// Options of an Engine. Every field has a safe default.
struct EngineOptions {
    /// Options of every session the engine creates. session.context_length is the initial
    /// context limit (0 = min(training context, 4096)); see Engine::set_context_limit.
    SessionOptions session;
    /// Conversations whose session (KV cache) is kept between requests, least recently
    /// used evicted first. >= 1.
    int32_t max_conversations = 4;
    /// Requests that run at the same time (each on its own session and thread pool).
    /// 1 = serialized: waiting requests are admitted by priority (higher first), then
    /// arrival order. >= 1.
    int32_t max_concurrent = 1;
    /// Requests that may wait for a turn; a request that cannot start when this many
    /// already wait is refused at once with ErrorCode::Busy (a server answers 503). < 0: no bound.
    int32_t max_queued = -1;
    /// One-off requests (conversation_id "") leave their session as a spare, kept (within
    /// max_conversations, spares evicted before conversations) for the next one-off
    /// request, which takes the spare whose KV cache shares the longest prefix with its
    /// prompt (llama-server's slot reuse: a repeated system prompt is not evaluated again).
    /// false: each one-off request gets a fresh session that is freed after it.
    bool keep_one_off_sessions = false;
    /// Watchdog: a running request that produced no token for this many seconds makes
    /// the engine Degraded ("stuck"). The prompt's evaluation counts as "no token", so
    /// set it above the longest prompt evaluation you expect. <= 0: no watchdog.
    double watchdog_timeout_s = 60.0;
    /// Also cancel a generation the watchdog finds stuck (it ends with FinishReason::Cancelled).
    bool cancel_stuck = false;
    /// Refuse (ErrorCode::OutOfMemory, health Degraded) a session whose KV cache is larger
    /// than the memory the OS reports available (/proc/meminfo MemAvailable, or the
    /// headroom under the process's cgroup memory limit when that is smaller), instead of
    /// risking the OOM killer. Ignored where neither can be read.
    bool check_available_memory = true;
};

/// What a chat answer must look like (Engine builds and caches the constraint per model).
enum class ResponseFormat {
    Text,        ///< free text
    JsonObject,  ///< any JSON object
    JsonSchema,  ///< a JSON value following EngineChatRequest::json_schema (docs/constraints.md)
    Grammar,     ///< text the GBNF grammar EngineChatRequest::grammar derives (rule "root")
};

/// Polled on the request's thread while it waits for its turn (about every 10 ms) and
/// after each token it generates; returning true cancels it: a waiting request leaves the
/// queue (genie::Error Cancelled), a running one ends with FinishReason::Cancelled. For a
/// front end's "the client went away" check. Must not call the engine.
using CancelCheck = std::function<bool()>;

/// One chat request to the engine.
struct EngineChatRequest {
    /// The conversation this turn belongs to. Requests with the same id share a session
    /// (warm turns: the KV cache holds the previous turns, so a follow-up that repeats the
    /// conversation evaluates only its new tokens). "" = a one-off request on a fresh
    /// session that is not kept.
    std::string conversation_id;
    /// Admission order while requests wait for a turn: higher first, then arrival order.
    /// A running request is never pre-empted.
    int32_t priority = 0;
    /// The whole conversation so far, ending with the new user message.
    std::vector<ChatMessage> messages;
    ChatOptions options;       ///< max tokens, stop strings, thinking switch, tools
    SamplerOptions sampler;    ///< a fresh sampler is made from these for the request
    ResponseFormat response_format = ResponseFormat::Text;
    std::string json_schema;   ///< for ResponseFormat::JsonSchema
    std::string grammar;       ///< for ResponseFormat::Grammar
    /// Options of the JsonSchema / JsonObject constraint (e.g. tool_call_constraint_options()).
    JsonConstraintOptions constraint_options;
    CancelCheck cancelled;  ///< optional: see CancelCheck
};

/// One text completion request: a raw prompt, no chat rendering (a server's /completion).
struct EngineTextRequest {
    std::string conversation_id;  ///< as EngineChatRequest::conversation_id
    int32_t priority = 0;         ///< as EngineChatRequest::priority
    /// The prompt text, tokenized with generate.add_special / parse_special.
    std::string prompt;
    /// The prompt as tokens; when not empty it is used instead of `prompt`.
    std::vector<TokenId> prompt_tokens;
    GenerateOptions generate;  ///< max tokens, stop strings, deadline, constraint ...
    SamplerOptions sampler;    ///< a fresh sampler is made from these for the request
    CancelCheck cancelled;     ///< optional: see CancelCheck
};

/// The outcome of Engine::chat.
struct EngineChatResult {
    ChatResult chat;            ///< the answer, reasoning, tool calls, counts and timings
    int32_t reused_tokens = 0;  ///< prompt tokens found in the conversation's KV cache
    bool warm = false;          ///< the conversation's session was kept from an earlier turn
    double queue_ms = 0;        ///< time spent waiting for a turn
    double total_ms = 0;        ///< the whole call, queue included
};

/// Bytes the engine holds, by kind.
struct EngineMemory {
    uint64_t weights = 0;      ///< the model's tensor data (mapped from the file)
    uint64_t kv = 0;           ///< KV caches of every session (kept conversations and running requests)
    uint64_t scratch = 0;      ///< activation workspaces and logits of those sessions
    uint64_t device = 0;       ///< accelerator memory (0: the CPU backend uses none)
    uint64_t process_rss = 0;  ///< resident set of the whole process (/proc/self/statm), 0 if unknown
};

/// Counters since the engine was created.
struct EngineCounters {
    uint64_t requests = 0;          ///< chat requests admitted
    uint64_t failures = 0;          ///< requests that ended with an error
    uint64_t cancelled = 0;         ///< requests that ended with FinishReason::Cancelled
    uint64_t rejected_busy = 0;     ///< requests refused with Busy (the queue was full)
    uint64_t prompt_tokens = 0;     ///< prompt tokens of finished requests
    uint64_t reused_tokens = 0;     ///< of those, found in a KV cache (not evaluated)
    uint64_t generated_tokens = 0;  ///< tokens generated (reasoning included)
    uint64_t stuck_events = 0;      ///< generations the watchdog found stuck
    uint64_t out_of_memory = 0;     ///< out-of-memory errors (requests and loads)
    uint64_t loads = 0;             ///< successful loads and swaps
    uint64_t load_failures = 0;     ///< failed loads and swaps
};

/// A snapshot of the engine (Engine::status).
struct EngineStatus {
    EngineState state = EngineState::Unloaded;
    EngineHealth health = EngineHealth::Ok;
    /// Why health is not Ok ("" when Ok), e.g. "stuck: conversation 'a' produced no token
    /// for 31.2 s", "out of memory: ...", "swap failed: ...", "load failed: ...".
    std::string health_reason;
    bool loading = false;           ///< a load or swap runs (also while an old model serves)
    float load_progress = 0.0f;     ///< of the running (or last) load, 0..1
    std::string loading_path;       ///< the file being loaded, "" when none
    std::string model_path;         ///< the serving model's file, "" when none
    std::string model_name;         ///< its general.name
    std::string architecture;       ///< "llama", "qwen2", "qwen3"
    std::string backend;            ///< "cpu" ("" when no model)
    int32_t context_length = 0;     ///< tokens per session (the context limit in force)
    int32_t n_ctx_train = 0;        ///< the model's training context
    EngineMemory memory;
    ErrorCode last_error_code = ErrorCode::Ok;  ///< of the last failed load, swap or request
    std::string last_error;         ///< its message, "" when none
    EngineCounters counters;
    int32_t active_requests = 0;    ///< running now
    int32_t queued_requests = 0;    ///< waiting for a turn
    int32_t conversations = 0;      ///< conversations with a kept session
    /// The longest time any running request has gone without producing a token
    /// (seconds; 0 when none runs).
    double seconds_since_token = 0;
};

/// A request prepared by Engine::prepare: its prompt rendered (chat) and tokenized for the
/// serving model, its constraint built and its max_tokens lowered to the room the context
/// leaves after the prompt. wait_turn() takes its turn, run() generates. Move-only; a
/// ticket destroyed after wait_turn() without run() gives its turn back. Not thread-safe;
/// must not outlive its Engine.
class GENIE_API EngineTicket {
public:
    EngineTicket(EngineTicket&&) noexcept;
    EngineTicket& operator=(EngineTicket&&) noexcept;
    ~EngineTicket();

    /// Tokens of the prompt (for the model the ticket was prepared on).
    int32_t prompt_tokens() const noexcept;
    /// Tokens per session: the prompt must leave room for at least one more.
    int32_t context_length() const noexcept;
    /// max_tokens in force (the request's, lowered to context_length() - prompt_tokens()).
    int32_t max_tokens() const noexcept;

    /// Checks that the prompt fits (ContextOverflow otherwise, before any waiting), then
    /// waits for a turn (priority, then arrival). Throws Busy when the queue is full
    /// (EngineOptions::max_queued), Cancelled when the request's CancelCheck fires while
    /// it waits, NotLoaded when the model goes away. Returns at once when already admitted.
    void wait_turn();
    /// Generates on the calling thread (wait_turn() first if it was not called); on_piece
    /// runs there. Once per ticket (InvalidArgument after). Throws what Engine::chat throws.
    EngineChatResult run(const PieceCallback& on_piece = {});

    struct State;

private:
    friend class Engine;
    explicit EngineTicket(std::unique_ptr<State> state) noexcept;
    std::unique_ptr<State> state_;
};

/// The in-process engine: owns at most one model and the sessions that run on it.
/// Every member function is thread-safe. Functions that change the model or wait for
/// requests (load, swap, unload, wait) must not be called from inside a piece callback
/// of the same engine (genie::Error Busy).
class GENIE_API Engine {
public:
    /// Starts the watchdog thread. Throws InvalidArgument for bad options.
    explicit Engine(const EngineOptions& options = {});
    /// Cancels running requests, waits for them and for a running load, frees everything.
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    /// Starts loading `path` in the background and returns at once. A model already
    /// loaded is unloaded first (use swap() to keep serving while the new one loads).
    /// options.progress, if set, is called on the loading thread (return false to cancel).
    /// Throws Busy when a load or swap is already running. Use wait() for the outcome.
    void load(const std::filesystem::path& path, const ModelOptions& options = {});
    /// Starts loading `path` in the background while the current model keeps serving;
    /// on success the new model replaces it (requests that run finish on the old model,
    /// kept conversations start cold on the new one) and the old one is freed once its
    /// last request ends. On failure the old model keeps serving, health becomes Degraded
    /// ("swap failed: ...") and last_error says why. Without a model it is load().
    void swap(const std::filesystem::path& path, const ModelOptions& options = {});
    /// Waits for the running load/swap (if any) to end. Throws the genie::Error of the
    /// last load/swap if it failed.
    void wait();
    /// Same, at most `timeout`: false when the load still runs.
    bool wait_for(std::chrono::milliseconds timeout);

    /// Cancels a running load, cancels running requests and waits for them, then frees the
    /// model and every session's KV cache and scratch. Queued requests fail with NotLoaded.
    /// State Unloaded, health Ok.
    void unload();

    /// One tiny forward pass (on a throw-away 8-token session) and the chat template's
    /// parse, so the first request does not pay the page faults of the mapped weights.
    /// Takes a turn like a request (not counted as one). Throws NotLoaded without a model.
    void warmup();

    /// Tokens of context per session (0 = the default: min(training context, 4096)).
    /// Kept sessions of another size are freed (idle ones now, running ones when they
    /// end); their conversations start cold next time.
    void set_context_limit(int32_t n_ctx);
    /// Frees the KV cache and scratch of idle kept conversations, except the `keep_idle`
    /// most recently used, and returns the bytes released. Running requests are untouched.
    uint64_t trim(int32_t keep_idle = 0);
    /// Forgets one conversation (its session is freed when idle). No-op for an unknown id.
    void forget(std::string_view conversation_id);

    /// A consistent snapshot; cheap (no allocation beyond the strings), callable any time.
    EngineStatus status() const;

    /// Runs a chat turn: renders the prompt (prepare_chat), waits for a turn (priority),
    /// then generates and parses like Session::chat on the conversation's session.
    /// `on_piece` runs on the calling thread. Throws NotLoaded (no model / unloaded while
    /// waiting), Busy (the queue is full), Cancelled (the CancelCheck fired while it
    /// waited), OutOfMemory (KV cache), ContextOverflow (before waiting), InvalidArgument
    /// (bad request) and what Session::chat throws. = prepare(request).run(on_piece).
    EngineChatResult chat(const EngineChatRequest& request, const PieceCallback& on_piece = {});
    /// A text completion: the raw prompt, no chat template (EngineChatResult::chat holds the
    /// generation; no tool calls). Throws like chat().
    EngineChatResult complete(const EngineTextRequest& request, const PieceCallback& on_piece = {});

    /// Prepares a request without waiting for a turn, so a front end can refuse it (prompt
    /// too long, queue full) before it answers anything. Throws NotLoaded, InvalidArgument
    /// (bad request, a template that fails to render, a bad schema or grammar).
    EngineTicket prepare(const EngineChatRequest& request);
    EngineTicket prepare(const EngineTextRequest& request);

    /// The serving model (a cheap handle that keeps it alive), nullopt when none.
    std::optional<Model> model() const;

    /// Cancels the running request of a conversation (a waiting one is not affected).
    void cancel(std::string_view conversation_id) noexcept;
    /// Cancels every running request.
    void cancel_all() noexcept;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace genie
