// genie-server: generation slots (see slots.hpp).
#include "slots.hpp"

#include <algorithm>
#include <chrono>

namespace genie::server {

SlotPool::SlotPool(std::vector<std::unique_ptr<Session>> sessions, int max_waiting) : max_waiting_(max_waiting) {
    slots_.resize(sessions.size());
    for (size_t i = 0; i < sessions.size(); ++i) {
        slots_[i].id = static_cast<int>(i);
        slots_[i].session = std::move(sessions[i]);
    }
}

SlotPool::Lease::~Lease() { pool_->release(slot_); }

SlotPool::Outcome SlotPool::acquire(const std::string& conversation, const std::function<bool()>& abandoned,
                                    std::unique_ptr<Lease>& lease) {
    std::unique_lock lock(mu_);
    auto pick = [&]() -> Slot* {
        Slot* best = nullptr;
        for (Slot& s : slots_) {
            if (s.busy) continue;
            if (!conversation.empty() && s.conversation == conversation) return &s;
            if (!best || s.last_used < best->last_used) best = &s;
        }
        return best;
    };
    // First come, first served: a request waits while others queued before it, even if a
    // slot is free (the one at the front takes it).
    Slot* slot = queue_.empty() ? pick() : nullptr;
    if (!slot) {
        if (static_cast<int>(queue_.size()) >= max_waiting_) return Outcome::QueueFull;
        const uint64_t ticket = ++next_ticket_;
        queue_.push_back(ticket);
        while (!(queue_.front() == ticket && (slot = pick()))) {
            cv_.wait_for(lock, std::chrono::milliseconds(50));
            if (abandoned && abandoned()) {
                queue_.erase(std::find(queue_.begin(), queue_.end(), ticket));
                cv_.notify_all();  // the next in line may be at the front now
                return Outcome::Abandoned;
            }
        }
        queue_.pop_front();
        cv_.notify_all();  // another slot may be free for the next in line
    }
    slot->busy = true;
    slot->last_used = ++clock_;
    if (slot->conversation != conversation) {
        slot->conversation = conversation;
        // A different conversation: the cache keeps only what it shares with the new prompt
        // (Session's prefix reuse), so nothing has to be cleared here.
    }
    lease = std::make_unique<Lease>(this, slot);
    return Outcome::Acquired;
}

void SlotPool::release(Slot* slot) {
    {
        std::lock_guard lock(mu_);
        slot->busy = false;
    }
    cv_.notify_all();
}

int SlotPool::busy() const {
    std::lock_guard lock(mu_);
    int n = 0;
    for (const Slot& s : slots_) n += s.busy ? 1 : 0;
    return n;
}

int SlotPool::waiting() const {
    std::lock_guard lock(mu_);
    return static_cast<int>(queue_.size());
}

bool TokenizeGate::enter() {
    std::unique_lock lock(mu_);
    if (free_ == 0 && waiting_ >= max_waiting_) return false;
    ++waiting_;
    cv_.wait(lock, [this] { return free_ > 0; });
    --waiting_;
    --free_;
    return true;
}

void TokenizeGate::leave() {
    {
        std::lock_guard lock(mu_);
        ++free_;
    }
    cv_.notify_one();
}

}  // namespace genie::server
