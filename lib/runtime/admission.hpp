// Engine's admission (docs/engine.md): which waiting request starts next (priority, then
// arrival; a request of a running conversation waits for it) and the bound on how many
// may wait (beyond it: ErrorCode::Busy at once). Not thread-safe: Engine::Impl's lock
// guards every call.
#pragma once

#include "runtime/conversation_store.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace genie::runtime {

/// A request's place in the queue.
struct Ticket {
    int32_t priority = 0;
    uint64_t seq = 0;  // arrival order
    std::string conversation;
};

class Admission {
public:
    /// `max_queued` < 0: no bound on waiting requests.
    Admission(int32_t max_concurrent, int32_t max_queued) : max_concurrent_(max_concurrent), max_queued_(max_queued) {}

    Ticket ticket(int32_t priority, std::string conversation) {
        return Ticket{priority, next_seq_++, std::move(conversation)};
    }

    /// Whether `t` may start now: a running place is free, its conversation is idle and no
    /// waiting request that could start is ahead of it.
    bool may_start(const Ticket& t, int32_t running, const ConversationStore& store) const;

    /// Adds `t` to the waiting requests. Throws Busy when it cannot start now and
    /// max_queued requests already wait.
    void enqueue(const Ticket& t, int32_t running, const ConversationStore& store);
    void dequeue(const Ticket& t);

    int32_t waiting() const { return static_cast<int32_t>(waiting_.size()); }

private:
    static bool ahead(const Ticket& a, const Ticket& b) {
        return a.priority != b.priority ? a.priority > b.priority : a.seq < b.seq;
    }

    int32_t max_concurrent_;
    int32_t max_queued_;
    std::vector<const Ticket*> waiting_;
    uint64_t next_seq_ = 0;
};

}  // namespace genie::runtime
