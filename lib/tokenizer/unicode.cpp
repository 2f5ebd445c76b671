#include "tokenizer/unicode.hpp"

#include <array>
#include <memory>

namespace genie::tokenizer::unicode {

namespace {

constexpr uint32_t kMaxCodepoint = 0x10FFFF;

// The White_Space property of the Unicode Character Database (PropList.txt); unchanged
// since Unicode 6.3. llama.cpp's unicode_set_whitespace is the same set.
constexpr uint32_t kWhiteSpace[] = {
    0x0009, 0x000A, 0x000B, 0x000C, 0x000D, 0x0020, 0x0085, 0x00A0, 0x1680,
    0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008,
    0x2009, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000,
};

// One uint16 per code point (2.2 MB), expanded once from the range table: the
// pre-tokenizers look up every code point of the input, so this must be O(1).
struct FlagTable {
    std::unique_ptr<uint16_t[]> flags{new uint16_t[kMaxCodepoint + 1]};
    FlagTable() {
        for (size_t r = 0; r < detail::kCategoryRangeCount; ++r) {
            const uint32_t begin = detail::kCategoryRanges[r].first;
            const uint32_t end = r + 1 < detail::kCategoryRangeCount ? detail::kCategoryRanges[r + 1].first
                                                                       : kMaxCodepoint + 1;
            for (uint32_t cp = begin; cp < end; ++cp) flags[cp] = detail::kCategoryRanges[r].bits;
        }
        for (uint32_t cp : kWhiteSpace) flags[cp] |= kWhitespace;
    }
};

const FlagTable& flag_table() {
    static const FlagTable table;
    return table;
}

struct ByteAlphabet {
    std::array<uint32_t, 256> to_cp{};
    std::array<std::string, 256> to_utf8;
    std::array<int16_t, 512> from_cp{};  // byte-level code points are all < 0x144
    ByteAlphabet() {
        // GPT-2's bytes_to_unicode(): printable Latin-1 bytes stand for themselves, the
        // other 68 bytes map, in order, to U+0100, U+0101, ...
        std::array<bool, 256> printable{};
        for (int b = 0x21; b <= 0x7E; ++b) printable[b] = true;
        for (int b = 0xA1; b <= 0xAC; ++b) printable[b] = true;
        for (int b = 0xAE; b <= 0xFF; ++b) printable[b] = true;
        uint32_t next = 256;
        for (int b = 0; b < 256; ++b) to_cp[b] = printable[b] ? uint32_t(b) : next++;
        from_cp.fill(-1);
        for (int b = 0; b < 256; ++b) {
            from_cp[to_cp[b]] = int16_t(b);
            append_utf8(to_utf8[b], to_cp[b]);
        }
    }
};

const ByteAlphabet& byte_alphabet() {
    static const ByteAlphabet alphabet;
    return alphabet;
}

}  // namespace

uint16_t flags(uint32_t cp) noexcept {
    if (cp > kMaxCodepoint) return kUndefined;
    return flag_table().flags[cp];
}

const char* table_version() noexcept { return detail::kUnicodeVersion; }

void decode_lenient(std::string_view text, std::vector<uint32_t>& out) {
    out.clear();
    out.reserve(text.size());
    const auto* s = reinterpret_cast<const uint8_t*>(text.data());
    const size_t n = text.size();
    size_t i = 0;
    auto cont = [&](size_t k) { return i + k < n && (s[i + k] & 0xC0) == 0x80; };
    while (i < n) {
        const uint8_t b0 = s[i];
        if (b0 < 0x80) {
            out.push_back(b0);
            i += 1;
        } else if (!(b0 & 0x40)) {  // stray continuation byte
            out.push_back(kReplacement);
            i += 1;
        } else if (!(b0 & 0x20)) {
            if (cont(1)) {
                out.push_back(uint32_t(b0 & 0x1F) << 6 | (s[i + 1] & 0x3F));
                i += 2;
            } else {
                out.push_back(kReplacement);
                i += 1;
            }
        } else if (!(b0 & 0x10)) {
            if (cont(1) && cont(2)) {
                out.push_back(uint32_t(b0 & 0x0F) << 12 | uint32_t(s[i + 1] & 0x3F) << 6 | (s[i + 2] & 0x3F));
                i += 3;
            } else {
                out.push_back(kReplacement);
                i += 1;
            }
        } else if (!(b0 & 0x08)) {
            const uint32_t cp = cont(1) && cont(2) && cont(3)
                                    ? uint32_t(b0 & 0x07) << 18 | uint32_t(s[i + 1] & 0x3F) << 12 |
                                          uint32_t(s[i + 2] & 0x3F) << 6 | (s[i + 3] & 0x3F)
                                    : 0xFFFFFFFFu;
            if (cp <= kMaxCodepoint) {
                out.push_back(cp);
                i += 4;
            } else {
                out.push_back(kReplacement);
                i += 1;
            }
        } else {
            out.push_back(kReplacement);
            i += 1;
        }
    }
}

void append_utf8(std::string& out, uint32_t cp) {
    if (cp <= 0x7F) {
        out.push_back(char(cp));
    } else if (cp <= 0x7FF) {
        out.push_back(char(0xC0 | (cp >> 6)));
        out.push_back(char(0x80 | (cp & 0x3F)));
    } else if (cp <= 0xFFFF) {
        out.push_back(char(0xE0 | (cp >> 12)));
        out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(char(0x80 | (cp & 0x3F)));
    } else if (cp <= kMaxCodepoint) {
        out.push_back(char(0xF0 | (cp >> 18)));
        out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(char(0x80 | (cp & 0x3F)));
    } else {
        out.append("\xEF\xBF\xBD");
    }
}

uint32_t byte_to_codepoint(uint8_t byte) noexcept { return byte_alphabet().to_cp[byte]; }

int codepoint_to_byte(uint32_t cp) noexcept {
    if (cp >= 512) return -1;
    return byte_alphabet().from_cp[cp];
}

std::string_view byte_to_utf8(uint8_t byte) noexcept { return byte_alphabet().to_utf8[byte]; }

int check_sequence(std::string_view text, size_t i, size_t& invalid_len) noexcept {
    // Well-formed UTF-8 per Unicode table 3-7: the second byte's range depends on the lead.
    const auto* s = reinterpret_cast<const uint8_t*>(text.data());
    const size_t n = text.size();
    const uint8_t b0 = s[i];
    invalid_len = 1;
    if (b0 < 0x80) return 1;
    size_t len;
    uint8_t lo = 0x80, hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        len = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        len = 3;
        if (b0 == 0xE0) lo = 0xA0;
        if (b0 == 0xED) hi = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        len = 4;
        if (b0 == 0xF0) lo = 0x90;
        if (b0 == 0xF4) hi = 0x8F;
    } else {
        return 0;
    }
    for (size_t k = 1; k < len; ++k) {
        if (i + k >= n) return -1;  // a valid prefix so far, cut by the end
        const uint8_t b = s[i + k];
        const uint8_t l = k == 1 ? lo : 0x80;
        const uint8_t h = k == 1 ? hi : 0xBF;
        if (b < l || b > h) {
            invalid_len = k;
            return 0;
        }
    }
    return int(len);
}

}  // namespace genie::tokenizer::unicode
