// Token ids back to text: the per-token piece (llama.cpp's token_to_piece), whole-
// sequence detokenization (llama_detokenize, with its space clean-up) and the
// streaming detokenizer that only ever emits complete UTF-8.
#include "tokenizer/unicode.hpp"
#include "tokenizer/vocab.hpp"

#include <genie/error.hpp>

#include <cstdio>

namespace genie {

namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
    std::string out;
    out.reserve(s.size());
    size_t pos = 0;
    for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
        out.append(s, pos, hit - pos);
        out.append(to);
    }
    out.append(s, pos);
    s.swap(out);
}

// Byte-level text back to bytes. A character outside the byte alphabet is written as
// llama.cpp writes it: "[UNK_BYTE_0x<hex of its UTF-8>" followed by the whole token text and "]".
std::string decode_byte_level(const std::string& text) {
    thread_local std::vector<uint32_t> cpts;
    tokenizer::unicode::decode_lenient(text, cpts);
    std::string out;
    for (uint32_t cp : cpts) {
        const int byte = tokenizer::unicode::codepoint_to_byte(cp);
        if (byte >= 0) {
            out.push_back(char(byte));
        } else {
            out += "[UNK_BYTE_0x";
            for (unsigned char c : tokenizer::unicode::to_utf8(cp)) {
                char hex[3];
                std::snprintf(hex, sizeof hex, "%02x", c);
                out += hex;
            }
            out += text;
            out += "]";
        }
    }
    return out;
}

uint8_t byte_token_value(const std::string& text) {
    // "<0xXX>": llama.cpp reads the two characters after "<0x" as hex
    if (text.size() < 5) return 0;
    return uint8_t(std::strtol(text.substr(3, 2).c_str(), nullptr, 16));
}

}  // namespace

std::string Tokenizer::Impl::compute_piece(TokenId id) const {
    using namespace tokenizer;
    const TokenData& t = tokens[size_t(id)];
    if (t.attr & (kAttrUnknown | kAttrControl | kAttrUserDefined)) return t.text;
    if (t.attr & kAttrNormal) {
        if (type == VocabType::Spm) {
            std::string s = t.text;
            replace_all(s, "\xE2\x96\x81", " ");
            return s;
        }
        return decode_byte_level(t.text);
    }
    if (t.attr & kAttrByte) return std::string(1, char(byte_token_value(t.text)));
    return {};  // unused / undefined tokens have no text
}

std::string sanitize_utf8(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    for (size_t i = 0; i < bytes.size();) {
        size_t invalid = 0;
        const int len = tokenizer::unicode::check_sequence(bytes, i, invalid);
        if (len > 0) {
            out.append(bytes.substr(i, size_t(len)));
            i += size_t(len);
        } else if (len == 0) {
            out += "\xEF\xBF\xBD";
            i += invalid;
        } else {  // incomplete at the end
            out += "\xEF\xBF\xBD";
            break;
        }
    }
    return out;
}

std::string Tokenizer::detokenize(std::span<const TokenId> ids, const DetokenizeOptions& options) const {
    const Impl& v = *impl_;
    for (TokenId id : ids)
        if (!v.valid(id))
            throw Error(ErrorCode::InvalidArgument,
                        "detokenize: token id " + std::to_string(id) + " is outside the vocabulary of " +
                            std::to_string(v.tokens.size()) + " tokens");

    bool remove_space = v.add_space_prefix;
    if (options.remove_special && v.add_bos && !ids.empty() && ids.front() == v.bos) {
        remove_space = false;  // llama.cpp keeps the space when it drops a leading BOS
        ids = ids.subspan(1);
    }
    if (options.remove_special && v.add_eos && !ids.empty() && ids.back() == v.eos) ids = ids.first(ids.size() - 1);

    std::string text;
    for (TokenId id : ids) {
        const bool special = (v.attr(id) & (tokenizer::kAttrUnknown | tokenizer::kAttrControl)) != 0;
        if (!special || options.render_special) {
            std::string_view piece = v.piece_cache[size_t(id)];
            if (remove_space && !piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
            text += piece;
        }
        remove_space = false;
    }

    if (v.clean_spaces && !text.empty()) {
        // llama.cpp's three passes, in place, in the same order.
        std::string& t = text;
        size_t total = t.size();
        // 1: " ?", " !", " .", " ," lose the space
        size_t w = 1;
        for (size_t i = 1; i < total; ++i) {
            const char x = t[i];
            if (t[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --w;
            t[w++] = x;
        }
        total = w;
        // 2: " ' " becomes "'"
        w = 1;
        for (size_t i = 1; i < total; ++i) {
            const char x = t[i];
            if (x == '\'' && i + 1 < total && t[i - 1] == ' ' && t[i + 1] == ' ') {
                --w;
                t[++i] = '\0';
            }
            t[w++] = x;
        }
        total = w;
        // 3: " 's", " 'm", " 're", " 've" lose the space
        w = 1;
        for (size_t i = 1; i < total; ++i) {
            const char x = t[i];
            if (t[i - 1] == ' ' && x == '\'' && i + 1 < total) {
                const char x1 = t[i + 1];
                if (x1 == 's' || x1 == 'm') {
                    --w;
                } else if (i + 2 < total) {
                    const char x2 = t[i + 2];
                    if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) --w;
                }
            }
            t[w++] = x;
        }
        t.resize(w);
    }
    if (options.replace_invalid_utf8) return sanitize_utf8(text);
    return text;
}

// ---- StreamingDetokenizer -----------------------------------------------------------

StreamingDetokenizer::StreamingDetokenizer(Tokenizer tokenizer, StreamingOptions options)
    : tokenizer_(std::move(tokenizer)), options_(options) {}

std::string StreamingDetokenizer::push(TokenId id) {
    std::string piece = tokenizer_.token_to_piece(id, options_.render_special);  // validates id
    if (first_ && options_.strip_leading_space && tokenizer_.impl().add_space_prefix && !piece.empty() &&
        piece.front() == ' ')
        piece.erase(0, 1);
    first_ = false;
    pending_ += piece;

    // Emit everything up to the last point where the bytes are decided: complete
    // characters as they are, definitely invalid bytes as U+FFFD; hold back a valid
    // but incomplete tail.
    std::string out;
    size_t i = 0;
    while (i < pending_.size()) {
        size_t invalid = 0;
        const int len = tokenizer::unicode::check_sequence(pending_, i, invalid);
        if (len > 0) {
            out.append(pending_, i, size_t(len));
            i += size_t(len);
        } else if (len == 0) {
            out += "\xEF\xBF\xBD";
            i += invalid;
        } else {
            break;  // incomplete: wait for more bytes
        }
    }
    pending_.erase(0, i);
    return out;
}

std::string StreamingDetokenizer::flush() {
    std::string out = sanitize_utf8(pending_);
    reset();
    return out;
}

void StreamingDetokenizer::reset() noexcept {
    pending_.clear();
    first_ = true;
}

}  // namespace genie
