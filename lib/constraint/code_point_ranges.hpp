// Sets of Unicode code points as sorted, disjoint, inclusive [lo, hi] intervals: the
// character classes of GBNF (gbnf.cpp) and of JSON Schema patterns (regex_dfa.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace genie::constraint {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;  // sorted, disjoint, inclusive

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

/// Sorts `r` and merges overlapping and adjacent intervals.
inline Ranges normalize(Ranges r) {
    std::sort(r.begin(), r.end());
    Ranges out;
    for (const auto& [lo, hi] : r) {
        if (!out.empty() && lo <= out.back().second + 1) out.back().second = std::max(out.back().second, hi);
        else out.emplace_back(lo, hi);
    }
    return out;
}

/// The code points 0..kMaxCodePoint not in `r` (which must be normalized).
inline Ranges complement(const Ranges& r) {
    Ranges out;
    uint32_t next = 0;
    for (const auto& [lo, hi] : r) {
        if (lo > next) out.emplace_back(next, lo - 1);
        next = hi + 1;
    }
    if (next <= kMaxCodePoint) out.emplace_back(next, kMaxCodePoint);
    return out;
}

}  // namespace genie::constraint
