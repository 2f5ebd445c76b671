// Compiles a GBNF grammar (llama.cpp's format, grammars/README.md there) into the
// constraint's rules and sequences (json_grammar.hpp); the automaton walks them as
// Sequence frames. See docs/constraints.md.
#include "constraint/code_point_ranges.hpp"
#include "constraint/json_grammar.hpp"

#include <genie/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace genie::constraint {
namespace {

constexpr uint32_t kUnbounded = UINT32_MAX;

// UTF-8 cannot carry surrogates: they leave every class.
Ranges without_surrogates(const Ranges& r) {
    Ranges out;
    for (const auto& [lo, hi] : r) {
        if (hi < 0xD800 || lo > 0xDFFF) out.emplace_back(lo, hi);
        else {
            if (lo < 0xD800) out.emplace_back(lo, 0xD7FF);
            if (hi > 0xDFFF) out.emplace_back(0xE000, hi);
        }
    }
    return out;
}

class Parser {
public:
    Parser(std::string_view src, Grammar& g) : src_(src), g_(g) {}

    void parse() {
        space(true);
        while (more()) {
            rule();
        }
    }

    uint16_t rule_id(const std::string& name) {
        if (auto it = ids_.find(name); it != ids_.end()) return it->second;
        if (g_.rules.size() >= kNoNode) fail("too many rules");
        g_.rules.push_back(GRule{name, {}, false});
        const auto id = static_cast<uint16_t>(g_.rules.size() - 1);
        ids_[name] = id;
        return id;
    }

    const std::map<std::string, uint16_t>& ids() const { return ids_; }
    const std::vector<char>& defined() const { return defined_; }

private:
    std::string_view src_;
    Grammar& g_;
    size_t i_ = 0;
    std::map<std::string, uint16_t> ids_;
    std::vector<char> defined_;
    int anonymous_ = 0;

    [[noreturn]] void fail(const std::string& what) const {
        size_t line = 1, col = 1;
        for (size_t k = 0; k < i_ && k < src_.size(); ++k) {
            if (src_[k] == '\n') ++line, col = 1;
            else ++col;
        }
        throw Error(ErrorCode::InvalidArgument, fmt::format("GBNF grammar: line {}, column {}: {}", line, col, what));
    }
    bool more() const { return i_ < src_.size(); }
    char peek(size_t k = 0) const { return i_ + k < src_.size() ? src_[i_ + k] : '\0'; }
    static bool word_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    }

    // Spaces, tabs and # comments; newlines too when `newlines`.
    void space(bool newlines) {
        while (more()) {
            const char c = peek();
            if (c == '#') {
                while (more() && peek() != '\n') ++i_;
            } else if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
                ++i_;
            } else {
                break;
            }
        }
    }

    std::string name() {
        const size_t start = i_;
        while (more() && word_char(peek())) ++i_;
        if (i_ == start) fail("expected a rule name");
        return std::string(src_.substr(start, i_ - start));
    }

    uint32_t hex(int digits) {
        uint32_t v = 0;
        for (int k = 0; k < digits; ++k) {
            const char c = peek();
            const int h = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
            if (h < 0) fail("expected a hex digit");
            v = v * 16 + static_cast<uint32_t>(h);
            ++i_;
        }
        return v;
    }

    // One code point of a literal or a class (escapes decoded).
    uint32_t character() {
        if (!more()) fail("unexpected end of the grammar");
        const auto c = static_cast<uint8_t>(src_[i_]);
        if (c == '\\') {
            ++i_;
            const char e = peek();
            ++i_;
            switch (e) {
            case 'x': return hex(2);
            case 'u': return hex(4);
            case 'U': return hex(8);
            case 't': return '\t';
            case 'r': return '\r';
            case 'n': return '\n';
            case '\\': case '"': case '[': case ']': case '-': case '^': return static_cast<uint8_t>(e);
            default: --i_; fail(fmt::format("unknown escape '\\{}'", e));
            }
        }
        ++i_;
        if (c < 0x80) return c;
        int n = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : 1;
        uint32_t cp = c & (0x3Fu >> n);
        while (n-- > 0) {
            if (!more()) fail("the grammar is not valid UTF-8");
            cp = (cp << 6) | (static_cast<uint8_t>(src_[i_++]) & 0x3Fu);
        }
        return cp;
    }

    void rule() {
        const std::string n = name();
        space(false);
        if (src_.substr(i_, 3) != "::=") fail(fmt::format("expected '::=' after rule name '{}'", n));
        i_ += 3;
        space(true);
        const uint16_t id = rule_id(n);
        if (defined_.size() <= id) defined_.resize(id + 1u);
        if (defined_[id]) fail(fmt::format("rule '{}' is defined twice", n));
        defined_[id] = 1;
        alternatives(id, false);
        if (peek() == '\r') ++i_;
        if (more() && peek() != '\n') fail(fmt::format("expected a newline or the end after rule '{}'", n));
        space(true);
    }

    void alternatives(uint16_t rule, bool nested) {
        std::vector<uint16_t> alts;
        alts.push_back(sequence(nested));
        while (peek() == '|') {
            ++i_;
            space(true);
            alts.push_back(sequence(nested));
        }
        g_.rules[rule].alternatives = std::move(alts);
    }

    uint16_t sequence(bool nested) {
        GSequence seq;
        size_t last = SIZE_MAX;  // where the last element (all code points of a literal) starts
        while (more()) {
            const char c = peek();
            const size_t start = seq.elements.size();
            if (c == '"') {
                ++i_;
                while (peek() != '"') {
                    if (!more()) fail("a string literal is not closed");
                    const uint32_t cp = character();
                    seq.elements.push_back(GElement{{{cp, cp}}, kNoNode, 1, 1});
                }
                ++i_;
            } else if (c == '[') {
                ++i_;
                bool negate = false;
                if (peek() == '^') negate = true, ++i_;
                Ranges r;
                while (peek() != ']') {
                    if (!more()) fail("a character class is not closed");
                    const uint32_t lo = character();
                    uint32_t hi = lo;
                    if (peek() == '-' && peek(1) != ']') {
                        ++i_;
                        hi = character();
                        if (hi < lo) fail("a character range's end is before its start");
                    }
                    r.emplace_back(lo, hi);
                }
                ++i_;
                r = normalize(std::move(r));
                seq.elements.push_back(GElement{without_surrogates(negate ? complement(r) : r), kNoNode, 1, 1});
            } else if (c == '.') {
                ++i_;
                seq.elements.push_back(GElement{without_surrogates({{0, kMaxCodePoint}}), kNoNode, 1, 1});
            } else if (word_char(c)) {
                const std::string n = name();
                seq.elements.push_back(GElement{{}, rule_id(n), 1, 1});
            } else if (c == '(') {
                ++i_;
                space(true);
                const uint16_t sub = rule_id(fmt::format("({})#{}", g_.rules.size(), ++anonymous_));
                if (defined_.size() <= sub) defined_.resize(sub + 1u);
                defined_[sub] = 1;
                alternatives(sub, true);
                if (peek() != ')') fail("expected ')'");
                ++i_;
                seq.elements.push_back(GElement{{}, sub, 1, 1});
            } else if (c == '*' || c == '+' || c == '?' || c == '{') {
                if (last == SIZE_MAX) fail(fmt::format("'{}' without anything to repeat", c));
                uint32_t min = 0, max = kUnbounded;
                if (c == '+') min = 1;
                if (c == '?') max = 1;
                ++i_;
                if (c == '{') {
                    space(nested);
                    min = number();
                    max = min;
                    space(nested);
                    if (peek() == ',') {
                        ++i_;
                        space(nested);
                        max = (peek() >= '0' && peek() <= '9') ? number() : kUnbounded;
                        space(nested);
                    }
                    if (peek() != '}') fail("expected '}' after a repetition count");
                    ++i_;
                    if (max < min) fail("a repetition's maximum is below its minimum");
                }
                repeat(seq, last, min, max);
                space(nested);
                continue;
            } else {
                break;
            }
            last = start;
            space(nested);
        }
        g_.sequences.push_back(std::move(seq));
        if (g_.sequences.size() > kNoNode) fail("the grammar is too large");
        return static_cast<uint16_t>(g_.sequences.size() - 1);
    }

    uint32_t number() {
        uint64_t v = 0;
        if (!(peek() >= '0' && peek() <= '9')) fail("expected a number");
        while (peek() >= '0' && peek() <= '9') {
            v = v * 10 + static_cast<uint64_t>(peek() - '0');
            if (v > 1000000) fail("a repetition count is too large");
            ++i_;
        }
        return static_cast<uint32_t>(v);
    }

    // Applies a repetition to the elements from `last` on: one element takes the counts
    // itself (repeating an already repeated one, or a literal of several code points,
    // goes through an anonymous rule).
    void repeat(GSequence& seq, size_t last, uint32_t min, uint32_t max) {
        if (seq.elements.size() - last != 1 || seq.elements[last].min != 1 || seq.elements[last].max != 1) {
            const uint16_t sub = rule_id(fmt::format("(rep)#{}", ++anonymous_));
            if (defined_.size() <= sub) defined_.resize(sub + 1u);
            defined_[sub] = 1;
            GSequence inner;
            inner.elements.assign(seq.elements.begin() + static_cast<std::ptrdiff_t>(last), seq.elements.end());
            seq.elements.resize(last);
            g_.sequences.push_back(std::move(inner));
            g_.rules[sub].alternatives = {static_cast<uint16_t>(g_.sequences.size() - 1)};
            seq.elements.push_back(GElement{{}, sub, 1, 1});
        }
        seq.elements.back().min = min;
        seq.elements.back().max = max;
    }
};

// Checks that make the automaton's walk finite and free of dead ends: every rule defined,
// every rule can finish (productive), no left recursion, no unbounded repetition of
// something that can match the empty string.
void analyze(Grammar& g, const Parser& p) {
    for (const auto& [name, id] : p.ids())
        if (id >= p.defined().size() || !p.defined()[id])
            throw Error(ErrorCode::InvalidArgument, fmt::format("GBNF grammar: rule '{}' is used but not defined", name));
    auto nullable = [&](const GElement& e) { return e.min == 0 || (e.rule != kNoNode && g.rules[e.rule].nullable); };
    for (bool changed = true; changed;) {
        changed = false;
        for (GRule& r : g.rules) {
            if (r.nullable) continue;
            for (uint16_t a : r.alternatives)
                if (std::all_of(g.sequences[a].elements.begin(), g.sequences[a].elements.end(), nullable)) {
                    r.nullable = changed = true;
                    break;
                }
        }
    }
    std::vector<char> productive(g.rules.size());
    auto element_ok = [&](const GElement& e) {
        return e.min == 0 || (e.rule != kNoNode ? productive[e.rule] != 0 : !e.ranges.empty());
    };
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t r = 0; r < g.rules.size(); ++r) {
            if (productive[r]) continue;
            for (uint16_t a : g.rules[r].alternatives)
                if (std::all_of(g.sequences[a].elements.begin(), g.sequences[a].elements.end(), element_ok)) {
                    productive[r] = 1;
                    changed = true;
                    break;
                }
        }
    }
    for (size_t r = 0; r < g.rules.size(); ++r)
        if (!productive[r])
            throw Error(ErrorCode::InvalidArgument,
                        fmt::format("GBNF grammar: rule '{}' matches no finite string", g.rules[r].name));
    // Left recursion: a rule reachable from itself without consuming input.
    const size_t n = g.rules.size();
    std::vector<std::vector<uint16_t>> first(n);
    for (size_t r = 0; r < n; ++r)
        for (uint16_t a : g.rules[r].alternatives)
            for (const GElement& e : g.sequences[a].elements) {
                if (e.rule != kNoNode) {
                    first[r].push_back(e.rule);
                    if (e.max > 1 && g.rules[e.rule].nullable)
                        throw Error(ErrorCode::InvalidArgument,
                                    fmt::format("GBNF grammar: rule '{}' repeats '{}', which can match the empty string",
                                                g.rules[r].name, g.rules[e.rule].name));
                }
                if (!nullable(e)) break;
            }
    std::vector<uint8_t> color(n);  // 0 new, 1 on the stack, 2 done
    std::vector<std::pair<size_t, size_t>> stack;
    for (size_t r0 = 0; r0 < n; ++r0) {
        if (color[r0]) continue;
        stack.emplace_back(r0, 0);
        color[r0] = 1;
        while (!stack.empty()) {
            auto& [r, k] = stack.back();
            if (k == first[r].size()) {
                color[r] = 2;
                stack.pop_back();
                continue;
            }
            const uint16_t next = first[r][k++];
            if (color[next] == 1)
                throw Error(ErrorCode::InvalidArgument,
                            fmt::format("GBNF grammar: rule '{}' is left-recursive", g.rules[next].name));
            if (color[next] == 0) {
                color[next] = 1;
                stack.emplace_back(next, 0);
            }
        }
    }
}

}  // namespace

Grammar compile_gbnf(std::string_view gbnf, std::string_view root_rule) {
    Grammar g;
    Parser p(gbnf, g);
    p.parse();
    const auto it = p.ids().find(std::string(root_rule));
    if (it == p.ids().end() || it->second >= p.defined().size() || !p.defined()[it->second])
        throw Error(ErrorCode::InvalidArgument, fmt::format("GBNF grammar: no rule named '{}' (the start rule)", root_rule));
    analyze(g, p);
    g.root_rule = it->second;
    return g;
}

}  // namespace genie::constraint
