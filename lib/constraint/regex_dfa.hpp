// A regular expression (the subset JSON-schema `pattern`s use, as llama.cpp's
// json-schema-to-grammar reads them) compiled to a DFA over Unicode code points. Used for
// `pattern` and the string `format`s (date, time, date-time, uuid). See docs/constraints.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace genie::constraint {

/// A deterministic automaton over code points. State 0 is the start; every state can
/// still reach an accepting state (dead states are removed, with the transitions into them).
struct Dfa {
    struct Edge {
        uint32_t lo = 0, hi = 0;  // code points, inclusive
        uint32_t to = 0;
    };
    struct DState {
        std::vector<Edge> edges;  // sorted by lo, disjoint
        bool accepting = false;
    };
    std::vector<DState> states;

    /// The next state on code point `cp`, or -1 when there is none.
    int32_t next(uint32_t state, uint32_t cp) const;
    /// True when some code point in [lo, hi] has a transition from `state`.
    bool any_in(uint32_t state, uint32_t lo, uint32_t hi) const;
};

/// Compiles `pattern` with JSON-schema semantics (a search: unless it starts with '^' /
/// ends with '$' it may match anywhere in the string). Only the code points a JSON string
/// constraint can produce take part (control characters other than \b \f \n \r \t are
/// never produced). Supported: literals, '.', classes `[...]` / `[^...]` with ranges and
/// escapes, `\d \w \s \D \W \S`, groups `(...)` / `(?:...)`, '|', `* + ?`, `{m}`,
/// `{m,}`, `{m,n}`. Throws std::invalid_argument naming the problem (the caller adds the
/// schema path).
Dfa compile_regex(std::string_view pattern);

/// The pattern (anchored, for compile_regex) of a string `format`, or "" when the format is
/// not one the constraint enforces.
std::string format_pattern(std::string_view format);

}  // namespace genie::constraint
