// Engine's admission: priority order and the bounded waiting queue.
#include "runtime/admission.hpp"

#include <genie/error.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace genie::runtime {

bool Admission::may_start(const Ticket& t, int32_t running, const ConversationStore& store) const {
    if (running >= max_concurrent_ || !store.idle(t.conversation)) return false;
    for (const Ticket* w : waiting_)
        if (w != &t && store.idle(w->conversation) && ahead(*w, t)) return false;
    return true;
}

void Admission::enqueue(const Ticket& t, int32_t running, const ConversationStore& store) {
    if (max_queued_ >= 0 && waiting() >= max_queued_ && !may_start(t, running, store))
        throw Error(ErrorCode::Busy, fmt::format("the engine is busy: {} request(s) run and {} wait (max_queued {})",
                                                 running, waiting(), max_queued_));
    waiting_.push_back(&t);
}

void Admission::dequeue(const Ticket& t) {
    auto it = std::find(waiting_.begin(), waiting_.end(), &t);
    if (it != waiting_.end()) waiting_.erase(it);
}

}  // namespace genie::runtime
