// The byte-level pushdown automaton of the constraint (JSON-schema nodes and GBNF
// sequences); the token trie and the mask walk are in token_mask.cpp (docs/constraints.md).
//
// Invariant: step() only accepts a byte when the resulting state can still be completed
// to an accepted value. So a token is allowed exactly when every one of its bytes steps,
// and the trie walk can drop a whole subtree at the first rejected byte. Where the grammar
// is ambiguous (anyOf, GBNF alternatives and repetitions) a state forks: one successor stays
// in place, the others go to the thread's fork sink, and advance() gathers them.
#include "constraint/json_grammar.hpp"

#include <algorithm>
#include <bit>
#include <deque>
#include <numeric>

namespace genie::constraint {
namespace {

enum RootPhase : uint8_t { kRootBefore = 0, kRootIn = 1, kRootDone = 2 };
enum ObjPhase : uint8_t { kObjOpen = 0, kObjKey, kObjAfterKey, kObjBeforeValue, kObjIn, kObjAfterValue, kObjAfterComma };
enum ArrPhase : uint8_t { kArrOpen = 0, kArrIn, kArrAfterValue, kArrAfterComma };
enum NumPhase : uint8_t { kNStart = 0, kNMinus, kNZero, kNInt, kNDot, kNFrac, kNExp, kNExpSign, kNExpDigits };
enum StrMode : uint8_t { kSNormal = 0, kSEsc, kSHex, kSUtf8, kSLowBackslash, kSLowU };
enum LexResult { kLexReject, kLexCont, kLexNewChar, kLexClose };

bool is_ws(uint8_t c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
int hex_value(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// The string lexer on a frame's smode/sneed/slo/shi/uval/sflags fields: the bytes after
// the opening quote. Valid UTF-8 only (no overlong forms, no surrogates), escapes checked,
// \uD800-\uDBFF must be followed by a \uDC00-\uDFFF escape.
LexResult lex(Frame& f, uint8_t c) {
    switch (f.smode) {
    case kSNormal:
        if (c == '"') return kLexClose;
        if (c == '\\') {
            f.smode = kSEsc;
            return kLexNewChar;
        }
        if (c < 0x20) return kLexReject;
        if (c < 0x80) return kLexNewChar;
        f.slo = 0x80;
        f.shi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) f.sneed = 1;
        else if (c == 0xE0) f.sneed = 2, f.slo = 0xA0;
        else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) f.sneed = 2;
        else if (c == 0xED) f.sneed = 2, f.shi = 0x9F;
        else if (c == 0xF0) f.sneed = 3, f.slo = 0x90;
        else if (c >= 0xF1 && c <= 0xF3) f.sneed = 3;
        else if (c == 0xF4) f.sneed = 3, f.shi = 0x8F;
        else {
            f.slo = f.shi = 0;
            return kLexReject;
        }
        f.smode = kSUtf8;
        return kLexNewChar;
    case kSUtf8:
        if (c < f.slo || c > f.shi) return kLexReject;
        f.slo = 0x80;
        f.shi = 0xBF;
        if (--f.sneed == 0) f.smode = kSNormal, f.slo = f.shi = 0;
        return kLexCont;
    case kSEsc:
        switch (c) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
            f.smode = kSNormal;
            return kLexCont;
        case 'u':
            f.smode = kSHex;
            f.sneed = 4;
            f.uval = 0;
            return kLexCont;
        default:
            return kLexReject;
        }
    case kSHex: {
        const int h = hex_value(c);
        if (h < 0) return kLexReject;
        const bool need_low = f.sflags & 1;
        const int done = 5 - f.sneed;  // digits including this one
        const uint16_t v = static_cast<uint16_t>(f.uval * 16 + h);
        if (done == 1 && need_low && h != 0xD) return kLexReject;
        if (done == 2) {
            const bool low = v >= 0xDC && v <= 0xDF;
            if (need_low != low) return kLexReject;
        }
        f.uval = v;
        if (--f.sneed == 0) {
            const bool high = (v >> 8) >= 0xD8 && (v >> 8) <= 0xDB;
            f.uval = 0;
            if (need_low) f.sflags = 0, f.smode = kSNormal;
            else if (high) f.sflags = 1, f.smode = kSLowBackslash;
            else f.smode = kSNormal;
        }
        return kLexCont;
    }
    case kSLowBackslash:
        if (c != '\\') return kLexReject;
        f.smode = kSLowU;
        return kLexCont;
    case kSLowU:
        if (c != 'u') return kLexReject;
        f.smode = kSHex;
        f.sneed = 4;
        f.uval = 0;
        return kLexCont;
    default:
        return kLexReject;
    }
}

bool ws_step(Frame& f, uint8_t c, int32_t max_ws) {
    if (!is_ws(c) || f.ws >= max_ws) return false;
    ++f.ws;
    return true;
}

uint64_t all_bits(size_t n) { return n >= 64 ? ~uint64_t{0} : ((uint64_t{1} << n) - 1); }

bool num_syntax_accepting(uint8_t phase) {
    return phase == kNZero || phase == kNInt || phase == kNFrac || phase == kNExpDigits;
}

long double pow10(uint32_t k) {
    long double v = 1;
    while (k--) v *= 10;
    return v;
}

// True when some value in the interval [a, b] (ends open or closed) lies within the
// node's bounds.
bool meets(const Node& n, long double a, bool a_open, long double b, bool b_open) {
    long double lo = a, hi = b;
    bool lo_open = a_open, hi_open = b_open;
    if (n.lo > a || (n.lo == a && n.lo_open)) lo = n.lo, lo_open = n.lo_open;
    if (n.hi < b || (n.hi == b && n.hi_open)) hi = n.hi, hi_open = n.hi_open;
    return lo < hi || (lo == hi && !lo_open && !hi_open);
}

// Bounded numbers (minimum / maximum): can the digits so far still become a value within
// the bounds? The number's magnitude after this prefix lies in one of a few intervals
// (more integer digits multiply it by 10^j); each is checked against the bounds, mirrored
// for a negative number. Exponents are not allowed under bounds. Integer-only nodes use
// closed integer intervals (exact: every magnitude below 10^16 is an exact long double).
bool bounded_possible(const Node& n, const Frame& f) {
    const bool integer = f.prop == 1, neg = f.sflags & 1;
    auto check = [&](long double a, bool a_open, long double b, bool b_open) {
        return neg ? meets(n, -b, b_open, -a, a_open) : meets(n, a, a_open, b, b_open);
    };
    const long double p = static_cast<long double>(f.set);
    const long double top = pow10(kMaxIntDigits);
    switch (f.phase) {
    case kNStart:
    case kNMinus: return integer ? check(neg ? 1 : 0, false, top - 1, false) : check(0, false, top, true);
    case kNZero: return integer ? !neg && check(0, false, 0, false) : check(0, false, 1, true);  // no "-0" integer
    case kNInt:
        for (uint32_t j = 0; j + f.count <= kMaxIntDigits; ++j) {
            const long double scale = pow10(j);
            if (integer ? check(p * scale, false, (p + 1) * scale - 1, false) : check(p * scale, false, (p + 1) * scale, true))
                return true;
        }
        return false;
    case kNDot: return check(p, false, p + 1, true);
    case kNFrac: {
        const long double unit = 1 / pow10(f.pos);
        const long double a = p + static_cast<long double>(f.cand) * unit;
        return f.pos < kMaxFracDigits ? check(a, false, a + unit, true) : check(a, false, a, false);
    }
    default: return false;
    }
}

bool bounded_value_ok(const Node& n, const Frame& f) {
    long double v = static_cast<long double>(f.set);
    if (f.phase == kNFrac) v += static_cast<long double>(f.cand) / pow10(f.pos);
    if (f.sflags & 1) v = -v;
    return (v > n.lo || (v == n.lo && !n.lo_open)) && (v < n.hi || (v == n.hi && !n.hi_open));
}

// The code points a UTF-8 lead byte can start (valid UTF-8 only), and the range of the
// first continuation byte. False for a byte that cannot lead.
bool utf8_lead(uint8_t c, uint32_t& lo, uint32_t& hi, uint8_t& need, uint8_t& clo, uint8_t& chi) {
    clo = 0x80, chi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) need = 1, lo = (c & 0x1Fu) << 6, hi = lo | 0x3F;
    else if (c == 0xE0) need = 2, lo = 0x800, hi = 0xFFF, clo = 0xA0;
    else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) need = 2, lo = (c & 0xFu) << 12, hi = lo | 0xFFF;
    else if (c == 0xED) need = 2, lo = 0xD000, hi = 0xD7FF, chi = 0x9F;
    else if (c == 0xF0) need = 3, lo = 0x10000, hi = 0x3FFFF, clo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) need = 3, lo = (c & 7u) << 18, hi = lo | 0x3FFFF;
    else if (c == 0xF4) need = 3, lo = 0x100000, hi = 0x10FFFF, chi = 0x8F;
    else return false;
    return true;
}

bool ranges_meet(const std::vector<std::pair<uint32_t, uint32_t>>& r, uint32_t lo, uint32_t hi) {
    for (const auto& [a, b] : r)
        if (a <= hi && lo <= b) return true;
    return false;
}

// The fork sink of the running advance() on this thread.
thread_local StateSet* t_forks = nullptr;

// Scratch states for fork() (a deque: taking one never moves the others), released in
// LIFO order by PoolScope; reused across calls, so a fork copies only the frames in use.
thread_local std::deque<State> t_pool;
thread_local size_t t_pool_top = 0;
struct PoolScope {
    size_t mark = t_pool_top;
    ~PoolScope() { t_pool_top = mark; }
    State& take() {
        if (t_pool_top == t_pool.size()) t_pool.emplace_back();
        return t_pool[t_pool_top++];
    }
};
// Steps taken inside one step() call (guards against epsilon loops in GBNF grammars).
thread_local uint32_t t_budget = 0;
constexpr uint32_t kStepBudget = 1024;

}  // namespace

template <class Way>
bool Grammar::fork(State& s, size_t n, Way&& way) const {
    if (n == 1) return way(s, 0);
    PoolScope scope;
    State& base = scope.take();
    base.copy_from(s);
    State& t = scope.take();
    bool have = false;
    for (size_t k = 0; k < n; ++k) {
        t.copy_from(base);
        if (!way(t, k)) continue;
        if (!have) {
            s.copy_from(t);
            have = true;
        } else if (t_forks && t_forks->n < kMaxStates) {
            t_forks->push().copy_from(t);
        }
    }
    return have;
}

State Grammar::initial() const {
    State s;
    s.size = 1;
    s.frames[0] = Frame{};
    s.frames[0].kind = FrameKind::Root;
    s.frames[0].node = root;
    return s;
}

bool Grammar::key_possible(const Frame& f) const {
    const Node& n = nodes[f.node];
    return n.additional != kNoNode || (all_bits(n.properties.size()) & ~f.set) != 0;
}

void Grammar::child_done(State& s) const {
    Frame& p = s.top();
    p.ws = 0;
    switch (p.kind) {
    case FrameKind::Root: p.phase = kRootDone; break;
    case FrameKind::Object:
        p.phase = kObjAfterValue;
        p.prop = 0;
        break;
    case FrameKind::Array: {
        const Node& n = nodes[p.node];
        if (n.min_items > 0 || n.max_items != UINT32_MAX || !n.prefix_items.empty()) ++p.count;
        p.phase = kArrAfterValue;
        break;
    }
    case FrameKind::Sequence: count_repetition(p); break;
    default: break;
    }
}

bool Grammar::start_value(State& s, uint16_t node_id, uint8_t c) const {
    const Node& n = nodes[node_id];
    if (!n.alternatives.empty())
        return fork(s, n.alternatives.size(), [&](State& t, size_t k) { return start_value(t, n.alternatives[k], c); });
    const uint8_t depth = s.top().depth;
    auto push = [&](FrameKind kind) -> Frame& {
        Frame& f = s.frames[s.size++];
        f = Frame{};
        f.kind = kind;
        f.node = node_id;
        f.depth = depth;
        return f;
    };
    auto push_literal = [&]() {
        if (n.literals.empty()) return false;
        Frame& f = push(FrameKind::Literal);
        f.set = all_bits(n.literals.size());
        return lit_step(s, c);
    };
    if (n.is_enum) return push_literal();
    if (c == '{' || c == '[') {
        if (!(n.types & (c == '{' ? kObject : kArray))) return false;
        if (n.any && depth + 1 > max_nesting) return false;
        if (s.size + std::max<int>(2, n.min_frames) > kMaxFrames) return false;
        Frame& f = push(c == '{' ? FrameKind::Object : FrameKind::Array);
        f.depth = static_cast<uint8_t>(depth + 1);
        return true;
    }
    if (c == '"') {
        if (!(n.types & kString)) return false;
        push(FrameKind::String);
        return true;
    }
    if (c == '-' || is_digit(c)) {
        if (!(n.types & (kNumber | kInteger))) return false;
        Frame& f = push(FrameKind::Number);
        f.prop = (n.types & kNumber) ? 0 : 1;
        return num_step(s, c);
    }
    return push_literal();
}

bool Grammar::lit_step(State& s, uint8_t c) const {
    Frame& f = s.top();
    const Node& n = nodes[f.node];
    uint64_t next = 0;
    bool complete = false;
    for (uint64_t bits = f.set; bits; bits &= bits - 1) {
        const int i = std::countr_zero(bits);
        const std::string& lit = n.literals[static_cast<size_t>(i)];
        if (lit.size() == f.pos) complete = true;
        else if (static_cast<uint8_t>(lit[f.pos]) == c) next |= uint64_t{1} << i;
    }
    if (next == 0) {
        if (!complete) return false;
        --s.size;  // the literal ended before this byte: the parent takes it
        child_done(s);
        return step(s, c);
    }
    f.set = next;
    ++f.pos;
    bool longer = false;
    for (uint64_t bits = next; bits; bits &= bits - 1)
        if (n.literals[static_cast<size_t>(std::countr_zero(bits))].size() > f.pos) longer = true;
    if (!longer) {
        --s.size;
        child_done(s);
    }
    return true;
}

bool Grammar::num_step(State& s, uint8_t c) const {
    Frame& f = s.top();
    const Node& n = nodes[f.node];
    const bool integer = f.prop == 1;
    const bool digit = is_digit(c);
    auto go = [&](uint8_t phase, uint32_t count) {
        if (n.bounded) {
            if (phase == kNExp) return false;
            if (phase == kNMinus) f.sflags = 1;
            else if (digit && (phase == kNZero || phase == kNInt)) f.set = f.set * 10 + static_cast<uint64_t>(c - '0');
            else if (digit && phase == kNFrac) f.cand = f.cand * 10 + static_cast<uint64_t>(c - '0'), ++f.pos;
        }
        f.phase = phase;
        f.count = count;
        return !n.bounded || bounded_possible(n, f);
    };
    switch (f.phase) {
    case kNStart:
        if (c == '-') return go(kNMinus, 0);
        [[fallthrough]];
    case kNMinus:
        if (c == '0') return go(kNZero, 1);
        if (digit) return go(kNInt, 1);
        return false;
    case kNInt:
        if (digit && f.count < kMaxIntDigits) return go(kNInt, f.count + 1);
        [[fallthrough]];
    case kNZero:
        if (!integer && c == '.') return go(kNDot, 0);
        if (!integer && (c == 'e' || c == 'E')) return go(kNExp, 0);
        break;
    case kNDot:
        if (digit) return go(kNFrac, 1);
        return false;
    case kNFrac:
        if (digit && f.count < kMaxFracDigits) return go(kNFrac, f.count + 1);
        if (c == 'e' || c == 'E') return go(kNExp, 0);
        break;
    case kNExp:
        if (c == '+' || c == '-') return go(kNExpSign, 0);
        [[fallthrough]];
    case kNExpSign:
        if (digit) return go(kNExpDigits, 1);
        return false;
    case kNExpDigits:
        if (digit && f.count < kMaxExpDigits) return go(kNExpDigits, f.count + 1);
        break;
    default: return false;
    }
    if (!num_syntax_accepting(f.phase) || (n.bounded && !bounded_value_ok(n, f))) return false;
    --s.size;  // the number ended before this byte: the parent takes it
    child_done(s);
    return step(s, c);
}

bool Grammar::str_step(State& s, uint8_t c) const {
    Frame& f = s.top();
    const Node& n = nodes[f.node];
    if (n.dfa >= 0) return pattern_step(s, c);
    const bool limited = n.min_length > 0 || n.max_length != UINT32_MAX;
    switch (lex(f, c)) {
    case kLexReject: return false;
    case kLexCont: return true;
    case kLexNewChar:
        if (closing(s) && (!limited || f.count >= n.min_length)) return false;
        if (!limited) return true;
        // The second half of a surrogate pair is not a new character.
        if (c == '\\' && f.sflags) return true;
        if (f.count >= n.max_length) return false;
        ++f.count;
        return true;
    case kLexClose:
        if (limited && f.count < n.min_length) return false;
        --s.size;
        child_done(s);
        return true;
    }
    return false;
}

bool Grammar::obj_step(State& s, uint8_t c) const {
    Frame& f = s.top();
    const Node& n = nodes[f.node];
    const uint64_t all = all_bits(n.properties.size());
    auto open_key = [&]() {
        f.phase = kObjKey;
        f.ws = 0;
        f.pos = 0;
        f.cand = n.additional != kNoNode ? all : (all & ~f.set);
        return true;
    };
    auto close = [&]() {
        if ((n.required & ~f.set) != 0) return false;
        --s.size;
        child_done(s);
        return true;
    };
    switch (f.phase) {
    case kObjOpen:
        if (is_ws(c)) return ws_step(f, c, max_whitespace);
        if (c == '"') return key_possible(f) && (!closing(s) || (n.required & ~f.set)) && open_key();
        if (c == '}') return close();
        return false;
    case kObjKey: {
        const LexResult r = lex(f, c);
        if (r == kLexReject) return false;
        if (r == kLexNewChar && key_limit && n.additional != kNoNode && !(c == '\\' && f.sflags)) {
            if (f.count >= key_limit) return false;
            ++f.count;
        }
        if (r == kLexClose) {
            int exact = -1;
            for (uint64_t bits = f.cand; bits; bits &= bits - 1) {
                const int i = std::countr_zero(bits);
                if (n.properties[static_cast<size_t>(i)].key.size() == f.pos) exact = i;
            }
            if (exact >= 0) {
                if (f.set & (uint64_t{1} << exact)) return false;  // a duplicate key
                f.set |= uint64_t{1} << exact;
                f.prop = static_cast<uint8_t>(exact);
            } else {
                if (n.additional == kNoNode) return false;
                f.prop = 0xFF;
            }
            const uint16_t child = f.prop == 0xFF ? n.additional : n.properties[f.prop].node;
            if (s.size + nodes[child].min_frames > kMaxFrames) return false;
            f.phase = kObjAfterKey;
            f.cand = 0;
            f.pos = 0;
            f.count = 0;
            f.ws = 0;
            return true;
        }
        uint64_t next = 0;
        for (uint64_t bits = f.cand; bits; bits &= bits - 1) {
            const int i = std::countr_zero(bits);
            const std::string& key = n.properties[static_cast<size_t>(i)].key;
            if (f.pos < key.size() && static_cast<uint8_t>(key[f.pos]) == c) next |= uint64_t{1} << i;
        }
        if (next == 0 && n.additional == kNoNode) return false;
        f.cand = next;
        f.pos = next ? static_cast<uint16_t>(f.pos + 1) : 0;
        return true;
    }
    case kObjAfterKey:
        if (is_ws(c)) return ws_step(f, c, max_whitespace);
        if (c != ':') return false;
        f.phase = kObjBeforeValue;
        f.ws = 0;
        return true;
    case kObjBeforeValue: {
        if (is_ws(c)) return ws_step(f, c, max_whitespace);
        const uint16_t child = f.prop == 0xFF ? n.additional : n.properties[f.prop].node;
        f.phase = kObjIn;
        f.ws = 0;
        return start_value(s, child, c);
    }
    case kObjAfterValue:
        if (is_ws(c)) return ws_step(f, c, max_whitespace);
        if (c == ',') {
            if (!key_possible(f) || (closing(s) && !(n.required & ~f.set))) return false;
            f.phase = kObjAfterComma;
            f.ws = 0;
            return true;
        }
        if (c == '}') return close();
        return false;
    case kObjAfterComma:
        if (is_ws(c)) return ws_step(f, c, max_whitespace);
        if (c == '"') return open_key();
        return false;
    default: return false;
    }
}

bool Grammar::arr_step(State& s, uint8_t c) const {
    Frame& f = s.top();
    const Node& n = nodes[f.node];
    auto close = [&]() {
        if (f.count < n.min_items) return false;
        --s.size;
        child_done(s);
        return true;
    };
    auto item = [&]() { return f.count < n.prefix_items.size() ? n.prefix_items[f.count] : n.items; };
    auto value = [&]() {
        f.phase = kArrIn;
        f.ws = 0;
        return start_value(s, item(), c);
    };
    switch (f.phase) {
    case kArrOpen:
        if (is_ws(c)) return ws_step(f, c, max_whitespace);
        if (c == ']') return close();
        if (n.max_items == 0 || (closing(s) && n.min_items == 0)) return false;
        return value();
    case kArrAfterValue:
        if (is_ws(c)) return ws_step(f, c, max_whitespace);
        if (c == ']') return close();
        if (c == ',' && f.count < n.max_items && (!closing(s) || f.count < n.min_items) &&
            s.size + nodes[item()].min_frames <= kMaxFrames) {
            f.phase = kArrAfterComma;
            f.ws = 0;
            return true;
        }
        return false;
    case kArrAfterComma:
        if (is_ws(c)) return ws_step(f, c, max_whitespace);
        return value();
    default: return false;
    }
}

bool Grammar::step(State& s, uint8_t c) const {
    Frame& f = s.top();
    switch (f.kind) {
    case FrameKind::Root:
        if (f.phase == kRootBefore) {
            if (root_rule != kNoNode) {
                f.phase = kRootIn;
                return start_rule(s, root_rule, c);
            }
            if (is_ws(c)) return ws_step(f, c, max_whitespace);
            f.phase = kRootIn;
            f.ws = 0;
            return start_value(s, root, c);
        }
        return false;
    case FrameKind::Object: return obj_step(s, c);
    case FrameKind::Array: return arr_step(s, c);
    case FrameKind::String: return str_step(s, c);
    case FrameKind::Number: return num_step(s, c);
    case FrameKind::Literal: return lit_step(s, c);
    case FrameKind::Sequence: return seq_step(s, c);
    }
    return false;
}

bool Grammar::pattern_step(State& s, uint8_t c) const {
    Frame& f = s.top();
    const Dfa& d = dfas[static_cast<size_t>(nodes[f.node].dfa)];
    const auto st = static_cast<uint32_t>(f.set);
    auto take = [&](uint32_t cp) {
        const int32_t next = d.next(st, cp);
        if (next < 0) return false;
        f.set = static_cast<uint64_t>(next);
        return true;
    };
    switch (f.smode) {
    case kSNormal: {
        if (c == '"') {
            if (!d.states[st].accepting) return false;
            --s.size;
            child_done(s);
            return true;
        }
        if (c == '\\') {
            for (uint32_t cp : {0x22u, 0x5Cu, 0x2Fu, 0x08u, 0x0Cu, 0x0Au, 0x0Du, 0x09u})
                if (d.next(st, cp) >= 0) {
                    f.smode = kSEsc;
                    return true;
                }
            return false;
        }
        if (c < 0x20) return false;
        if (c < 0x80) return take(c);
        uint32_t lo = 0, hi = 0;
        uint8_t need = 0, clo = 0, chi = 0;
        if (!utf8_lead(c, lo, hi, need, clo, chi) || !d.any_in(st, lo, hi)) return false;
        f.smode = kSUtf8;
        f.sneed = need;
        f.slo = clo;
        f.shi = chi;
        f.cand = c & (0x7Fu >> (need + 1));
        return true;
    }
    case kSUtf8: {
        if (c < f.slo || c > f.shi) return false;
        const auto cp = static_cast<uint32_t>((f.cand << 6) | (c & 0x3Fu));
        if (--f.sneed == 0) {
            f.smode = kSNormal;
            f.slo = f.shi = 0;
            f.cand = 0;
            return take(cp);
        }
        const uint32_t shift = 6u * f.sneed;
        if (!d.any_in(st, cp << shift, (cp << shift) | ((1u << shift) - 1))) return false;
        f.cand = cp;
        f.slo = 0x80;
        f.shi = 0xBF;
        return true;
    }
    case kSEsc: {
        uint32_t cp = 0;
        switch (c) {
        case '"': cp = '"'; break;
        case '\\': cp = '\\'; break;
        case '/': cp = '/'; break;
        case 'b': cp = 0x08; break;
        case 'f': cp = 0x0C; break;
        case 'n': cp = 0x0A; break;
        case 'r': cp = 0x0D; break;
        case 't': cp = 0x09; break;
        default: return false;  // no unicode (u) escapes in patterned strings
        }
        f.smode = kSNormal;
        return take(cp);
    }
    default: return false;
    }
}

bool Grammar::start_rule(State& s, uint16_t rule, uint8_t c) const {
    if (s.size >= kMaxFrames) return false;
    const GRule& r = rules[rule];
    return fork(s, r.alternatives.size(), [&](State& t, size_t k) {
        Frame& f = t.frames[t.size++];
        f = Frame{};
        f.kind = FrameKind::Sequence;
        f.node = r.alternatives[k];
        return seq_step(t, c);
    });
}

bool Grammar::seq_step(State& s, uint8_t c) const {
    if (++t_budget > kStepBudget) return false;
    Frame& f = s.top();
    const GSequence& q = sequences[f.node];
    if (f.sneed) {  // inside a multi-byte code point of element f.pos
        const GElement& e = q.elements[f.pos];
        if (c < f.slo || c > f.shi) return false;
        const auto cp = static_cast<uint32_t>((f.cand << 6) | (c & 0x3Fu));
        if (--f.sneed == 0) {
            if (!ranges_meet(e.ranges, cp, cp)) return false;
            f.cand = 0;
            f.slo = f.shi = 0;
            count_repetition(f);
            return true;
        }
        const uint32_t shift = 6u * f.sneed;
        if (!ranges_meet(e.ranges, cp << shift, (cp << shift) | ((1u << shift) - 1))) return false;
        f.cand = cp;
        f.slo = 0x80;
        f.shi = 0xBF;
        return true;
    }
    if (f.pos == q.elements.size()) {  // the alternative is complete: the parent takes the byte
        --s.size;
        child_done(s);
        return step(s, c);
    }
    const GElement& e = q.elements[f.pos];
    const bool is_rule = e.rule != kNoNode;
    // A character element that cannot take this byte is only skipped (no fork).
    uint32_t lead_lo = c, lead_hi = c;
    uint8_t need = 0, clo = 0, chi = 0;
    const bool char_ok = is_rule || (c < 0x80 ? ranges_meet(e.ranges, c, c)
                                              : utf8_lead(c, lead_lo, lead_hi, need, clo, chi) &&
                                                    ranges_meet(e.ranges, lead_lo, lead_hi));
    const bool can_more = f.count < e.max && char_ok;
    const bool can_skip = f.count >= e.min || (is_rule && rules[e.rule].nullable);
    auto more = [&](State& t) {
        if (is_rule) return start_rule(t, e.rule, c);
        Frame& g = t.top();
        if (c < 0x80) {
            count_repetition(g);
            return true;
        }
        g.sneed = need;
        g.slo = clo;
        g.shi = chi;
        g.cand = c & (0x7Fu >> (need + 1));
        return true;
    };
    auto skip = [&](State& t) {
        Frame& g = t.top();
        ++g.pos;
        g.count = 0;
        return seq_step(t, c);
    };
    if (can_more && can_skip) return fork(s, 2, [&](State& t, size_t k) { return k == 0 ? more(t) : skip(t); });
    if (can_more) return more(s);
    if (can_skip) return skip(s);
    return false;
}

void Grammar::count_repetition(Frame& f) const {
    const GElement& e = sequences[f.node].elements[f.pos];
    ++f.count;
    // Past its minimum, an unbounded element's count no longer matters: keeping it at the
    // minimum makes the states inside a long repetition equal (mask cache hits, self-loops).
    if (e.max == UINT32_MAX && f.count > e.min) f.count = e.min;
}

bool Grammar::seq_can_finish(const Frame& f, bool child_pending) const {
    if (f.sneed) return false;
    const GSequence& q = sequences[f.node];
    for (size_t i = f.pos; i < q.elements.size(); ++i) {
        const GElement& e = q.elements[i];
        const uint32_t count = i == f.pos ? f.count + (child_pending ? 1 : 0) : 0;
        if (count < e.min && !(e.rule != kNoNode && rules[e.rule].nullable)) return false;
    }
    return true;
}

bool Grammar::complete(const StateSet& s) const {
    for (uint32_t i = 0; i < s.n; ++i)
        if (complete(s.states[i])) return true;
    return false;
}

bool Grammar::complete(const State& s) const {
    if (s.size == 1)
        return s.frames[0].phase == kRootDone ||
               (root_rule != kNoNode && s.frames[0].phase == kRootBefore && rules[root_rule].nullable);
    if (root_rule != kNoNode) {
        for (uint8_t i = 1; i < s.size; ++i)
            if (!seq_can_finish(s.frames[i], i + 1 < s.size)) return false;
        return true;
    }
    if (s.size != 2) return false;
    const Frame& f = s.frames[1];
    if (f.kind == FrameKind::Number)
        return num_syntax_accepting(f.phase) && (!nodes[f.node].bounded || bounded_value_ok(nodes[f.node], f));
    if (f.kind == FrameKind::Literal) {
        const Node& n = nodes[f.node];
        for (uint64_t bits = f.set; bits; bits &= bits - 1)
            if (n.literals[static_cast<size_t>(std::countr_zero(bits))].size() == f.pos) return true;
    }
    return false;
}

bool Grammar::plain_string(const StateSet& set) const {
    if (set.n != 1) return false;
    const State& st = set.states[0];
    const Frame& f = st.top();
    if (f.kind != FrameKind::String || f.smode != kSNormal || closing(st)) return false;
    const Node& n = nodes[f.node];
    return n.min_length == 0 && n.max_length == UINT32_MAX && n.dfa < 0;
}

bool Grammar::advance(const StateSet& in, uint8_t c, StateSet& out) const {
    thread_local StateSet forks;
    out.clear();
    for (uint32_t i = 0; i < in.n; ++i) {
        State& t = out.push();
        t.copy_from(in.states[i]);
        forks.clear();
        t_forks = &forks;
        t_budget = 0;
        const bool ok = step(t, c);
        t_forks = nullptr;
        if (!ok) --out.n;
        for (uint32_t k = 0; k < forks.n; ++k)
            if (out.n < kMaxStates) out.push().copy_from(forks.states[k]);
    }
    if (out.n > 1) {  // drop duplicates (ambiguous grammars reach one state several ways)
        uint32_t kept = 0;
        for (uint32_t i = 0; i < out.n; ++i) {
            bool dup = false;
            for (uint32_t j = 0; j < kept && !dup; ++j) dup = out.states[j].key() == out.states[i].key();
            if (dup) continue;
            if (kept != i) out.states[kept].copy_from(out.states[i]);
            ++kept;
        }
        out.n = kept;
    }
    return out.n > 0;
}

bool accepts(const Grammar& g, std::string_view text) {
    StateSet a, b;
    a.push() = g.initial();
    for (char c : text) {
        if (!g.advance(a, static_cast<uint8_t>(c), b)) return false;
        std::swap(a, b);
    }
    return g.complete(a);
}

}  // namespace genie::constraint
