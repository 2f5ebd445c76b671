// genie-server: the --parallel N generation slots. Each slot owns a Session (its KV
// cache) over the one shared Model; a request takes a free slot or waits in a bounded
// queue. A slot remembers the conversation_id it last served, so the next turn of that
// conversation lands on the same KV cache (prefix reuse); otherwise the least recently
// used free slot is taken.
#pragma once

#include <genie/session.hpp>

#include <condition_variable>
#include <deque>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace genie::server {

struct Slot {
    int id = 0;
    std::unique_ptr<Session> session;
    std::string conversation;  ///< the conversation it last served ("" = none)
    uint64_t last_used = 0;
    bool busy = false;
};

class SlotPool {
public:
    SlotPool(std::vector<std::unique_ptr<Session>> sessions, int max_waiting);

    /// Returns the slot to the pool when destroyed.
    class Lease {
    public:
        Lease(SlotPool* pool, Slot* slot) : pool_(pool), slot_(slot) {}
        Lease(const Lease&) = delete;
        Lease& operator=(const Lease&) = delete;
        ~Lease();
        Slot& slot() const { return *slot_; }

    private:
        SlotPool* pool_;
        Slot* slot_;
    };

    enum class Outcome { Acquired, QueueFull, Abandoned };
    /// Takes a free slot (preferring the one that served `conversation`), waiting in FIFO
    /// order while none is free. QueueFull when `max_waiting` requests already wait;
    /// Abandoned when `abandoned()` (polled every 50 ms while waiting) turns true.
    Outcome acquire(const std::string& conversation, const std::function<bool()>& abandoned,
                    std::unique_ptr<Lease>& lease);

    int size() const { return static_cast<int>(slots_.size()); }
    int busy() const;
    int waiting() const;

private:
    void release(Slot* slot);

    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::vector<Slot> slots_;
    int max_waiting_;
    std::deque<uint64_t> queue_;  // tickets of the waiting requests, first come first
    uint64_t next_ticket_ = 0;
    uint64_t clock_ = 0;
};

/// Admission for work outside the slots (/tokenize): at most `running` at once, at most
/// `max_waiting` waiting; beyond that the caller answers 503. So the memory and CPU that
/// such requests take are bounded like the generations'.
class TokenizeGate {
public:
    TokenizeGate(int running, int max_waiting) : free_(running), max_waiting_(max_waiting) {}
    /// True once admitted (call leave() after); false when too many already wait.
    bool enter();
    void leave();

private:
    std::mutex mu_;
    std::condition_variable cv_;
    int free_;
    int max_waiting_;
    int waiting_ = 0;
};

}  // namespace genie::server
