// Fault injection for tests: makes a chosen allocation site fail as if memory ran out,
// so the error paths (OutOfMemory, cleanup, the object still usable) can be tested
// without exhausting the machine. Off unless a test arms it; one relaxed atomic load per
// site otherwise.
#pragma once

#include <string_view>

namespace genie::detail {

/// Arms the hook: the n-th call of inject_alloc_failure() from now on (n >= 1) throws,
/// then the hook disarms itself. n <= 0 disarms it. Thread-safe.
void set_alloc_failure_for_testing(int n) noexcept;

/// Called at an allocation site (`what` names it for the message): throws genie::Error
/// OutOfMemory when the armed failure is due, otherwise does nothing.
void inject_alloc_failure(std::string_view what);

}  // namespace genie::detail
