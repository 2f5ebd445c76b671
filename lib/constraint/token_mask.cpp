// The token trie over a vocabulary and the mask computation that walks it together with
// the constraint's automaton (docs/constraints.md, "How it works" 3-4).
#include "constraint/json_grammar.hpp"

#include <algorithm>
#include <array>

namespace genie::constraint {

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

void compute_mask(const Grammar& g, const TokenTrie& trie, const StateSet& s, Mask& out, std::vector<StateSet>& scratch) {
    out.assign((trie.vocab_size + 63) / 64, 0);
    const size_t depth = static_cast<size_t>(trie.max_depth) + 1;
    if (scratch.size() < depth) scratch.resize(depth);
    // cur[d]: the state after the first d bytes of the current trie path. Inside an
    // unlimited string, a plain printable byte leaves the state as it is, so cur[d] then
    // points at the parent's state instead of a stepped copy (most of a string's walk).
    // cur[d] only ever points at scratch[k] with k <= d, so writing scratch[d] never
    // changes a state on the current path above d.
    // The same for any grammar, learnt during the walk: owner[d] is the depth whose scratch
    // holds cur[d] (0: the input), and memo[owner][c] what byte c did to that state set
    // (unknown, leaves it as it is, rejected, changes it). A GBNF string's characters,
    // a pattern's repeated class ... are then stepped once per walk, not once per trie node.
    // memo[k] is cleared whenever scratch[k] is rewritten, and every node that uses
    // owner k lies in the subtree below it.
    enum : uint8_t { kUnknown = 0, kSame, kRejected, kChanged };
    std::vector<const StateSet*> cur(depth);
    std::vector<uint8_t> plain(depth);
    std::vector<uint32_t> owner(depth);
    std::vector<std::array<uint8_t, 256>> memo(depth);
    auto plain_string = [&](const StateSet& set) { return g.plain_string(set); };
    auto same = [](const StateSet& a, const StateSet& b) {
        if (a.n != b.n) return false;
        for (uint32_t k = 0; k < a.n; ++k)
            if (a.states[k].key() != b.states[k].key()) return false;
        return true;
    };
    cur[0] = &s;
    plain[0] = plain_string(s);
    memo[0].fill(kUnknown);
    const auto* nodes = trie.nodes.data();
    const uint32_t n = static_cast<uint32_t>(trie.nodes.size());
    for (uint32_t i = 1; i < n;) {
        const auto& node = nodes[i];
        const size_t d = node.depth;
        const uint8_t c = node.byte;
        const uint32_t o = owner[d - 1];
        if ((plain[d - 1] && c >= 0x20 && c < 0x7F && c != '"' && c != '\\') || memo[o][c] == kSame) {
            cur[d] = cur[d - 1];
            plain[d] = plain[d - 1];
            owner[d] = o;
        } else if (memo[o][c] == kRejected) {
            i = node.end;
            continue;
        } else {
            StateSet& st = scratch[d];
            if (!g.advance(*cur[d - 1], c, st)) {
                memo[o][c] = kRejected;
                i = node.end;
                continue;
            }
            if (same(st, *cur[d - 1])) {
                memo[o][c] = kSame;
                cur[d] = cur[d - 1];
                plain[d] = plain[d - 1];
                owner[d] = o;
            } else {
                memo[o][c] = kChanged;
                cur[d] = &st;
                plain[d] = plain_string(st);
                owner[d] = static_cast<uint32_t>(d);
                memo[d].fill(kUnknown);
            }
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
