#include "core/fault_injection.hpp"

#include <genie/error.hpp>

#include <atomic>
#include <string>

namespace genie::detail {

namespace {
std::atomic<int> g_countdown{0};  // 0 = disarmed; k > 0 = the k-th next call fails
}  // namespace

void set_alloc_failure_for_testing(int n) noexcept { g_countdown.store(n > 0 ? n : 0); }

void inject_alloc_failure(std::string_view what) {
    int left = g_countdown.load(std::memory_order_relaxed);
    while (left > 0) {
        if (g_countdown.compare_exchange_weak(left, left - 1)) {
            if (left == 1)
                throw Error(ErrorCode::OutOfMemory,
                            "cannot allocate the " + std::string(what) + ": out of memory (injected failure)");
            return;
        }
    }
}

}  // namespace genie::detail
