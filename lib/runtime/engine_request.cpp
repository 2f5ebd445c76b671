// Engine requests: prepare (render + tokenize + constraint, before any waiting), admission
// (a turn by priority, the bounded queue, cancellation while waiting), and generation on
// the conversation's session with the watchdog's heartbeat. docs/engine.md.
#include "runtime/engine_impl.hpp"

#include "core/system_memory.hpp"

#include "model/memory_plan.hpp"
#include "model/model_impl.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace genie {

using runtime::Clock;
using runtime::Conversation;
using runtime::ms_between;
using runtime::now_ns;
using runtime::t_in_callback;

namespace {

/// A no-op sampler stage that runs once per sampled token: it marks the conversation alive
/// (the watchdog's heartbeat; pieces alone miss tokens that produce no text yet) and polls
/// the request's CancelCheck.
class Heartbeat final : public SamplerStage {
public:
    Heartbeat(std::shared_ptr<Conversation> c, Session* session, CancelCheck cancelled)
        : conv_(std::move(c)), session_(session), cancelled_(std::move(cancelled)) {}
    void apply(std::span<float>) override {
        conv_->last_progress_ns.store(now_ns());
        if (cancelled_ && !conv_->cancel.load() && cancelled_()) {
            conv_->cancel.store(true);
            session_->cancel();
        }
    }

private:
    std::shared_ptr<Conversation> conv_;
    Session* session_;
    CancelCheck cancelled_;
};

}  // namespace

// ---- Engine::Impl: admission and sessions -----------------------------------------------

Engine::Impl::Snapshot Engine::Impl::snapshot() const {
    std::lock_guard<std::mutex> lk(mu);
    if (!model) throw Error(ErrorCode::NotLoaded, loading ? "the model is still loading" : "no model is loaded");
    return Snapshot{*model, gen, effective_ctx()};
}

Engine::Impl::Turn Engine::Impl::acquire(const std::string& id, int32_t priority, std::span<const TokenId> prompt,
                                         const CancelCheck& cancelled) {
    runtime::SessionList to_free;
    std::unique_lock<std::mutex> lk(mu);
    if (!model) throw Error(ErrorCode::NotLoaded, loading ? "the model is still loading" : "no model is loaded");
    const runtime::Ticket ticket = admission.ticket(priority, id);
    try {
        admission.enqueue(ticket, static_cast<int32_t>(active.size()), store);
    } catch (const Error&) {
        ++counters.rejected_busy;
        throw;
    }
    auto ready = [&] {
        return !model || stopping || admission.may_start(ticket, static_cast<int32_t>(active.size()), store);
    };
    bool gave_up = false;
    while (!ready()) {
        if (!cancelled) {
            cv.wait(lk);
            continue;
        }
        cv.wait_for(lk, std::chrono::milliseconds(10));
        if (ready()) break;
        lk.unlock();  // the check may take a moment (a socket poll): not under the lock
        bool gone = false;
        try {
            gone = cancelled();
        } catch (...) {
            lk.lock();
            admission.dequeue(ticket);
            cv.notify_all();
            throw;
        }
        lk.lock();
        if (gone) {
            gave_up = true;
            break;
        }
    }
    admission.dequeue(ticket);
    cv.notify_all();  // the next waiter may be able to start too
    if (gave_up) throw Error(ErrorCode::Cancelled, "the request was cancelled while it waited for its turn");
    if (!model || stopping) throw Error(ErrorCode::NotLoaded, "the model was unloaded while the request waited for its turn");
    std::shared_ptr<Conversation> conv = store.take(id, prompt, to_free);
    if (conv->session && !usable(*conv)) {  // made for another model or context size
        to_free.push_back(std::move(conv->session));
        conv->kv_bytes = conv->scratch_bytes = 0;
    }
    conv->model_gen = gen;
    conv->cancel.store(false);
    conv->stuck_reported = false;
    conv->last_progress_ns.store(now_ns());
    active.push_back(conv);
    Turn turn{conv, *model, gen, effective_ctx(), conv->session != nullptr, Clock::now()};
    lk.unlock();
    to_free.clear();
    return turn;
}

void Engine::Impl::release(Turn& turn, bool drop_session) {
    runtime::SessionList to_free;
    {
        std::lock_guard<std::mutex> lk(mu);
        active.erase(std::find(active.begin(), active.end(), turn.conv));
        store.give_back(turn.conv, !drop_session && usable(*turn.conv), to_free);
        cv.notify_all();
    }
    to_free.clear();
}

Session& Engine::Impl::session_for(Turn& turn) {
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

std::shared_ptr<const JsonConstraint> Engine::Impl::constraint_for(const Model& for_model, uint64_t model_gen,
                                                                   const EngineChatRequest& request) {
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
        if (constraint_gen != model_gen) {
            schemas.clear();
            constraint_gen = model_gen;
        }
        auto it = schemas.find(key);
        if (it != schemas.end()) return it->second;
    }
    const Tokenizer& tok = for_model.tokenizer();
    auto built = format == ResponseFormat::JsonObject ? JsonConstraint::any_object(tok, o)
                 : format == ResponseFormat::Grammar  ? JsonConstraint::from_grammar(request.grammar, tok, o)
                                                      : JsonConstraint::from_schema(request.json_schema, tok, o);
    std::lock_guard<std::mutex> lk(mu);
    if (constraint_gen == model_gen) {
        if (schemas.size() >= 32) schemas.clear();
        schemas.emplace(std::move(key), built);
    }
    return built;
}

// ---- EngineTicket ---------------------------------------------------------------------------

struct EngineTicket::State {
    Engine::Impl* d = nullptr;
    bool is_chat = true;
    EngineChatRequest chat;  // when is_chat
    EngineTextRequest text;  // otherwise
    Clock::time_point start;
    Engine::Impl::Snapshot snap;
    PreparedChat prepared;  // the prompt (a text request's: as given) and its tokens
    ChatOptions options;    // a text request's generate options in options.generate
    std::optional<Engine::Impl::Turn> turn;
    bool ran = false;

    State(Engine::Impl& impl, Engine::Impl::Snapshot s) : d(&impl), start(Clock::now()), snap(std::move(s)) {}
    ~State() {
        if (turn) d->release(*turn, false);
    }

    const std::string& conversation_id() const { return is_chat ? chat.conversation_id : text.conversation_id; }
    int32_t priority() const { return is_chat ? chat.priority : text.priority; }
    const CancelCheck& cancelled() const { return is_chat ? chat.cancelled : text.cancelled; }

    /// Renders/tokenizes the prompt and builds the constraint for `s`'s model.
    void prepare_on(const Engine::Impl::Snapshot& s) {
        snap = s;
        const Tokenizer& tok = s.model.tokenizer();
        if (is_chat) {
            options = chat.options;
            options.generate.constraint =
                chat.response_format == ResponseFormat::Text ? nullptr : d->constraint_for(s.model, s.gen, chat);
            prepared = prepare_chat(s.model, chat.messages, options);
        } else {
            options = ChatOptions{};
            options.generate = text.generate;
            prepared = PreparedChat{};
            prepared.prompt = text.prompt;
            if (!text.prompt_tokens.empty()) {
                for (TokenId t : text.prompt_tokens)
                    if (t < 0 || static_cast<size_t>(t) >= tok.vocab_size())
                        throw Error(ErrorCode::InvalidArgument, fmt::format("prompt token id {} is outside the vocabulary [0, {})",
                                                                            t, tok.vocab_size()));
                prepared.tokens = text.prompt_tokens;
            } else {
                TokenizeOptions to;
                to.add_special = text.generate.add_special;
                to.parse_special = text.generate.parse_special;
                prepared.tokens = tok.tokenize(text.prompt, to);
            }
            if (prepared.tokens.empty()) throw Error(ErrorCode::InvalidArgument, "the prompt is empty (no tokens)");
        }
        // At most the room the context leaves after the prompt.
        const int64_t room = static_cast<int64_t>(s.ctx) - static_cast<int64_t>(prepared.tokens.size());
        if (room > 0 && options.generate.max_tokens > room) options.generate.max_tokens = static_cast<int32_t>(room);
    }

    void check_fits() const {
        const size_t n = prepared.tokens.size();
        if (n >= static_cast<size_t>(snap.ctx))
            throw Error(ErrorCode::ContextOverflow,
                        fmt::format("the prompt has {} tokens but the context holds {} (and needs room for the answer)", n,
                                    snap.ctx));
    }
};

EngineTicket::EngineTicket(std::unique_ptr<State> state) noexcept : state_(std::move(state)) {}
EngineTicket::EngineTicket(EngineTicket&&) noexcept = default;
EngineTicket& EngineTicket::operator=(EngineTicket&&) noexcept = default;
EngineTicket::~EngineTicket() = default;

int32_t EngineTicket::prompt_tokens() const noexcept { return static_cast<int32_t>(state_->prepared.tokens.size()); }
int32_t EngineTicket::context_length() const noexcept { return state_->snap.ctx; }
int32_t EngineTicket::max_tokens() const noexcept { return state_->options.generate.max_tokens; }

void EngineTicket::wait_turn() {
    State& s = *state_;
    if (s.turn) return;
    if (s.ran) throw Error(ErrorCode::InvalidArgument, "this EngineTicket has already run");
    if (t_in_callback == s.d) throw Error(ErrorCode::Busy, "an Engine request waits for its turn from a piece callback");
    try {
        s.check_fits();
    } catch (const Error& e) {
        s.d->count_failure(e.code(), e.what());
        throw;
    }
    Engine::Impl::Turn turn = s.d->acquire(s.conversation_id(), s.priority(), s.prepared.tokens, s.cancelled());
    if (turn.gen != s.snap.gen || turn.ctx != s.snap.ctx) {
        // The model was swapped (or the context limit changed) while it waited: prepare again.
        try {
            s.prepare_on(Engine::Impl::Snapshot{turn.model, turn.gen, turn.ctx});
            s.check_fits();
        } catch (const Error& e) {
            s.d->release(turn, false);
            s.d->count_failure(e.code(), e.what());
            throw;
        }
    }
    s.turn.emplace(std::move(turn));
}

EngineChatResult EngineTicket::run(const PieceCallback& on_piece) {
    State& s = *state_;
    if (s.ran) throw Error(ErrorCode::InvalidArgument, "this EngineTicket has already run");
    wait_turn();
    s.ran = true;
    Engine::Impl& d = *s.d;
    Engine::Impl::Turn& turn = *s.turn;
    EngineChatResult result;
    result.queue_ms = ms_between(s.start, turn.admitted);
    result.warm = turn.warm;
    Conversation& conv = *turn.conv;
    {
        std::lock_guard<std::mutex> lk(d.mu);
        ++d.counters.requests;
    }
    // Ends the turn exactly once (the State's destructor releases only a turn still held).
    auto end_turn = [&](bool drop_session) {
        Engine::Impl::Turn t = std::move(*s.turn);
        s.turn.reset();
        d.release(t, drop_session);
    };
    auto fail = [&](ErrorCode code, const std::string& message) {
        d.count_failure(code, message);
        // After an out-of-memory the session is freed so the memory goes back.
        end_turn(code == ErrorCode::OutOfMemory);
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
            end_turn(false);
            result.total_ms = ms_between(s.start, Clock::now());
            return result;
        }
        ChatOptions options = s.options;
        // The deadline counts from the request's start: the time it waited is spent.
        if (options.generate.deadline_s > 0)
            options.generate.deadline_s = std::max(1e-6, options.generate.deadline_s - result.queue_ms / 1000.0);
        Sampler sampler(s.is_chat ? s.chat.sampler : s.text.sampler);
        sampler.add_stage(std::make_shared<Heartbeat>(turn.conv, &session, s.cancelled()));
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
        if (s.is_chat) {
            result.chat = session.chat(s.prepared, sampler, options, wrapped);
        } else {
            result.chat.prompt = s.prepared.prompt;
            result.chat.generation = session.generate(s.prepared.tokens, sampler, options.generate, wrapped);
        }
        if (conv.cancel.load()) result.chat.generation.finish_reason = FinishReason::Cancelled;
    } catch (const Error& e) {
        fail(e.code(), e.what());
        throw;
    } catch (const std::bad_alloc&) {
        fail(ErrorCode::OutOfMemory, "out of memory during a request");
        throw Error(ErrorCode::OutOfMemory, "out of memory during a request");
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
    end_turn(false);
    result.total_ms = ms_between(s.start, Clock::now());
    return result;
}

// ---- Engine: requests ------------------------------------------------------------------------

namespace {
/// A request whose prompt or constraint cannot be made is a failed request.
void prepare_counted(Engine::Impl& d, EngineTicket::State& state) {
    try {
        state.prepare_on(state.snap);
    } catch (const Error& e) {
        d.count_failure(e.code(), e.what());
        throw;
    } catch (const std::bad_alloc&) {
        d.count_failure(ErrorCode::OutOfMemory, "out of memory while preparing a request");
        throw Error(ErrorCode::OutOfMemory, "out of memory while preparing a request");
    }
}
}  // namespace

EngineTicket Engine::prepare(const EngineChatRequest& request) {
    if (request.messages.empty()) throw Error(ErrorCode::InvalidArgument, "the request has no messages");
    auto state = std::make_unique<EngineTicket::State>(*impl_, impl_->snapshot());
    state->is_chat = true;
    state->chat = request;
    prepare_counted(*impl_, *state);
    return EngineTicket(std::move(state));
}

EngineTicket Engine::prepare(const EngineTextRequest& request) {
    auto state = std::make_unique<EngineTicket::State>(*impl_, impl_->snapshot());
    state->is_chat = false;
    state->text = request;
    prepare_counted(*impl_, *state);
    return EngineTicket(std::move(state));
}

EngineChatResult Engine::chat(const EngineChatRequest& request, const PieceCallback& on_piece) {
    if (t_in_callback == impl_.get())
        throw Error(ErrorCode::Busy, "Engine::chat called from a piece callback of the same engine");
    return prepare(request).run(on_piece);
}

EngineChatResult Engine::complete(const EngineTextRequest& request, const PieceCallback& on_piece) {
    if (t_in_callback == impl_.get())
        throw Error(ErrorCode::Busy, "Engine::complete called from a piece callback of the same engine");
    return prepare(request).run(on_piece);
}

std::optional<Model> Engine::model() const {
    std::lock_guard<std::mutex> lk(impl_->mu);
    return impl_->model;
}

}  // namespace genie
