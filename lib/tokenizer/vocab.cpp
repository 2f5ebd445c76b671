// Loading a vocabulary from GGUF metadata, following llama.cpp's
// llama_vocab::impl::load rule for rule (defaults per tokenizer model, special ids,
// end-of-generation detection, token attributes, the special-token and piece caches).
#include "tokenizer/vocab.hpp"

#include "gguf/gguf_reader.hpp"
#include "tokenizer/unicode.hpp"

#include <genie/error.hpp>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace genie::tokenizer {

// ---- MergeTable -------------------------------------------------------------------

void MergeTable::reserve(size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    if (cap <= slots_.size()) return;
    std::vector<Entry> old;
    old.swap(slots_);
    slots_.assign(cap, Entry{});
    mask_ = cap - 1;
    size_ = 0;
    for (const Entry& e : old)
        if (e.key != kEmpty) insert(int32_t(e.key >> 32), int32_t(uint32_t(e.key)), e.rank, e.merged);
}

void MergeTable::grow() { reserve(std::max<size_t>(size_ * 2, 16)); }

void MergeTable::insert(int32_t left, int32_t right, int32_t rank, int32_t merged) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    const uint64_t key = make_key(left, right);
    for (size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
        Entry& e = slots_[i];
        if (e.key == key) return;  // keep the first rank
        if (e.key == kEmpty) {
            e = Entry{key, rank, merged};
            ++size_;
            return;
        }
    }
}

// ---- StringIndex ------------------------------------------------------------------

uint64_t StringIndex::hash(std::string_view s) noexcept {
    // FNV-1a over 8-byte words, then a 64-bit mix: fast on short token texts.
    uint64_t h = 0xcbf29ce484222325ULL ^ s.size();
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
        uint64_t w;
        std::memcpy(&w, s.data() + i, 8);
        h = (h ^ w) * 0x100000001b3ULL;
        h ^= h >> 29;
    }
    uint64_t tail = 0;
    std::memcpy(&tail, s.data() + i, s.size() - i);
    h = (h ^ tail) * 0x9E3779B97F4A7C15ULL;
    h ^= h >> 32;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

void StringIndex::reserve(size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    if (cap <= slots_.size()) return;
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(cap, Slot{});
    mask_ = cap - 1;
    for (const Slot& s : old) {
        if (s.id < 0) continue;
        const uint64_t h = hash(keys_[size_t(s.slot_key)]);
        size_t i = size_t(h >> 32) & mask_;
        while (slots_[i].id >= 0) i = (i + 1) & mask_;
        slots_[i] = s;
    }
}

void StringIndex::grow() { reserve(std::max<size_t>(keys_.size() * 2, 16)); }

void StringIndex::insert_or_assign(std::string_view key, int32_t id) {
    if ((keys_.size() + 1) * 2 > slots_.size()) grow();
    const uint64_t h = hash(key);
    const auto tag = uint32_t(h);
    for (size_t i = size_t(h >> 32) & mask_;; i = (i + 1) & mask_) {
        Slot& s = slots_[i];
        if (s.id < 0) {
            s = Slot{tag, id, int32_t(keys_.size())};
            keys_.push_back(key);
            return;
        }
        if (s.tag == tag && keys_[size_t(s.slot_key)] == key) {
            s.id = id;
            keys_[size_t(s.slot_key)] = key;
            return;
        }
    }
}

namespace {

using Impl = Tokenizer::Impl;

[[noreturn]] void fail(const gguf::Reader& r, ErrorCode code, const std::string& what) {
    throw Error(code, "'" + r.path() + "': " + what);
}

const gguf::Array* find_array(const gguf::Reader& r, std::string_view key, gguf::ValueType element,
                              bool required) {
    const gguf::Value* v = r.find(key);
    if (!v) {
        if (required) fail(r, ErrorCode::NotFound, "metadata key '" + std::string(key) + "' is missing");
        return nullptr;
    }
    const gguf::Array* a = v->array();
    if (!a || a->element_type != element)
        fail(r, ErrorCode::Format,
             "metadata key '" + std::string(key) + "' has type " + v->type_description() + ", expected array[" +
                 std::string(gguf::value_type_name(element)) + "]");
    return a;
}

// GGUF token type number (llama_token_type) -> attribute bits.
uint32_t attr_from_type(int32_t type) {
    switch (type) {
        case 1: return kAttrNormal;
        case 2: return kAttrUnknown;
        case 3: return kAttrControl;
        case 4: return kAttrUserDefined;
        case 5: return kAttrUnused;
        case 6: return kAttrByte;
        default: return kAttrUndefined;
    }
}

void mark_control(Impl& v, TokenId id) { v.tokens[size_t(id)].attr |= kAttrControl; }

// Texts llama.cpp uses to find special tokens that the metadata does not name.
constexpr std::string_view kEotTexts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                          "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]",
                                          "<｜end▁of▁sentence｜>", "<end_of_utterance>"};
constexpr std::string_view kEomTexts[] = {"<|eom_id|>"};
constexpr std::string_view kFimPreTexts[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>",
                                             "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"};
constexpr std::string_view kFimSufTexts[] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>",
                                             "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"};
constexpr std::string_view kFimMidTexts[] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>",
                                             "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"};
constexpr std::string_view kFimPadTexts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
constexpr std::string_view kFimRepTexts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"};
constexpr std::string_view kFimSepTexts[] = {"<|file_sep|>"};
constexpr std::string_view kEogTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
    "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
    "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~["};

template <size_t N>
bool in(std::string_view text, const std::string_view (&list)[N]) {
    return std::find(std::begin(list), std::end(list), text) != std::end(list);
}

// Finds a special token by its text when the metadata did not name one. llama.cpp walks
// its hash map, so which of several candidates wins is unspecified there; we walk ids
// from the highest down, which picks what llama.cpp reports for Qwen (<|im_end|>) and
// Llama 3 (<|eot_id|>). A token found this way becomes a control token.
template <size_t N>
void detect_by_text(Impl& v, TokenId& id, const std::string_view (&texts)[N]) {
    if (id != kNoToken) return;
    TokenId best = kNoToken;
    for (std::string_view text : texts) best = std::max(best, v.find(text));
    if (best == kNoToken) return;
    id = best;
    mark_control(v, id);
}

}  // namespace

std::shared_ptr<const Tokenizer::Impl> load_vocab(const gguf::Reader& r) {
    auto vp = std::make_shared<Impl>();
    Impl& v = *vp;

    v.model = r.get<std::string>("tokenizer.ggml.model");
    v.pre = r.get_or<std::string>("tokenizer.ggml.pre", "");
    v.general_name = r.get_or<std::string>("general.name", "");

    PreTokenizerConfig pre_config;
    if (v.model == "llama") {
        v.type = VocabType::Spm;
        v.bos = 1;
        v.eos = 2;
        v.unk = 0;
        v.add_space_prefix = true;
        v.clean_spaces = false;
        v.add_bos = true;
        v.add_eos = false;
    } else if (v.model == "gpt2") {
        v.type = VocabType::Bpe;
        v.bos = 11;
        v.eos = 11;
        v.unk = kNoToken;
        pre_config = pre_tokenizer_config(v.pre);
        v.add_space_prefix = false;
        v.clean_spaces = pre_config.clean_spaces;
        v.ignore_merges = pre_config.ignore_merges;
        v.add_bos = pre_config.add_bos;
        if (pre_config.clear_bos) v.bos = kNoToken;
    } else {
        fail(r, ErrorCode::Unsupported,
             "tokenizer model '" + v.model + "' is not supported (supported: 'llama' SentencePiece, 'gpt2' BPE)");
    }
    v.add_space_prefix = r.get_or<bool>("tokenizer.ggml.add_space_prefix", v.add_space_prefix);
    v.remove_extra_whitespaces = r.get_or<bool>("tokenizer.ggml.remove_extra_whitespaces", false);

    // ---- tokens, scores, types ---------------------------------------------------------
    const gguf::Array* tokens = find_array(r, "tokenizer.ggml.tokens", gguf::ValueType::String, true);
    const size_t n = tokens->items.size();
    if (n == 0) fail(r, ErrorCode::Format, "'tokenizer.ggml.tokens' is empty");
    if (n > size_t(INT32_MAX)) fail(r, ErrorCode::Format, "'tokenizer.ggml.tokens' has too many entries");

    const gguf::Value* scores_value = r.find("tokenizer.ggml.scores");
    const gguf::Array* scores = nullptr;
    if (scores_value) {
        scores = scores_value->array();
        if (!scores || (scores->element_type != gguf::ValueType::Float32 &&
                        scores->element_type != gguf::ValueType::Int32))
            fail(r, ErrorCode::Format, "'tokenizer.ggml.scores' must be an array of float32 or int32");
        if (scores->items.size() < n)
            fail(r, ErrorCode::Format, "'tokenizer.ggml.scores' has " + std::to_string(scores->items.size()) +
                                           " entries for " + std::to_string(n) + " tokens");
    }
    const gguf::Array* types = find_array(r, "tokenizer.ggml.token_type", gguf::ValueType::Int32, false);
    if (types && types->items.size() < n)
        fail(r, ErrorCode::Format, "'tokenizer.ggml.token_type' has " + std::to_string(types->items.size()) +
                                       " entries for " + std::to_string(n) + " tokens");

    v.tokens.resize(n);
    v.token_to_id.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        auto& t = v.tokens[i];
        t.text = *tokens->items[i].string();
        if (t.text.empty()) t.text = "[EMPTY_" + std::to_string(i) + "]";
        v.token_to_id.insert_or_assign(t.text, TokenId(i));  // a repeated text maps to its last id
        if (scores) {
            const auto& sv = scores->items[i].storage();
            if (auto f = std::get_if<float>(&sv)) t.score = *f;
            else t.score = float(std::get<int32_t>(sv));
        }
        t.attr = types ? attr_from_type(std::get<int32_t>(types->items[i].storage())) : kAttrNormal;
    }

    // ---- BPE merges --------------------------------------------------------------------
    if (v.type == VocabType::Bpe) {
        const gguf::Array* merges = find_array(r, "tokenizer.ggml.merges", gguf::ValueType::String, true);
        v.symbol_count = int32_t(n);
        auto intern = [&](std::string_view s) -> int32_t {
            if (const int32_t id = v.token_to_id.find(s); id >= 0) return id;
            if (const int32_t id = v.extra_symbols.find(s); id >= 0) return id;
            v.extra_texts.emplace_back(s);
            v.extra_symbols.insert_or_assign(v.extra_texts.back(), v.symbol_count);
            return v.symbol_count++;
        };
        v.merges.reserve(merges->items.size());
        std::string joined;
        for (size_t i = 0; i < merges->items.size(); ++i) {
            const std::string& m = *merges->items[i].string();
            // llama.cpp splits at the first space after the first character.
            const size_t space = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
            if (space == std::string::npos) continue;  // no pair: llama.cpp stores ("", ""), which never matches
            const std::string_view first(m.data(), space);
            const std::string_view second(m.data() + space + 1, m.size() - space - 1);
            if (second.empty()) continue;
            joined.assign(first);
            joined.append(second);
            const int32_t l = intern(first), rr = intern(second), merged = intern(joined);
            v.merges.insert(l, rr, int32_t(i), merged);
        }
        for (int b = 0; b < 256; ++b) {
            const std::string_view ch = unicode::byte_to_utf8(uint8_t(b));
            const int32_t token = v.token_to_id.find(ch);
            v.byte_symbol[b] = token >= 0 ? token : v.extra_symbols.find(ch);
            const char one = char(b);
            v.single_byte_token[b] = v.find(std::string_view(&one, 1));
        }
        v.pretokenizer = std::make_unique<PreTokenizer>(pre_config.regexes);
    } else {
        static const char* hex = "0123456789ABCDEF";
        for (int b = 0; b < 256; ++b) {
            const char name[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
            TokenId id = v.find(std::string_view(name, 6));
            if (id == kNoToken) {
                const char one = char(b);
                id = v.find(std::string_view(&one, 1));
            }
            v.spm_byte_token[b] = id;
        }
    }

    // ---- special ids -------------------------------------------------------------------
    struct SpecialKey {
        const char* key;
        TokenId* id;
    };
    const SpecialKey special_keys[] = {
        {"tokenizer.ggml.bos_token_id", &v.bos},         {"tokenizer.ggml.eos_token_id", &v.eos},
        {"tokenizer.ggml.eot_token_id", &v.eot},         {"tokenizer.ggml.eom_token_id", &v.eom},
        {"tokenizer.ggml.unknown_token_id", &v.unk},     {"tokenizer.ggml.seperator_token_id", &v.sep},
        {"tokenizer.ggml.padding_token_id", &v.pad},     {"tokenizer.ggml.mask_token_id", &v.mask},
        {"tokenizer.ggml.fim_pre_token_id", &v.fim_pre}, {"tokenizer.ggml.fim_suf_token_id", &v.fim_suf},
        {"tokenizer.ggml.fim_mid_token_id", &v.fim_mid}, {"tokenizer.ggml.fim_pad_token_id", &v.fim_pad},
        {"tokenizer.ggml.fim_rep_token_id", &v.fim_rep}, {"tokenizer.ggml.fim_sep_token_id", &v.fim_sep},
        // deprecated spellings
        {"tokenizer.ggml.prefix_token_id", &v.fim_pre},  {"tokenizer.ggml.suffix_token_id", &v.fim_suf},
        {"tokenizer.ggml.middle_token_id", &v.fim_mid},
    };
    for (const auto& sk : special_keys) {
        if (*sk.id >= 0 && size_t(*sk.id) >= n) *sk.id = kNoToken;  // default out of range
        const gguf::Value* value = r.find(sk.key);
        if (!value) continue;
        auto id = value->as<uint32_t>();
        if (!id) fail(r, ErrorCode::Format, std::string("'") + sk.key + "' must be a non-negative integer");
        if (*id < n) *sk.id = TokenId(*id);  // llama.cpp ignores an out-of-range id (keeps the default)
    }
    v.add_bos = r.get_or<bool>("tokenizer.ggml.add_bos_token", v.add_bos);
    v.add_eos = r.get_or<bool>("tokenizer.ggml.add_eos_token", v.add_eos);
    v.add_sep = r.get_or<bool>("tokenizer.ggml.add_sep_token", v.add_sep);

    detect_by_text(v, v.eot, kEotTexts);
    detect_by_text(v, v.eom, kEomTexts);
    detect_by_text(v, v.fim_pre, kFimPreTexts);
    detect_by_text(v, v.fim_suf, kFimSufTexts);
    detect_by_text(v, v.fim_mid, kFimMidTexts);
    detect_by_text(v, v.fim_pad, kFimPadTexts);
    detect_by_text(v, v.fim_rep, kFimRepTexts);
    detect_by_text(v, v.fim_sep, kFimSepTexts);

    // control tokens named "...unused..." are unused
    for (auto& t : v.tokens)
        if ((t.attr & kAttrControl) && t.text.find("unused") != std::string::npos) t.attr |= kAttrUnused;

    // ---- end of generation -------------------------------------------------------------
    std::vector<uint8_t> eog(n, 0);
    for (TokenId id : {v.fim_pad, v.fim_rep, v.fim_sep})
        if (id != kNoToken) eog[size_t(id)] = 1;
    for (std::string_view text : kEogTexts) {
        if (const TokenId id = v.find(text); id != kNoToken) {
            eog[size_t(id)] = 1;
            v.tokens[size_t(id)].attr |= kAttrControl;
        }
    }
    // gpt-oss: these always render
    for (const char* text : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"})
        if (const TokenId id = v.find(text); id != kNoToken) v.tokens[size_t(id)].attr = kAttrUserDefined;
    for (TokenId id : {v.eos, v.eot, v.eom})
        if (id != kNoToken) eog[size_t(id)] = 1;
    {
        // o200k_harmony / solar-open: "<|end|>" is not end of generation next to <|return|> + <|call|>
        bool has_return = false, has_call = false, has_flush = false;
        TokenId end_id = kNoToken;
        for (size_t i = 0; i < n; ++i) {
            if (!eog[i]) continue;
            const std::string& t = v.tokens[i].text;
            if (t == "<|return|>") has_return = true;
            else if (t == "<|call|>" || t == "<|calls|>") has_call = true;
            else if (t == "<|flush|>") has_flush = true;
            else if (t == "<|end|>") end_id = TokenId(i);
        }
        if (end_id != kNoToken && ((has_return && has_call) || (has_call && has_flush))) {
            eog[size_t(end_id)] = 0;
            v.tokens[size_t(end_id)].attr = kAttrUserDefined;
        }
        // gemma4 / plamo: "</s>" is a normal token there
        bool has_marker = false;
        TokenId s_id = kNoToken;
        for (size_t i = 0; i < n; ++i) {
            if (!eog[i]) continue;
            const std::string& t = v.tokens[i].text;
            if (t == "<|tool_response>" || t == "<|plamo:eos|>") has_marker = true;
            else if (t == "</s>") s_id = TokenId(i);
        }
        if (has_marker && s_id != kNoToken) {
            eog[size_t(s_id)] = 0;
            v.tokens[size_t(s_id)].attr = kAttrNormal;
        }
    }
    v.is_eog_flag = std::move(eog);
    for (size_t i = 0; i < n; ++i)
        if (v.is_eog_flag[i]) v.eog_ids.push_back(TokenId(i));

    // ---- caches ------------------------------------------------------------------------
    for (size_t i = 0; i < n; ++i)
        if (v.tokens[i].attr & (kAttrControl | kAttrUserDefined | kAttrUnknown)) v.special_by_length.push_back(TokenId(i));
    // longest first; llama.cpp's std::sort leaves equal lengths unordered, we keep id order
    std::stable_sort(v.special_by_length.begin(), v.special_by_length.end(), [&](TokenId a, TokenId b) {
        return v.tokens[size_t(a)].text.size() > v.tokens[size_t(b)].text.size();
    });
    v.piece_cache.resize(n);
    for (size_t i = 0; i < n; ++i) v.piece_cache[i] = v.compute_piece(TokenId(i));

    // per-model token attributes (after the caches, as in llama.cpp)
    {
        std::string name = v.general_name;
        std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
        if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
            for (TokenId id : v.special_by_length) v.tokens[size_t(id)].attr |= kAttrRstrip;
            if (TokenId id = v.find("</s>"); id != kNoToken) v.tokens[size_t(id)].attr |= kAttrRstrip;
            for (const char* t : {"<unk>", "<s>", "<|endoftext|>"})
                if (TokenId id = v.find(t); id != kNoToken) v.tokens[size_t(id)].attr &= ~uint32_t(kAttrRstrip);
        }
    }

    // ---- newline -----------------------------------------------------------------------
    if (v.type == VocabType::Spm) {
        v.linefeed = v.spm_byte_token['\n'] != kNoToken ? v.spm_byte_token['\n'] : v.pad;
    } else {
        std::vector<TokenId> ids;
        v.tokenize_bpe("\n", ids);
        v.linefeed = ids.empty() ? v.pad : ids[0];
    }
    return vp;
}

}  // namespace genie::tokenizer
