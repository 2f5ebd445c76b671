// genie-server: admission for /tokenize.
#include "tokenize_gate.hpp"

namespace genie::server {

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
