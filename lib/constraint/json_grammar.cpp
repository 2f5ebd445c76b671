// The byte-level pushdown automaton of the JSON constraint, the token trie, and the
// mask computation that walks both together (docs/constraints.md).
//
// Invariant: step() only accepts a byte when the resulting state can still be completed
// to an accepted value. So a token is allowed exactly when every one of its bytes steps,
// and the trie walk can drop a whole subtree at the first rejected byte.
#include "constraint/json_grammar.hpp"

#include <algorithm>
#include <bit>
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

bool num_accepting(uint8_t phase) {
    return phase == kNZero || phase == kNInt || phase == kNFrac || phase == kNExpDigits;
}

}  // namespace

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
        if (n.min_items > 0 || n.max_items != UINT32_MAX) ++p.count;
        p.phase = kArrAfterValue;
        break;
    }
    default: break;
    }
}

bool Grammar::start_value(State& s, uint16_t node_id, uint8_t c) const {
    const Node& n = nodes[node_id];
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
        if (s.size + 2 > kMaxFrames) return false;
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
    const bool integer = f.prop == 1;
    const bool digit = is_digit(c);
    auto go = [&](uint8_t phase, uint32_t count) {
        f.phase = phase;
        f.count = count;
        return true;
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
    if (!num_accepting(f.phase)) return false;
    --s.size;  // the number ended before this byte: the parent takes it
    child_done(s);
    return step(s, c);
}

bool Grammar::str_step(State& s, uint8_t c) const {
    Frame& f = s.top();
    const Node& n = nodes[f.node];
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
    auto value = [&]() {
        f.phase = kArrIn;
        f.ws = 0;
        return start_value(s, n.items, c);
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
        if (c == ',' && f.count < n.max_items && (!closing(s) || f.count < n.min_items)) {
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
    }
    return false;
}

bool Grammar::complete(const State& s) const {
    if (s.size == 1) return s.frames[0].phase == kRootDone;
    if (s.size != 2) return false;
    const Frame& f = s.frames[1];
    if (f.kind == FrameKind::Number) return num_accepting(f.phase);
    if (f.kind == FrameKind::Literal) {
        const Node& n = nodes[f.node];
        for (uint64_t bits = f.set; bits; bits &= bits - 1)
            if (n.literals[static_cast<size_t>(std::countr_zero(bits))].size() == f.pos) return true;
    }
    return false;
}

TokenTrie::TokenTrie(const Tokenizer& tok) : vocab_size(tok.vocab_size()) {
    pieces.resize(vocab_size);
    eog = tok.eog_tokens();
    std::vector<TokenId> order;
    order.reserve(vocab_size);
    for (size_t i = 0; i < vocab_size; ++i) {
        const auto id = static_cast<TokenId>(i);
        if (tok.is_eog(id)) continue;
        pieces[i] = tok.token_to_piece(id, false);
        if (!pieces[i].empty()) order.push_back(id);
    }
    std::sort(order.begin(), order.end(), [&](TokenId a, TokenId b) {
        return pieces[static_cast<size_t>(a)] < pieces[static_cast<size_t>(b)] ||
               (pieces[static_cast<size_t>(a)] == pieces[static_cast<size_t>(b)] && a < b);
    });
    // Preorder construction over the sorted strings: path[d] is the node of the current
    // string's prefix of length d; nodes deeper than the common prefix are closed.
    nodes.push_back(TrieNode{});
    std::vector<uint32_t> path{0};
    std::string_view prev;
    tokens.reserve(order.size());
    for (TokenId id : order) {
        const std::string_view s = pieces[static_cast<size_t>(id)];
        size_t l = 0;
        while (l < prev.size() && l < s.size() && prev[l] == s[l]) ++l;
        while (path.size() > l + 1) {
            nodes[path.back()].end = static_cast<uint32_t>(nodes.size());
            path.pop_back();
        }
        for (size_t d = l + 1; d <= s.size(); ++d) {
            TrieNode n;
            n.depth = static_cast<uint16_t>(std::min<size_t>(d, UINT16_MAX));
            n.byte = static_cast<uint8_t>(s[d - 1]);
            n.tok_begin = n.tok_end = static_cast<uint32_t>(tokens.size());
            path.push_back(static_cast<uint32_t>(nodes.size()));
            nodes.push_back(n);
        }
        TrieNode& at = nodes[path.back()];
        if (at.tok_begin == at.tok_end) at.tok_begin = static_cast<uint32_t>(tokens.size());
        tokens.push_back(id);
        at.tok_end = static_cast<uint32_t>(tokens.size());
        max_depth = std::max<uint16_t>(max_depth, at.depth);
        prev = s;
    }
    while (!path.empty()) {
        nodes[path.back()].end = static_cast<uint32_t>(nodes.size());
        path.pop_back();
    }
}

void compute_mask(const Grammar& g, const TokenTrie& trie, const State& s, Mask& out, std::vector<State>& scratch) {
    out.assign((trie.vocab_size + 63) / 64, 0);
    const size_t depth = static_cast<size_t>(trie.max_depth) + 1;
    if (scratch.size() < depth) scratch.resize(depth);
    // cur[d]: the state after the first d bytes of the current trie path. Inside an
    // unlimited string, a plain printable byte leaves the state as it is, so cur[d] then
    // points at the parent's state instead of a stepped copy (most of a string's walk).
    // cur[d] only ever points at scratch[k] with k <= d, so writing scratch[d] never
    // changes a state on the current path above d.
    std::vector<const State*> cur(depth);
    std::vector<uint8_t> plain(depth);
    auto plain_string = [&](const State& st) {
        const Frame& f = st.top();
        if (f.kind != FrameKind::String || f.smode != kSNormal || Grammar::closing(st)) return false;
        const Node& n = g.nodes[f.node];
        return n.min_length == 0 && n.max_length == UINT32_MAX;
    };
    cur[0] = &s;
    plain[0] = plain_string(s);
    const auto* nodes = trie.nodes.data();
    const uint32_t n = static_cast<uint32_t>(trie.nodes.size());
    for (uint32_t i = 1; i < n;) {
        const auto& node = nodes[i];
        const size_t d = node.depth;
        const uint8_t c = node.byte;
        if (plain[d - 1] && c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
            cur[d] = cur[d - 1];
            plain[d] = 1;
        } else {
            State& st = scratch[d];
            st.copy_from(*cur[d - 1]);
            if (!g.step(st, c)) {
                i = node.end;
                continue;
            }
            cur[d] = &st;
            plain[d] = plain_string(st);
        }
        for (uint32_t t = node.tok_begin; t < node.tok_end; ++t) {
            const auto id = static_cast<size_t>(trie.tokens[t]);
            out[id >> 6] |= uint64_t{1} << (id & 63);
        }
        ++i;
    }
    if (g.complete(s))
        for (TokenId id : trie.eog) out[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (static_cast<size_t>(id) & 63);
}

}  // namespace genie::constraint
