// Engine's kept sessions (docs/engine.md): one per conversation id, least recently used
// evicted first, plus the spare sessions of one-off requests (EngineOptions::
// keep_one_off_sessions), all within max_conversations. Not thread-safe: Engine::Impl's
// lock guards every call. Sessions leave through a SessionList so the caller frees them
// after releasing that lock.
#pragma once

#include <genie/session.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace genie::runtime {

/// One conversation's state: its session (KV cache) and what the engine's watchdog and
/// cancellation need while a request of it runs.
struct Conversation {
    std::string id;  // "" for a one-off request
    std::unique_ptr<Session> session;
    uint64_t model_gen = 0;  // the serving model the session was made for
    bool in_use = false;
    uint64_t last_used = 0;  // LRU tick
    uint64_t kv_bytes = 0;   // of `session`, recorded under the engine's lock
    uint64_t scratch_bytes = 0;
    std::atomic<int64_t> last_progress_ns{0};
    std::atomic<bool> cancel{false};
    bool stuck_reported = false;
};

/// Sessions taken out of the store, to be freed once the engine's lock is released.
using SessionList = std::vector<std::unique_ptr<Session>>;

class ConversationStore {
public:
    /// At most `max_kept` conversations (and spares) are kept; `keep_spares`: one-off
    /// requests leave their session as a spare.
    ConversationStore(int32_t max_kept, bool keep_spares) : max_kept_(max_kept), keep_spares_(keep_spares) {}

    /// Whether a request of conversation `id` can start now ("" always: one-offs never wait
    /// for each other).
    bool idle(std::string_view id) const;

    /// The conversation a turn runs on, marked in use. A named one is the kept one or a new
    /// one (idle spares, then idle conversations, evicted least recently used first to make
    /// room). A one-off ("") takes the spare whose cached tokens share the longest prefix
    /// with `prompt` (llama-server's slot choice by prompt similarity), else a new one.
    std::shared_ptr<Conversation> take(const std::string& id, std::span<const TokenId> prompt, SessionList& to_free);

    /// Ends a turn: the conversation becomes idle. Its session is kept when `usable` and the
    /// conversation is still kept (a named one) or there is room for a spare (a one-off);
    /// otherwise it goes to `to_free`.
    void give_back(const std::shared_ptr<Conversation>& conv, bool usable, SessionList& to_free);

    /// Moves the sessions of idle conversations and spares for which `unusable` holds to
    /// `to_free` (a conversation stays, to start cold next time; a spare goes).
    void drop_unusable(const std::function<bool(const Conversation&)>& unusable, SessionList& to_free);

    /// Frees idle sessions except the `keep_idle` most recently used (their conversations
    /// are forgotten); returns the bytes released.
    uint64_t trim(int32_t keep_idle, SessionList& to_free);

    /// Forgets one conversation (a running one's session is freed when its turn ends).
    void forget(std::string_view id, SessionList& to_free);

    /// Forgets everything idle and running (running sessions are freed when their turns end).
    void clear(SessionList& to_free);

    /// Named conversations that hold a session.
    int32_t conversations_with_session() const;

    /// Calls `f` on every kept conversation and spare.
    void for_each(const std::function<void(const Conversation&)>& f) const;

private:
    int32_t kept() const { return static_cast<int32_t>(named_.size() + spares_.size()); }
    /// Evicts one idle entry (the oldest spare, else the least recently used idle
    /// conversation); false when everything kept is running.
    bool evict_one(SessionList& to_free);

    std::map<std::string, std::shared_ptr<Conversation>, std::less<>> named_;
    std::vector<std::shared_ptr<Conversation>> spares_;  // idle one-off sessions
    int32_t max_kept_;
    bool keep_spares_;
    uint64_t tick_ = 0;
};

}  // namespace genie::runtime
