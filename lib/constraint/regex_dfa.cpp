// Regular expression -> NFA (Thompson) -> DFA (subset construction over code-point
// intervals) -> dead states removed. See regex_dfa.hpp.
#include "constraint/regex_dfa.hpp"

#include "constraint/code_point_ranges.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <utility>

namespace genie::constraint {
namespace {

constexpr size_t kMaxNfaStates = 60000;
constexpr size_t kMaxDfaStates = 4096;

[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument(what); }

Ranges intersect(const Ranges& a, const Ranges& b) {
    Ranges out;
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        const uint32_t lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
        if (lo <= hi) out.emplace_back(lo, hi);
        (a[i].second < b[j].second) ? ++i : ++j;
    }
    return out;
}

// The code points a JSON string constraint can produce: the short escapes' control
// characters and everything from U+0020 on, surrogates excluded.
const Ranges& producible() {
    static const Ranges r = {{0x08, 0x0A}, {0x0C, 0x0D}, {0x20, 0xD7FF}, {0xE000, kMaxCodePoint}};
    return r;
}

struct RNode {
    enum Kind { Class, Concat, Alt, Repeat } kind = Class;
    Ranges ranges;
    std::vector<RNode> kids;
    int min = 0, max = -1;  // Repeat; -1 = unbounded
};

class Parser {
public:
    explicit Parser(std::string_view p) : p_(p) {}

    RNode parse() {
        RNode r = alternation();
        if (i_ < p_.size()) bad(fmt_at("unexpected ')'"));
        return r;
    }

private:
    std::string_view p_;
    size_t i_ = 0;

    std::string fmt_at(const std::string& what) const { return what + " at offset " + std::to_string(i_) + " of the pattern"; }
    bool more() const { return i_ < p_.size(); }
    char peek() const { return p_[i_]; }

    uint32_t utf8() {
        const auto c = static_cast<uint8_t>(p_[i_++]);
        if (c < 0x80) return c;
        int n = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : 1;
        uint32_t cp = c & (0x3F >> n);
        while (n-- > 0) {
            if (!more()) bad("the pattern is not valid UTF-8");
            cp = (cp << 6) | (static_cast<uint8_t>(p_[i_++]) & 0x3F);
        }
        return cp;
    }

    uint32_t hex(int digits) {
        uint32_t v = 0;
        for (int k = 0; k < digits; ++k) {
            if (!more()) bad(fmt_at("a hex escape is cut short"));
            const char c = p_[i_++];
            const int h = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
            if (h < 0) bad(fmt_at("a bad hex digit"));
            v = v * 16 + static_cast<uint32_t>(h);
        }
        return v;
    }

    // After a backslash: a class escape (\d ...) or one code point.
    Ranges escape() {
        if (!more()) bad("the pattern ends with a backslash");
        const char c = p_[i_++];
        static const Ranges digit = {{'0', '9'}};
        static const Ranges word = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
        static const Ranges space = {{0x09, 0x0D}, {0x20, 0x20}, {0xA0, 0xA0}, {0x2028, 0x2029}, {0xFEFF, 0xFEFF}};
        switch (c) {
        case 'd': return digit;
        case 'w': return word;
        case 's': return space;
        case 'D': return complement(digit);
        case 'W': return complement(word);
        case 'S': return complement(space);
        case 'n': return {{'\n', '\n'}};
        case 'r': return {{'\r', '\r'}};
        case 't': return {{'\t', '\t'}};
        case 'f': return {{'\f', '\f'}};
        case 'v': return {{'\v', '\v'}};
        case '0': return {{0, 0}};
        case 'x': { const uint32_t v = hex(2); return {{v, v}}; }
        case 'u': { const uint32_t v = hex(4); return {{v, v}}; }
        case 'b': case 'B': bad(fmt_at("word boundaries (\\b, \\B) are not supported"));
        default:
            if (c >= '1' && c <= '9') bad(fmt_at("back-references are not supported"));
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) bad(fmt_at(std::string("unknown escape \\") + c));
            --i_;
            const uint32_t cp = utf8();
            return {{cp, cp}};
        }
    }

    Ranges char_class() {  // after '['
        bool negate = false;
        if (more() && peek() == '^') negate = true, ++i_;
        Ranges r;
        bool first = true;
        while (true) {
            if (!more()) bad("a character class '[' is not closed");
            if (peek() == ']' && !first) break;
            first = false;
            Ranges lo;
            if (peek() == '\\') ++i_, lo = escape();
            else { const uint32_t cp = utf8(); lo = {{cp, cp}}; }
            if (lo.size() == 1 && lo[0].first == lo[0].second && i_ + 1 < p_.size() && peek() == '-' && p_[i_ + 1] != ']') {
                ++i_;
                Ranges hi;
                if (peek() == '\\') ++i_, hi = escape();
                else { const uint32_t cp = utf8(); hi = {{cp, cp}}; }
                if (hi.size() != 1 || hi[0].first != hi[0].second) bad(fmt_at("a range ends in a class escape"));
                if (hi[0].first < lo[0].first) bad(fmt_at("a range's end is before its start"));
                r.emplace_back(lo[0].first, hi[0].first);
            } else {
                r.insert(r.end(), lo.begin(), lo.end());
            }
        }
        ++i_;  // ']'
        r = normalize(std::move(r));
        return negate ? complement(r) : r;
    }

    RNode alternation() {
        RNode alt;
        alt.kind = RNode::Alt;
        alt.kids.push_back(concatenation());
        while (more() && peek() == '|') {
            ++i_;
            alt.kids.push_back(concatenation());
        }
        return alt.kids.size() == 1 ? std::move(alt.kids[0]) : alt;
    }

    RNode concatenation() {
        RNode seq;
        seq.kind = RNode::Concat;
        while (more() && peek() != '|' && peek() != ')') seq.kids.push_back(repetition());
        return seq;
    }

    // A {m}, {m,} or {m,n} quantifier at i_ (on '{'); false (i_ unchanged) when it is not one.
    bool braces(int& min, int& max) {
        size_t j = i_ + 1;
        auto number = [&](int& out) {
            const size_t start = j;
            long v = 0;
            while (j < p_.size() && p_[j] >= '0' && p_[j] <= '9') {
                v = v * 10 + (p_[j++] - '0');
                if (v > 100000) bad(fmt_at("a repetition count is too large"));
            }
            out = static_cast<int>(v);
            return j > start;
        };
        if (!number(min)) return false;
        max = min;
        if (j < p_.size() && p_[j] == ',') {
            ++j;
            if (!number(max)) max = -1;
        }
        if (j >= p_.size() || p_[j] != '}') return false;
        i_ = j + 1;
        if (max >= 0 && max < min) bad(fmt_at("a repetition's maximum is below its minimum"));
        return true;
    }

    RNode repetition() {
        RNode atom_node = atom();
        while (more()) {
            int min = 0, max = -1;
            const char c = peek();
            if (c == '*') ++i_;
            else if (c == '+') ++i_, min = 1;
            else if (c == '?') ++i_, max = 1;
            else if (c == '{' && braces(min, max)) {}
            else break;
            if (more() && peek() == '?') ++i_;  // lazy: the same language
            RNode rep;
            rep.kind = RNode::Repeat;
            rep.min = min;
            rep.max = max;
            rep.kids.push_back(std::move(atom_node));
            atom_node = std::move(rep);
        }
        return atom_node;
    }

    RNode atom() {
        RNode n;
        const char c = peek();
        if (c == '(') {
            ++i_;
            if (i_ + 1 < p_.size() && peek() == '?') {
                if (p_[i_ + 1] != ':') bad(fmt_at("lookarounds and named groups are not supported"));
                i_ += 2;
            }
            n = alternation();
            if (!more() || peek() != ')') bad("a group '(' is not closed");
            ++i_;
            return n;
        }
        if (c == '*' || c == '+' || c == '?') bad(fmt_at("a quantifier without anything to repeat"));
        if (c == '^' || c == '$') bad(fmt_at("'^' and '$' are supported only at the start and the end of the pattern"));
        if (c == '[') {
            ++i_;
            n.ranges = char_class();
        } else if (c == '.') {
            ++i_;
            n.ranges = complement({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}});
        } else if (c == '\\') {
            ++i_;
            n.ranges = escape();
        } else {
            const uint32_t cp = utf8();
            n.ranges = {{cp, cp}};
        }
        n.ranges = intersect(n.ranges, producible());
        return n;
    }
};

struct Nfa {
    struct NState {
        std::vector<uint32_t> eps;
        std::vector<std::pair<Ranges, uint32_t>> edges;
    };
    std::vector<NState> states;
    uint32_t add() {
        if (states.size() >= kMaxNfaStates) bad("the pattern is too large (repetition counts expand it)");
        states.emplace_back();
        return static_cast<uint32_t>(states.size() - 1);
    }
    // Returns (start, end) of the fragment of `n`.
    std::pair<uint32_t, uint32_t> build(const RNode& n) {
        const uint32_t s = add(), e = add();
        switch (n.kind) {
        case RNode::Class:
            if (!n.ranges.empty()) states[s].edges.emplace_back(n.ranges, e);
            break;
        case RNode::Concat: {
            uint32_t at = s;
            for (const RNode& k : n.kids) {
                const auto [ks, ke] = build(k);
                states[at].eps.push_back(ks);
                at = ke;
            }
            states[at].eps.push_back(e);
            break;
        }
        case RNode::Alt:
            for (const RNode& k : n.kids) {
                const auto [ks, ke] = build(k);
                states[s].eps.push_back(ks);
                states[ke].eps.push_back(e);
            }
            break;
        case RNode::Repeat: {
            uint32_t at = s;
            for (int k = 0; k < n.min; ++k) {
                const auto [ks, ke] = build(n.kids[0]);
                states[at].eps.push_back(ks);
                at = ke;
            }
            if (n.max < 0) {
                const auto [ks, ke] = build(n.kids[0]);
                states[at].eps.push_back(ks);
                states[ke].eps.push_back(ks);
                states[ke].eps.push_back(e);
                states[at].eps.push_back(e);
            } else {
                for (int k = n.min; k < n.max; ++k) {
                    const auto [ks, ke] = build(n.kids[0]);
                    states[at].eps.push_back(ks);
                    states[at].eps.push_back(e);
                    at = ke;
                }
                states[at].eps.push_back(e);
            }
            break;
        }
        }
        return {s, e};
    }
    std::vector<uint32_t> closure(std::vector<uint32_t> set) const {
        std::vector<char> seen(states.size());
        for (uint32_t x : set) seen[x] = 1;
        for (size_t k = 0; k < set.size(); ++k)
            for (uint32_t y : states[set[k]].eps)
                if (!seen[y]) seen[y] = 1, set.push_back(y);
        std::sort(set.begin(), set.end());
        return set;
    }
};

RNode any_string() {
    RNode any;
    any.ranges = producible();
    RNode rep;
    rep.kind = RNode::Repeat;
    rep.kids.push_back(std::move(any));
    return rep;
}

}  // namespace

int32_t Dfa::next(uint32_t state, uint32_t cp) const {
    const auto& edges = states[state].edges;
    auto it = std::upper_bound(edges.begin(), edges.end(), cp, [](uint32_t v, const Edge& e) { return v < e.lo; });
    if (it == edges.begin()) return -1;
    --it;
    return cp <= it->hi ? static_cast<int32_t>(it->to) : -1;
}

bool Dfa::any_in(uint32_t state, uint32_t lo, uint32_t hi) const {
    for (const Edge& e : states[state].edges)
        if (e.lo <= hi && lo <= e.hi) return true;
    return false;
}

Dfa compile_regex(std::string_view pattern) {
    bool anchored_start = false, anchored_end = false;
    if (!pattern.empty() && pattern.front() == '^') anchored_start = true, pattern.remove_prefix(1);
    if (!pattern.empty() && pattern.back() == '$') {
        size_t backslashes = 0;
        for (size_t k = pattern.size() - 1; k > 0 && pattern[k - 1] == '\\'; --k) ++backslashes;
        if (backslashes % 2 == 0) anchored_end = true, pattern.remove_suffix(1);
    }
    RNode body = Parser(pattern).parse();
    RNode whole;
    whole.kind = RNode::Concat;
    if (!anchored_start) whole.kids.push_back(any_string());
    whole.kids.push_back(std::move(body));
    if (!anchored_end) whole.kids.push_back(any_string());

    Nfa nfa;
    const auto [start, accept] = nfa.build(whole);

    // Subset construction.
    std::map<std::vector<uint32_t>, uint32_t> ids;
    std::vector<std::vector<uint32_t>> sets;
    Dfa d;
    auto id_of = [&](std::vector<uint32_t> set) {
        auto [it, fresh] = ids.emplace(std::move(set), static_cast<uint32_t>(sets.size()));
        if (fresh) {
            if (sets.size() >= kMaxDfaStates) bad("the pattern is too complex (its automaton has too many states)");
            sets.push_back(it->first);
            d.states.emplace_back();
        }
        return it->second;
    };
    id_of(nfa.closure({start}));
    for (size_t k = 0; k < sets.size(); ++k) {
        const std::vector<uint32_t> set = sets[k];
        d.states[k].accepting = std::binary_search(set.begin(), set.end(), accept);
        std::vector<uint32_t> cuts;
        for (uint32_t x : set)
            for (const auto& [ranges, to] : nfa.states[x].edges)
                for (const auto& [lo, hi] : ranges) cuts.push_back(lo), cuts.push_back(hi + 1);
        std::sort(cuts.begin(), cuts.end());
        cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
        for (size_t c = 0; c + 1 < cuts.size(); ++c) {
            const uint32_t lo = cuts[c], hi = cuts[c + 1] - 1;
            std::vector<uint32_t> targets;
            for (uint32_t x : set)
                for (const auto& [ranges, to] : nfa.states[x].edges)
                    for (const auto& [rlo, rhi] : ranges)
                        if (rlo <= lo && hi <= rhi) targets.push_back(to);
            if (targets.empty()) continue;
            std::sort(targets.begin(), targets.end());
            targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
            const uint32_t to = id_of(nfa.closure(std::move(targets)));
            auto& edges = d.states[k].edges;
            if (!edges.empty() && edges.back().to == to && edges.back().hi + 1 == lo) edges.back().hi = hi;
            else edges.push_back(Dfa::Edge{lo, hi, to});
        }
    }

    // Remove the states that cannot reach an accepting one.
    const size_t n = d.states.size();
    std::vector<char> live(n);
    for (size_t k = 0; k < n; ++k) live[k] = d.states[k].accepting;
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t k = 0; k < n; ++k) {
            if (live[k]) continue;
            for (const auto& e : d.states[k].edges)
                if (live[e.to]) {
                    live[k] = 1;
                    changed = true;
                    break;
                }
        }
    }
    if (!live[0]) bad("the pattern matches no string a JSON string constraint can produce");
    std::vector<uint32_t> renumber(n);
    Dfa out;
    for (size_t k = 0; k < n; ++k)
        if (live[k]) renumber[k] = static_cast<uint32_t>(out.states.size()), out.states.emplace_back();
    for (size_t k = 0; k < n; ++k) {
        if (!live[k]) continue;
        Dfa::DState& o = out.states[renumber[k]];
        o.accepting = d.states[k].accepting;
        for (const auto& e : d.states[k].edges) {
            if (!live[e.to]) continue;
            const uint32_t to = renumber[e.to];
            if (!o.edges.empty() && o.edges.back().to == to && o.edges.back().hi + 1 == e.lo) o.edges.back().hi = e.hi;
            else o.edges.push_back(Dfa::Edge{e.lo, e.hi, to});
        }
    }
    return out;
}

std::string format_pattern(std::string_view format) {
    static const std::string date = "[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])";
    static const std::string time =
        "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])";
    if (format == "date") return "^" + date + "$";
    if (format == "time") return "^" + time + "$";
    if (format == "date-time") return "^" + date + "T" + time + "$";
    if (format == "uuid") return "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";
    return "";
}

}  // namespace genie::constraint
