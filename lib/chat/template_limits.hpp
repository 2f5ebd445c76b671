// Test hook for the chat-template renderer's limits: the fuzz target lowers them so that
// one input costs milliseconds (the defaults let a template run 1 M loop iterations, 50 M
// steps and 256 MB of strings, seconds under ASan), while the limits stay under test.
#pragma once

#include <cstddef>
#include <cstdint>

namespace genie::detail {

/// Every render from now on uses these limits; 0 keeps the default of that limit.
/// Thread-safe (relaxed atomics); for tests only.
void set_template_limits_for_testing(uint64_t max_loop_iterations, uint64_t max_steps,
                                     size_t max_string_bytes_total) noexcept;

}  // namespace genie::detail
