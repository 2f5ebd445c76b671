// Unicode facts the tokenizer needs: lenient UTF-8 decoding (llama.cpp's rules),
// encoding, general categories (generated table, Unicode 15.1 like llama.cpp's) and
// the GPT-2 byte-level alphabet.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace genie::tokenizer::unicode {

/// General-category bits of a code point; exactly one of the category bits is set
/// (Undefined for unassigned code points and anything above U+10FFFF).
enum CategoryBits : uint16_t {
    kUndefined = 0x0001,
    kNumber = 0x0002,       // \p{N}
    kLetter = 0x0004,       // \p{L}
    kSeparator = 0x0008,    // \p{Z}
    kMark = 0x0010,         // \p{M}
    kPunctuation = 0x0020,  // \p{P}
    kSymbol = 0x0040,       // \p{S}
    kControl = 0x0080,      // \p{C} (assigned: Cc, Cf, Cs, Co)
    kCategoryMask = 0x00FF,
    kWhitespace = 0x0100,   // the White_Space property (\s)
};

/// Category bits | kWhitespace for `cp`. Any uint32 is accepted.
uint16_t flags(uint32_t cp) noexcept;
inline bool is_letter(uint32_t cp) noexcept { return flags(cp) & kLetter; }
inline bool is_number(uint32_t cp) noexcept { return flags(cp) & kNumber; }
inline bool is_whitespace(uint32_t cp) noexcept { return flags(cp) & kWhitespace; }

/// Version of the Unicode Character Database the category table was generated from.
const char* table_version() noexcept;

/// Byte length of a UTF-8 sequence from its first byte, llama.cpp's unicode_len_utf8:
/// 1 for 0x00-0xBF (a stray continuation byte counts as one), 2 for 0xC0-0xDF,
/// 3 for 0xE0-0xEF, 4 for 0xF0-0xFF.
inline size_t sequence_length(uint8_t lead) noexcept {
    static constexpr uint8_t kLookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return kLookup[lead >> 4];
}

inline constexpr uint32_t kReplacement = 0xFFFD;

/// Decodes `text` the way llama.cpp's unicode_cpts_from_utf8 does: a lead byte with
/// enough continuation bytes gives its code point (overlong forms and surrogates are
/// not rejected); anything else gives U+FFFD and consumes one byte. Deviation: a
/// 4-byte form above U+10FFFF (which makes llama.cpp throw) also gives U+FFFD, one byte.
void decode_lenient(std::string_view text, std::vector<uint32_t>& out);

/// Appends the UTF-8 form of `cp` (surrogates are encoded like any other value, as
/// llama.cpp does; values above U+10FFFF append U+FFFD).
void append_utf8(std::string& out, uint32_t cp);
inline std::string to_utf8(uint32_t cp) {
    std::string s;
    append_utf8(s, cp);
    return s;
}

/// The GPT-2 byte-level alphabet: the code point that stands for each byte.
uint32_t byte_to_codepoint(uint8_t byte) noexcept;
/// The byte a byte-level code point stands for, or -1 for a code point outside the alphabet.
int codepoint_to_byte(uint32_t cp) noexcept;
/// UTF-8 of byte_to_codepoint(byte) (1 or 2 bytes).
std::string_view byte_to_utf8(uint8_t byte) noexcept;

/// Length of the valid UTF-8 sequence at `s[i]`, 0 if the bytes there are definitely
/// invalid (then `invalid_len` is how many bytes form the maximal invalid subpart), or
/// -1 if the sequence is a valid but incomplete prefix that runs past the end.
int check_sequence(std::string_view s, size_t i, size_t& invalid_len) noexcept;

namespace detail {
struct CategoryRange {
    uint32_t first;
    uint16_t bits;
};
extern const CategoryRange kCategoryRanges[];
extern const size_t kCategoryRangeCount;
extern const char kUnicodeVersion[];
}  // namespace detail

}  // namespace genie::tokenizer::unicode
