// SentencePiece BPE (llama.cpp's llm_tokenizer_spm_session): start from UTF-8
// characters, repeatedly merge the adjacent pair whose concatenation is the token
// with the highest score (leftmost first on ties), then emit each final piece as its
// token or, when it is not a token, as byte-fallback tokens <0xXX>.
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
    uint32_t start;
    uint32_t length;  // 0 once merged into the left neighbour
};

struct Bigram {
    float score;
    int32_t left;
    int32_t right;
    uint32_t size;
    TokenId token;
};

// Highest score first, then leftmost (llama.cpp's llm_bigram_spm::comparator).
struct BigramBefore {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

}  // namespace

void Tokenizer::Impl::tokenize_spm(std::string_view text, std::vector<TokenId>& out) const {
    thread_local std::vector<Symbol> symbols;
    thread_local std::vector<Bigram> heap;
    symbols.clear();
    heap.clear();

    const auto n = uint32_t(text.size());
    for (uint32_t offset = 0; offset < n;) {
        const auto len = uint32_t(std::min<size_t>(unicode::sequence_length(uint8_t(text[offset])), n - offset));
        const auto idx = int32_t(symbols.size());
        symbols.push_back(Symbol{idx - 1, offset + len == n ? -1 : idx + 1, offset, len});
        offset += len;
    }

    auto try_push = [&](int32_t left, int32_t right) {
        if (left < 0 || right < 0) return;
        const Symbol& l = symbols[size_t(left)];
        const Symbol& r = symbols[size_t(right)];
        const std::string_view joined = text.substr(l.start, l.length + r.length);
        const TokenId id = find(joined);
        if (id == kNoToken) return;
        heap.push_back(Bigram{tokens[size_t(id)].score, left, right, l.length + r.length, id});
        std::push_heap(heap.begin(), heap.end(), BigramBefore{});
    };
    for (int32_t i = 1; i < int32_t(symbols.size()); ++i) try_push(i - 1, i);

    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), BigramBefore{});
        const Bigram b = heap.back();
        heap.pop_back();
        Symbol& l = symbols[size_t(b.left)];
        Symbol& r = symbols[size_t(b.right)];
        if (l.length == 0 || r.length == 0 || l.length + r.length != b.size) continue;  // stale
        l.length += r.length;
        r.length = 0;
        l.next = r.next;
        if (r.next >= 0) symbols[size_t(r.next)].prev = b.left;
        try_push(l.prev, b.left);
        try_push(b.left, l.next);
    }

    if (symbols.empty()) return;
    for (int32_t i = 0; i != -1; i = symbols[size_t(i)].next) {
        const Symbol& sym = symbols[size_t(i)];
        const std::string_view piece = text.substr(sym.start, sym.length);
        if (const TokenId id = find(piece); id != kNoToken) {
            out.push_back(id);
            continue;
        }
        // Every merged piece is a token, so a piece that is not is one character the
        // vocabulary lacks: byte fallback. (llama.cpp throws when even the byte token is
        // missing; we fall back to <unk>, or drop the byte when there is none.)
        for (unsigned char c : piece) {
            const TokenId byte_id = spm_byte_token[c];
            if (byte_id != kNoToken) out.push_back(byte_id);
            else if (unk != kNoToken) out.push_back(unk);
        }
    }
    // Scratch that grew for a long text is not kept (see tokenize_bpe).
    if (symbols.capacity() > (size_t{64} << 10)) {
        std::vector<Symbol>().swap(symbols);
        std::vector<Bigram>().swap(heap);
    }
}

}  // namespace genie
