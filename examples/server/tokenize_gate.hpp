// genie-server: admission for work outside the engine (/tokenize).
#pragma once

#include <condition_variable>
#include <mutex>

namespace genie::server {

/// At most `running` at once, at most `max_waiting` waiting; beyond that the caller answers
/// 503. So the memory and CPU that such requests take are bounded like the generations'.
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
