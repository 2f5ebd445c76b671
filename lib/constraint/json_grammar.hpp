// The constraint's internals: the compiled grammar (JSON-schema nodes and GBNF rules), the
// byte-level pushdown automaton that walks it (State + step, forking into a StateSet where
// the grammar is ambiguous), the token trie and the mask computation. See docs/constraints.md.
#pragma once

#include <genie/constraint.hpp>
#include <genie/tokenizer.hpp>

#include "constraint/regex_dfa.hpp"

#include <array>
#include <cstdint>
#include <cstring>
#include <list>
#include <memory>
#include <span>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace genie {
class Sampler;
}

namespace genie::constraint {

// JSON types as bits of Node::types.
enum : uint8_t {
    kObject = 1,
    kArray = 2,
    kString = 4,
    kNumber = 8,
    kInteger = 16,
    kBoolean = 32,
    kNull = 64,
    kAnyType = 127,
};

inline constexpr uint16_t kNoNode = 0xFFFF;
inline constexpr int kMaxProperties = 64;
inline constexpr int kMaxLiterals = 64;
inline constexpr int kMaxFrames = 64;  // root + containers / rule invocations + one scalar
inline constexpr uint32_t kMaxStates = 64;  // states of one StateSet (more are dropped)
inline constexpr int kMaxSchemaDepth = 16;
// Digits per number part. Exponents stop at 99, so every number fits a double (nlohmann
// refuses 1e417).
inline constexpr uint32_t kMaxIntDigits = 15, kMaxFracDigits = 15, kMaxExpDigits = 2;

struct Property {
    std::string key;  // the key as written between the quotes (JSON-escaped)
    uint16_t node = kNoNode;
};

/// One schema node. A value matches when it is a literal of `literals` (enum/const
/// only), or its type is in `types` and its contents match the per-type fields.
struct Node {
    uint8_t types = 0;
    bool is_enum = false;                // only `literals` are allowed
    std::vector<std::string> literals;   // compact JSON texts (enum/const, or true/false/null)
    // object
    std::vector<Property> properties;
    uint64_t required = 0;               // bits over `properties`
    uint16_t additional = kNoNode;       // schema of other keys; kNoNode = not allowed
    // array
    uint16_t items = kNoNode;
    uint32_t min_items = 0, max_items = UINT32_MAX;
    // string
    uint32_t min_length = 0, max_length = UINT32_MAX;
    std::vector<uint16_t> prefix_items;  // prefixItems: the schemas of the first items
    // string: index into Grammar::dfas of its pattern / format (-1: none)
    int32_t dfa = -1;
    // number / integer bounds (-inf / +inf when absent); integer nodes hold closed integer bounds
    bool bounded = false;
    long double lo = 0, hi = 0;
    bool lo_open = false, hi_open = false;
    // anyOf / oneOf: the value matches one of these nodes (the automaton forks)
    std::vector<uint16_t> alternatives;
    // untyped ("any") values: nesting level of this node (objects/arrays inside have level+1)
    bool any = false;
    // frames a value of this node needs at least (computed after compiling; for $ref cycles)
    uint8_t min_frames = 1;
};

/// GBNF: one element of a sequence, repeated min..max times (max UINT32_MAX: unbounded).
struct GElement {
    std::vector<std::pair<uint32_t, uint32_t>> ranges;  // code points (no surrogates); empty for a rule
    uint16_t rule = kNoNode;                             // a rule reference
    uint32_t min = 1, max = 1;
};
/// GBNF: one alternative of a rule.
struct GSequence {
    std::vector<GElement> elements;
};
/// GBNF: a rule, its alternatives (indices into Grammar::sequences).
struct GRule {
    std::string name;
    std::vector<uint16_t> alternatives;
    bool nullable = false;  // matches the empty string
};

enum class FrameKind : uint8_t { Root, Object, Array, String, Number, Literal, Sequence };

/// One level of the automaton's stack. Plain bytes (every field zeroed when unused) so a
/// state can be hashed and compared with memcmp.
struct Frame {
    uint64_t set = 0;    // Object: properties seen; Literal: alternatives still possible;
                         // String with a pattern: DFA state; bounded Number: integer part
    uint64_t cand = 0;   // Object key: properties whose key starts with the typed bytes;
                         // pattern String / Sequence: code point so far; bounded Number: fraction
    uint32_t count = 0;  // Array: items; String: characters (when limited); Number: digits of the part;
                         // Object: key characters; Sequence: repetitions of the current element
    uint16_t node = kNoNode;  // Sequence: index into Grammar::sequences
    uint16_t pos = 0;    // Literal: bytes matched; Object key: bytes typed; Sequence: element;
                         // bounded Number: fraction digits
    uint16_t uval = 0;   // string lexer: \u value so far
    FrameKind kind = FrameKind::Root;
    uint8_t phase = 0;
    uint8_t ws = 0;      // whitespace bytes in the current gap
    uint8_t prop = 0;    // Object: property of the current value (0xFF: additional); Number: 1 = integer only
    uint8_t smode = 0;   // string lexer mode
    uint8_t sneed = 0;   // string lexer: continuation bytes / hex digits remaining
    uint8_t slo = 0, shi = 0;  // string lexer: range of the next UTF-8 continuation byte
    uint8_t sflags = 0;  // string lexer: 1 = a low surrogate escape must follow; Number: 1 = negative
    uint8_t depth = 0;   // containers below (for the nesting limit of untyped values)
    uint8_t pad[4] = {};
};
static_assert(sizeof(Frame) == 40, "Frame must have no padding");

struct State {
    uint8_t size = 0;
    std::array<Frame, kMaxFrames> frames{};
    Frame& top() { return frames[size - 1]; }
    const Frame& top() const { return frames[size - 1]; }
    std::string_view key() const {
        return {reinterpret_cast<const char*>(frames.data()), sizeof(Frame) * size};
    }
    void copy_from(const State& o) {
        size = o.size;
        std::memcpy(frames.data(), o.frames.data(), sizeof(Frame) * o.size);
    }
};

/// A set of automaton states (the grammar's ambiguity: anyOf alternatives, GBNF
/// alternatives and repetitions). `n` states in use; the vector keeps its capacity so the
/// mask walk does not allocate.
struct StateSet {
    std::vector<State> states;
    uint32_t n = 0;
    State& push() {
        if (n == states.size()) states.emplace_back();
        return states[n++];
    }
    void clear() { n = 0; }
    bool empty() const { return n == 0; }
    void assign(const StateSet& o) {
        clear();
        for (uint32_t i = 0; i < o.n; ++i) push().copy_from(o.states[i]);
    }
};

/// The compiled grammar (a JSON schema's nodes, or GBNF rules) and the automaton over it.
struct Grammar {
    std::vector<Node> nodes;
    std::vector<Dfa> dfas;
    std::vector<GRule> rules;
    std::vector<GSequence> sequences;
    uint16_t root = kNoNode;       // JSON: the root node
    uint16_t root_rule = kNoNode;  // GBNF: the root rule (then `nodes` is empty)
    int32_t max_whitespace = 2;
    int32_t max_nesting = 8;
    uint32_t key_limit = 0;  // characters of an additional property's key; 0 = unlimited

    /// The length budget is spent (JsonConstraintOptions::close_after_bytes): the root
    /// frame's `prop` is 1 and the automaton only allows what the value still needs.
    static bool closing(const State& s) { return s.frames[0].prop != 0; }
    static void set_closing(State& s) { s.frames[0].prop = 1; }

    State initial() const;
    /// Advances every state of `in` by one byte into `out` (forks included, duplicates
    /// removed). False when no state takes the byte (`out` is then empty).
    bool advance(const StateSet& in, uint8_t c, StateSet& out) const;
    /// Advances by one byte; false (state unspecified) when the byte is not allowed. Where
    /// the grammar is ambiguous, the other successors go to the fork sink of advance()
    /// (call step only through advance, or with a sink set).
    bool step(State& s, uint8_t c) const;
    /// True when the bytes so far are a complete value.
    bool complete(const State& s) const;
    bool complete(const StateSet& s) const;

    // helpers
    bool start_value(State& s, uint16_t node, uint8_t c) const;
    bool lit_step(State& s, uint8_t c) const;
    bool num_step(State& s, uint8_t c) const;
    bool str_step(State& s, uint8_t c) const;
    bool obj_step(State& s, uint8_t c) const;
    bool arr_step(State& s, uint8_t c) const;
    /// One state inside a JSON string without limits or pattern, where a printable ASCII
    /// byte other than '"' and '\\' leaves the state as it is (the mask walk's fast path).
    bool plain_string(const StateSet& set) const;
    bool seq_step(State& s, uint8_t c) const;
    bool start_rule(State& s, uint16_t rule, uint8_t c) const;
    bool seq_can_finish(const Frame& f, bool child_pending) const;
    void count_repetition(Frame& f) const;
    bool pattern_step(State& s, uint8_t c) const;
    bool key_possible(const Frame& f) const;
    void child_done(State& s) const;
    // Tries `n` ways on copies of `s`: the first that succeeds lands in `s`, the others go to
    // the fork sink. `way(State&, k)` must be a tail call of the step.
    template <class Way>
    bool fork(State& s, size_t n, Way&& way) const;
};

/// Compiles a JSON schema text (throws genie::Error InvalidArgument).
Grammar compile_schema(std::string_view schema_json, const JsonConstraintOptions& options);
/// Compiles a GBNF grammar text (llama.cpp's format; throws genie::Error InvalidArgument).
Grammar compile_gbnf(std::string_view gbnf, std::string_view root_rule = "root");
/// True when `text` is a complete value of `g` (no tokenizer needed: validation).
bool accepts(const Grammar& g, std::string_view text);
/// The grammar of any value (object_only: any object).
Grammar any_grammar(bool object_only, const JsonConstraintOptions& options);

/// A byte trie over the vocabulary's token texts, nodes in preorder: the subtree of node
/// i is [i, end[i]). Node 0 is the root (empty prefix).
struct TokenTrie {
    struct TrieNode {
        uint32_t end = 0;
        uint32_t tok_begin = 0, tok_end = 0;  // into `tokens`
        uint16_t depth = 0;
        uint8_t byte = 0;
    };
    std::vector<TrieNode> nodes;
    std::vector<TokenId> tokens;
    std::vector<std::string> pieces;  // per token id (empty: never allowed as text)
    std::vector<TokenId> eog;
    size_t vocab_size = 0;
    uint16_t max_depth = 0;

    explicit TokenTrie(const Tokenizer& tok);
};

using Mask = std::vector<uint64_t>;

/// Computes the mask of `s` by walking the trie and the automaton together, pruning a
/// subtree as soon as its prefix is rejected. `scratch` holds one State per trie depth.
void compute_mask(const Grammar& g, const TokenTrie& trie, const StateSet& s, Mask& out, std::vector<StateSet>& scratch);

/// The generate loop's step: masks `logits` into `scratch`, samples, falls back to the
/// best allowed token if the sampler picked a masked one, and advances `matcher`.
/// Returns kNoToken when no token is allowed (the value is complete and the vocabulary
/// has no EOG token).
TokenId sample_constrained(JsonMatcher& matcher, Sampler& sampler, std::span<const float> logits,
                           std::vector<float>& scratch);

}  // namespace genie::constraint

namespace genie {
struct JsonConstraint::Impl {
    Tokenizer tokenizer;
    JsonConstraintOptions options;
    constraint::Grammar grammar;
    constraint::TokenTrie trie;

    // The mask cache: state bytes -> mask (least recently used dropped first).
    mutable std::mutex mutex;
    mutable std::list<std::pair<std::string, std::shared_ptr<const constraint::Mask>>> lru;
    mutable std::unordered_map<std::string_view,
                               std::list<std::pair<std::string, std::shared_ptr<const constraint::Mask>>>::iterator>
        index;

    Impl(const Tokenizer& t, const JsonConstraintOptions& o, constraint::Grammar g)
        : tokenizer(t), options(o), grammar(std::move(g)), trie(t) {}
    std::shared_ptr<const constraint::Mask> mask(const constraint::StateSet& s) const;
};
}  // namespace genie
