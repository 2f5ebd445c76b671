// The vocabulary as loaded from GGUF metadata, with llama.cpp's load-time rules
// (per-model defaults, special-token detection, end-of-generation set, token
// attributes) and the lookup structures the tokenizers need.
#pragma once

#include "tokenizer/pretokenize.hpp"

#include <genie/tokenizer.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <deque>
#include <vector>

namespace genie::gguf {
class Reader;
}

namespace genie::tokenizer {

/// Token attributes, llama.cpp's llama_token_attr bits.
enum TokenAttr : uint32_t {
    kAttrUndefined = 0,
    kAttrUnknown = 1u << 0,
    kAttrUnused = 1u << 1,
    kAttrNormal = 1u << 2,
    kAttrControl = 1u << 3,
    kAttrUserDefined = 1u << 4,
    kAttrByte = 1u << 5,
    kAttrNormalized = 1u << 6,
    kAttrLstrip = 1u << 7,
    kAttrRstrip = 1u << 8,
    kAttrSingleWord = 1u << 9,
};

struct TokenData {
    std::string text;
    float score = 0.0f;
    uint32_t attr = kAttrNormal;
};

/// Open-addressing index from strings to ids. It does not own the strings: each key
/// must outlive the index (token texts live in Tokenizer::Impl::tokens). Compact and
/// cache-friendly, since loading a 151k-token vocabulary with 151k merges does ~600k
/// lookups. A repeated key is re-pointed at the newer id.
class StringIndex {
public:
    void reserve(size_t n);
    void insert_or_assign(std::string_view key, int32_t id);
    /// The id of `key`, or -1.
    int32_t find(std::string_view key) const noexcept {
        if (slots_.empty()) return -1;
        const uint64_t h = hash(key);
        const auto tag = uint32_t(h);
        for (size_t i = size_t(h >> 32) & mask_;; i = (i + 1) & mask_) {
            const Slot& s = slots_[i];
            if (s.id < 0) return -1;
            if (s.tag == tag && keys_[size_t(s.slot_key)] == key) return s.id;
        }
    }
    size_t size() const noexcept { return keys_.size(); }

private:
    struct Slot {
        uint32_t tag = 0;
        int32_t id = -1;
        int32_t slot_key = -1;  // index into keys_
    };
    static uint64_t hash(std::string_view s) noexcept;
    void grow();
    std::vector<Slot> slots_;
    std::vector<std::string_view> keys_;
    size_t mask_ = 0;
};

/// Open-addressing hash map from a pair of symbol ids to (merge rank, merged symbol).
class MergeTable {
public:
    struct Entry {
        uint64_t key = kEmpty;
        int32_t rank = 0;
        int32_t merged = 0;
    };
    static constexpr uint64_t kEmpty = ~uint64_t(0);

    void reserve(size_t n);
    /// Inserts unless the pair is present (the first, lowest rank wins, as in llama.cpp).
    void insert(int32_t left, int32_t right, int32_t rank, int32_t merged);
    const Entry* find(int32_t left, int32_t right) const noexcept {
        if (slots_.empty()) return nullptr;
        const uint64_t key = make_key(left, right);
        for (size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
            const Entry& e = slots_[i];
            if (e.key == key) return &e;
            if (e.key == kEmpty) return nullptr;
        }
    }
    size_t size() const noexcept { return size_; }

private:
    static uint64_t make_key(int32_t l, int32_t r) { return uint64_t(uint32_t(l)) << 32 | uint32_t(r); }
    static size_t hash(uint64_t k) {
        k ^= k >> 33;
        k *= 0xff51afd7ed558ccdULL;
        k ^= k >> 33;
        return size_t(k);
    }
    void grow();
    std::vector<Entry> slots_;
    size_t mask_ = 0;
    size_t size_ = 0;
};

enum class VocabType { Spm, Bpe };

}  // namespace genie::tokenizer

namespace genie {

/// Everything a loaded vocabulary knows. Immutable after load_vocab; shared by
/// Tokenizer copies and safe to read from many threads.
struct Tokenizer::Impl {
    using TokenAttr = tokenizer::TokenAttr;

    tokenizer::VocabType type = tokenizer::VocabType::Spm;
    std::string model;  // tokenizer.ggml.model
    std::string pre;    // tokenizer.ggml.pre as stored
    std::string general_name;

    std::vector<tokenizer::TokenData> tokens;
    tokenizer::StringIndex token_to_id;

    TokenId bos = 1, eos = 2, eot = kNoToken, eom = kNoToken, unk = 0, sep = kNoToken, pad = kNoToken,
            mask = kNoToken;
    TokenId fim_pre = kNoToken, fim_suf = kNoToken, fim_mid = kNoToken, fim_pad = kNoToken, fim_rep = kNoToken,
            fim_sep = kNoToken;
    TokenId linefeed = kNoToken;

    bool add_space_prefix = false;
    bool add_bos = false;
    bool add_eos = false;
    bool add_sep = false;
    bool ignore_merges = false;
    bool clean_spaces = false;
    bool remove_extra_whitespaces = false;

    std::vector<TokenId> eog_ids;             // sorted
    std::vector<uint8_t> is_eog_flag;         // per token
    std::vector<TokenId> special_by_length;   // control/user-defined/unknown, longest text first
    std::vector<std::string> piece_cache;     // token_to_piece(id, special = true)

    // ---- BPE --------------------------------------------------------------------------
    // Symbols are interned strings: ids < tokens.size() are tokens, larger ids are
    // strings that occur in merges but are not tokens (kept so merges behave as on strings).
    std::unique_ptr<tokenizer::PreTokenizer> pretokenizer;
    tokenizer::MergeTable merges;
    int32_t symbol_count = 0;
    std::array<int32_t, 256> byte_symbol{};        // symbol of each byte's byte-level character, or -1
    std::array<int32_t, 256> single_byte_token{};  // token whose text is that one byte, or -1
    tokenizer::StringIndex extra_symbols;          // non-token strings from merges
    std::deque<std::string> extra_texts;           // their storage

    // ---- SentencePiece ----------------------------------------------------------------
    std::array<int32_t, 256> spm_byte_token{};  // <0xXX> (else the byte itself), or -1

    // ---- helpers ----------------------------------------------------------------------
    TokenId find(std::string_view text) const noexcept { return token_to_id.find(text); }
    bool valid(TokenId id) const noexcept { return id >= 0 && size_t(id) < tokens.size(); }
    uint32_t attr(TokenId id) const noexcept { return tokens[size_t(id)].attr; }

    /// llama.cpp's token_to_piece without the cache (used to build it).
    std::string compute_piece(TokenId id) const;
    /// Appends the ids of `text` (one raw-text fragment) with the vocab's algorithm.
    void tokenize_bpe(std::string_view text, std::vector<TokenId>& out) const;
    void tokenize_spm(std::string_view text, std::vector<TokenId>& out) const;
};

namespace tokenizer {

/// Loads and validates the vocabulary of `reader` (genie::Error on failure).
std::shared_ptr<const Tokenizer::Impl> load_vocab(const gguf::Reader& reader);

/// The regex list of a pre-tokenizer type name ("qwen2", "llama-bpe" ...), plus the flags
/// llama.cpp sets with it. Throws Unsupported for an unknown name.
struct PreTokenizerConfig {
    std::vector<std::string> regexes;
    bool ignore_merges = false;
    bool clean_spaces = true;
    bool add_bos = false;
    bool clear_bos = false;  // chatglm: no BOS by default
};
PreTokenizerConfig pre_tokenizer_config(std::string_view pre);

/// One piece of text after special-token partitioning: either a token id or a range of
/// the input.
struct Fragment {
    TokenId token = kNoToken;  // kNoToken: raw text
    size_t offset = 0;
    size_t length = 0;
};
/// llama.cpp's tokenizer_st_partition: splits `text` around special tokens (control and
/// unknown only when `parse_special`; user-defined always).
std::vector<Fragment> partition_special(const Tokenizer::Impl& vocab, std::string_view text, bool parse_special);

}  // namespace tokenizer
}  // namespace genie
