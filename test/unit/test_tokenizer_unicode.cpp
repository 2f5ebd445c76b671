// The Unicode tables and decoding rules the pre-tokenizers rely on.
#include "tokenizer/unicode.hpp"

#include <catch2/catch.hpp>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <string>

namespace uc = genie::tokenizer::unicode;

TEST_CASE("unicode: the category table agrees with PCRE2 wherever PCRE2 knows the code point", "[tokenizer][unicode]") {
    // The table is Unicode 15.1 (llama.cpp's version); PCRE2 may be older, so code points
    // it calls unassigned (Cn) are skipped.
    struct Cat {
        const char* pattern;
        uint16_t bit;
    };
    const Cat cats[] = {{"^\\p{N}$", uc::kNumber},      {"^\\p{L}$", uc::kLetter}, {"^\\p{Z}$", uc::kSeparator},
                        {"^\\p{M}$", uc::kMark},        {"^\\p{P}$", uc::kPunctuation},
                        {"^\\p{S}$", uc::kSymbol},      {"^\\p{Cn}$", uc::kUndefined}};
    std::vector<pcre2_code*> codes;
    for (const Cat& c : cats) {
        int err;
        PCRE2_SIZE off;
        codes.push_back(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(c.pattern), PCRE2_ZERO_TERMINATED, PCRE2_UTF, &err,
                                      &off, nullptr));
        REQUIRE(codes.back());
    }
    pcre2_match_data* md = pcre2_match_data_create(4, nullptr);
    size_t checked = 0, mismatches = 0;
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp += (cp < 0x30000 ? 1 : 97)) {
        if (cp >= 0xD800 && cp <= 0xDFFF) continue;
        const std::string s = uc::to_utf8(cp);
        auto is = [&](size_t k) {
            return pcre2_match(codes[k], reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0, 0, md, nullptr) >= 0;
        };
        if (is(6)) continue;  // unassigned for PCRE2
        ++checked;
        uint16_t expected = uc::kControl;
        for (size_t k = 0; k < 6; ++k)
            if (is(k)) expected = cats[k].bit;
        if ((uc::flags(cp) & uc::kCategoryMask) != expected) ++mismatches;
    }
    pcre2_match_data_free(md);
    for (auto* c : codes) pcre2_code_free(c);
    CHECK(checked > 100000);
    CHECK(mismatches == 0);
    CHECK(std::string(uc::table_version()) == "15.1.0");
}

TEST_CASE("unicode: white space and Unicode 15 letters", "[tokenizer][unicode]") {
    for (uint32_t cp : {0x09u, 0x0Au, 0x20u, 0x85u, 0xA0u, 0x1680u, 0x2000u, 0x2028u, 0x3000u})
        CHECK(uc::is_whitespace(cp));
    for (uint32_t cp : {0x180Eu, 0x200Bu, 0x41u}) CHECK_FALSE(uc::is_whitespace(cp));
    CHECK(uc::is_letter(0x31350));  // CJK Extension H (Unicode 15.0)
    CHECK(uc::is_letter(0x2EBF0));  // CJK Extension I (Unicode 15.1)
    CHECK(uc::flags(0x110000) == uc::kUndefined);
    CHECK(uc::is_number(0x0661));   // Arabic-Indic digit one
}

TEST_CASE("unicode: lenient decoding follows llama.cpp", "[tokenizer][unicode]") {
    std::vector<uint32_t> cps;
    uc::decode_lenient("a\xC3\xA9\xE4\xBD\xA0\xF0\x9F\x98\x80", cps);
    CHECK(cps == std::vector<uint32_t>{'a', 0xE9, 0x4F60, 0x1F600});
    uc::decode_lenient("\x80\xC3" "a\xFF", cps);
    CHECK(cps == std::vector<uint32_t>{0xFFFD, 0xFFFD, 'a', 0xFFFD});
    uc::decode_lenient("\xC0\x80\xED\xA0\x80", cps);  // overlong and surrogate pass, as in llama.cpp
    CHECK(cps == std::vector<uint32_t>{0, 0xD800});
    uc::decode_lenient("\xF7\xBF\xBF\xBF", cps);  // above U+10FFFF
    CHECK(cps == std::vector<uint32_t>{0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD});
}

TEST_CASE("unicode: the GPT-2 byte alphabet", "[tokenizer][unicode]") {
    CHECK(uc::byte_to_codepoint(' ') == 0x120);   // Ġ
    CHECK(uc::byte_to_codepoint('\n') == 0x10A);  // Ċ
    CHECK(uc::byte_to_codepoint('A') == 'A');
    for (int b = 0; b < 256; ++b) CHECK(uc::codepoint_to_byte(uc::byte_to_codepoint(uint8_t(b))) == b);
    CHECK(uc::codepoint_to_byte(0x4F60) == -1);
}
