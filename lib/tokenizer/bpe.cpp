// Byte-level BPE (llama.cpp's llm_tokenizer_bpe_session): pre-tokenize, map each byte
// to its byte-level character, then merge the adjacent pair with the lowest merge
// rank (leftmost first on ties) until no pair has a merge.
//
// Symbols are ids of interned strings rather than strings (see Tokenizer::Impl), which
// gives the same merges as comparing strings, without allocating.
#include "tokenizer/unicode.hpp"
#include "tokenizer/vocab.hpp"

#include <algorithm>
#include <vector>

namespace genie {

namespace unicode = tokenizer::unicode;

namespace {

struct Symbol {
    int32_t prev;
    int32_t next;
    uint32_t start;  // byte offset in the word
    uint32_t length; // bytes of the original text (0 once merged into the left neighbour)
    int32_t id;      // interned symbol id, -1 when the string is unknown
};

struct Bigram {
    int32_t rank;
    int32_t left;
    int32_t right;
    uint32_t size;  // combined length when queued; a changed size means it is stale
    int32_t merged;
};

// Lowest rank first, then leftmost (llama.cpp's llm_bigram_bpe::comparator).
struct BigramAfter {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    }
};

struct Scratch {
    std::vector<uint32_t> cpts;
    std::vector<size_t> words;
    std::string word;  // UTF-8 of the current word
    std::string encoded;
    std::vector<Symbol> symbols;
    std::vector<Bigram> heap;
};

}  // namespace

void Tokenizer::Impl::tokenize_bpe(std::string_view text, std::vector<TokenId>& out) const {
    thread_local Scratch s;
    unicode::decode_lenient(text, s.cpts);
    pretokenizer->split(s.cpts, s.words);

    auto try_push = [&](int32_t left, int32_t right) {
        if (left < 0 || right < 0) return;
        const Symbol& l = s.symbols[size_t(left)];
        const Symbol& r = s.symbols[size_t(right)];
        if (l.id < 0 || r.id < 0) return;
        const tokenizer::MergeTable::Entry* e = merges.find(l.id, r.id);
        if (!e) return;
        s.heap.push_back(Bigram{e->rank, left, right, l.length + r.length, e->merged});
        std::push_heap(s.heap.begin(), s.heap.end(), BigramAfter{});
    };

    size_t cp_pos = 0;
    for (size_t word_len : s.words) {
        // The word as UTF-8 re-encoded from code points (invalid input bytes are U+FFFD now).
        s.word.clear();
        for (size_t i = cp_pos; i < cp_pos + word_len; ++i) unicode::append_utf8(s.word, s.cpts[i]);
        cp_pos += word_len;
        if (s.word.empty()) continue;

        s.symbols.clear();
        s.heap.clear();
        if (ignore_merges) {
            // Llama 3 style: a word that is itself a token is taken whole.
            s.encoded.clear();
            for (unsigned char b : s.word) s.encoded += unicode::byte_to_utf8(b);
            if (const TokenId whole = token_to_id.find(s.encoded); whole >= 0) {
                out.push_back(whole);
                continue;
            }
        }
        const auto n = uint32_t(s.word.size());
        for (uint32_t i = 0; i < n; ++i) {
            const auto idx = int32_t(i);
            s.symbols.push_back(Symbol{idx - 1, i + 1 == n ? -1 : idx + 1, i, 1, byte_symbol[uint8_t(s.word[i])]});
        }
        for (int32_t i = 1; i < int32_t(n); ++i) try_push(i - 1, i);

        while (!s.heap.empty()) {
            std::pop_heap(s.heap.begin(), s.heap.end(), BigramAfter{});
            const Bigram b = s.heap.back();
            s.heap.pop_back();
            Symbol& l = s.symbols[size_t(b.left)];
            Symbol& r = s.symbols[size_t(b.right)];
            if (l.length == 0 || r.length == 0 || l.length + r.length != b.size) continue;  // stale
            l.length += r.length;
            l.id = b.merged;
            r.length = 0;
            l.next = r.next;
            if (r.next >= 0) s.symbols[size_t(r.next)].prev = b.left;
            try_push(l.prev, b.left);
            try_push(b.left, l.next);
        }

        for (const Symbol& sym : s.symbols) {
            if (sym.length == 0) continue;
            if (sym.id >= 0 && size_t(sym.id) < tokens.size()) {
                out.push_back(sym.id);
                continue;
            }
            // Not a token: llama.cpp looks up each byte of the byte-level text on its own
            // and drops the bytes that are not tokens.
            s.encoded.clear();
            for (uint32_t i = sym.start; i < sym.start + sym.length; ++i)
                s.encoded += unicode::byte_to_utf8(uint8_t(s.word[i]));
            for (unsigned char c : s.encoded)
                if (single_byte_token[c] != kNoToken) out.push_back(single_byte_token[c]);
        }
    }
    // Scratch that grew for a long text is not kept: every thread that ever tokenized one
    // (a server's workers) would hold megabytes for good.
    if (s.cpts.capacity() > (size_t{64} << 10)) s = Scratch{};
}

}  // namespace genie
