#include "tokenizer/pretokenize.hpp"

#include "tokenizer/unicode.hpp"

#include <genie/error.hpp>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <optional>

namespace genie::tokenizer {

namespace uc = unicode;

namespace {

// The regexes llama.cpp replaces by hand-written scanners (unicode_regex_split_custom).
// Matching is by exact string, as there.
constexpr std::string_view kGpt2Regex =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
constexpr std::string_view kLlama3RegexOriginal =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kLlama3Regex =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kQwen2Regex =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kQwen35Regex =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| "
    "?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// Collapsed representation: the byte standing for each non-ASCII category, and the
// ASCII members of each category (from the Unicode general categories of U+0000-U+007F).
constexpr char kCollapsedOther = char(0xD0);
constexpr char kCollapsedWhitespace = 0x0B;

struct CategoryClass {
    std::string_view name;    // as written in a regex
    uint16_t bit;
    std::string_view byte;    // the collapsed byte, as a PCRE2 escape
    std::string_view ascii;   // ASCII members, as PCRE2 class items
};
constexpr CategoryClass kCategoryClasses[] = {
    {"N", uc::kNumber, "\\xD1", "\\x30-\\x39"},
    {"L", uc::kLetter, "\\xD2", "\\x41-\\x5A\\x61-\\x7A"},
    {"P", uc::kPunctuation, "\\xD3", "\\x21-\\x23\\x25-\\x2A\\x2C-\\x2F\\x3A\\x3B\\x3F\\x40\\x5B-\\x5D\\x5F\\x7B\\x7D"},
    {"M", uc::kMark, "\\xD4", ""},
    {"S", uc::kSymbol, "\\xD5", "\\x24\\x2B\\x3C-\\x3E\\x5E\\x60\\x7C\\x7E"},
    // llama.cpp collapses the letter subcategories to "any letter".
    {"Lu", uc::kLetter, "\\xD2", "\\x41-\\x5A\\x61-\\x7A"},
    {"Ll", uc::kLetter, "\\xD2", "\\x41-\\x5A\\x61-\\x7A"},
    {"Lt", uc::kLetter, "\\xD2", "\\x41-\\x5A\\x61-\\x7A"},
    {"Lm", uc::kLetter, "\\xD2", "\\x41-\\x5A\\x61-\\x7A"},
    {"Lo", uc::kLetter, "\\xD2", "\\x41-\\x5A\\x61-\\x7A"},
};

const CategoryClass* find_category(std::string_view name) {
    for (const auto& c : kCategoryClasses)
        if (c.name == name) return &c;
    return nullptr;
}

bool uses_categories(std::string_view regex) {
    for (size_t p = regex.find("\\p{"); p != std::string_view::npos; p = regex.find("\\p{", p + 1)) {
        const size_t close = regex.find('}', p + 3);
        if (close != std::string_view::npos && find_category(regex.substr(p + 3, close - p - 3))) return true;
    }
    return false;
}

// Rewrites \p{X} into a class over the collapsed alphabet. A \p{X} already inside
// brackets contributes its members; outside, it becomes its own bracket expression.
std::string collapse_regex(std::string_view regex) {
    std::string out;
    bool inside = false;
    for (size_t i = 0; i < regex.size(); ++i) {
        const char c = regex[i];
        if (c == '[' && (i == 0 || regex[i - 1] != '\\')) {
            inside = true;
            out += c;
            continue;
        }
        if (inside && c == ']' && regex[i - 1] != '\\') {
            inside = false;
            out += c;
            continue;
        }
        if (c == '\\' && i + 3 < regex.size() && regex[i + 1] == 'p' && regex[i + 2] == '{') {
            const size_t close = regex.find('}', i + 3);
            if (close != std::string_view::npos) {
                if (const CategoryClass* cat = find_category(regex.substr(i + 3, close - i - 3))) {
                    if (!inside) out += '[';
                    out += cat->byte;
                    out += cat->ascii;
                    if (!inside) out += ']';
                    i = close;
                    continue;
                }
            }
        }
        out += c;
    }
    return out;
}

}  // namespace

struct PreTokenizer::Step {
    enum class Kind { Gpt2, Llama3, Qwen2, Qwen35, Collapsed, Codepoints };
    Kind kind = Kind::Gpt2;
    pcre2_code* code = nullptr;

    Step() = default;
    Step(const Step&) = delete;
    Step& operator=(const Step&) = delete;
    ~Step() {
        if (code) pcre2_code_free(code);
    }
};

PreTokenizer::PreTokenizer(const std::vector<std::string>& regexes) {
    for (const std::string& regex : regexes) {
        auto step = std::make_unique<Step>();
        if (regex == kGpt2Regex) {
            step->kind = Step::Kind::Gpt2;
        } else if (regex == kLlama3Regex || regex == kLlama3RegexOriginal) {
            step->kind = Step::Kind::Llama3;
        } else if (regex == kQwen2Regex) {
            step->kind = Step::Kind::Qwen2;
        } else if (regex == kQwen35Regex) {
            step->kind = Step::Kind::Qwen35;
        } else {
            // std::regex's ECMAScript `$` matches only at the end of the input.
            uint32_t options = PCRE2_DOLLAR_ENDONLY;
            std::string pattern;
            if (uses_categories(regex)) {
                step->kind = Step::Kind::Collapsed;
                for (unsigned char ch : regex)
                    if (ch >= 0x80)
                        throw Error(ErrorCode::Unsupported,
                                    "pre-tokenizer regex mixes Unicode categories and non-ASCII characters: " + regex);
                pattern = collapse_regex(regex);
            } else {
                step->kind = Step::Kind::Codepoints;
                options |= PCRE2_UTF;
                pattern = regex;
            }
            int error = 0;
            PCRE2_SIZE error_offset = 0;
            step->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &error,
                                       &error_offset, nullptr);
            if (!step->code) {
                PCRE2_UCHAR message[256];
                pcre2_get_error_message(error, message, sizeof message);
                throw Error(ErrorCode::Internal, "PCRE2 rejected pre-tokenizer regex '" + regex + "' at offset " +
                                                     std::to_string(error_offset) + ": " +
                                                     reinterpret_cast<const char*>(message));
            }
            pcre2_jit_compile(step->code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter on failure
        }
        steps_.push_back(std::move(step));
    }
}

PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;
PreTokenizer::~PreTokenizer() = default;

namespace {

constexpr uint16_t kWsLetterNumber = uc::kWhitespace | uc::kLetter | uc::kNumber;

bool is_ascii_lower(uint32_t cp, char lower) {
    // Only ASCII letters lowercase to the letters of the contractions (checked against
    // the Unicode lowercase mapping), so ASCII case folding is exact here.
    return cp == uint32_t(lower) || cp == uint32_t(lower - 'a' + 'A');
}

// One fragment [begin, end) of `cpts` with llama.cpp's scanner conventions: reading
// outside the fragment gives "no code point" with no flags.
struct Scanner {
    const std::vector<uint32_t>& cpts;
    size_t begin, end;
    size_t prev_end;
    std::vector<size_t>& out;

    static constexpr uint32_t kOutOfRange = 0xFFFFFFFF;
    uint32_t cpt(size_t pos) const { return pos >= begin && pos < end ? cpts[pos] : kOutOfRange; }
    uint16_t flags(size_t pos) const { return pos >= begin && pos < end ? uc::flags(cpts[pos]) : 0; }
    size_t emit(size_t pos) {
        const size_t len = pos - prev_end;
        if (len > 0) out.push_back(len);
        prev_end = pos;
        return len;
    }
};

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
void split_gpt2(Scanner& s) {
    for (size_t pos = s.begin; pos < s.end;) {
        const uint32_t c = s.cpt(pos);
        const uint16_t f = s.flags(pos);
        if (c == '\'' && pos + 1 < s.end) {
            const uint32_t n1 = s.cpt(pos + 1);
            if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') {
                pos += s.emit(pos + 2);
                continue;
            }
            if (pos + 2 < s.end) {
                const uint32_t n2 = s.cpt(pos + 2);
                if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) {
                    pos += s.emit(pos + 3);
                    continue;
                }
            }
        }
        uint16_t f2 = c == ' ' ? s.flags(pos + 1) : f;
        if (f2 & uc::kLetter) {
            pos += c == ' ';
            while (f2 & uc::kLetter) f2 = s.flags(++pos);
            s.emit(pos);
            continue;
        }
        if (f2 & uc::kNumber) {
            pos += c == ' ';
            while (f2 & uc::kNumber) f2 = s.flags(++pos);
            s.emit(pos);
            continue;
        }
        if (!(f2 & kWsLetterNumber) && f2) {
            pos += c == ' ';
            while (!(f2 & kWsLetterNumber) && f2) f2 = s.flags(++pos);
            s.emit(pos);
            continue;
        }
        size_t spaces = 0;
        while (s.flags(pos + spaces) & uc::kWhitespace) ++spaces;
        if (spaces > 1 && s.cpt(pos + spaces) != Scanner::kOutOfRange) {  // \s+(?!\S)
            pos += spaces - 1;
            s.emit(pos);
            continue;
        }
        if (spaces > 0) {  // \s+
            pos += spaces;
            s.emit(pos);
            continue;
        }
        s.emit(++pos);  // no match: the code point stands alone
    }
}

// Llama 3 / Qwen2 / Qwen3.5 family:
// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}| ?[^\s\p{L}\p{N}]+[\r\n]*|
// \s*[\r\n]+|\s+(?!\S)|\s+   (Qwen3.5: letters runs also take \p{M})
void split_llama3_family(Scanner& s, size_t max_digits, bool marks_are_letters) {
    const uint16_t word_bits = marks_are_letters ? uint16_t(uc::kLetter | uc::kMark) : uint16_t(uc::kLetter);
    const uint16_t not_punct_bits = kWsLetterNumber | (marks_are_letters ? uc::kMark : 0);
    for (size_t pos = s.begin; pos < s.end;) {
        const uint32_t c = s.cpt(pos);
        const uint16_t f = s.flags(pos);
        if (c == '\'' && pos + 1 < s.end) {
            const uint32_t n1 = s.cpt(pos + 1);
            if (is_ascii_lower(n1, 's') || is_ascii_lower(n1, 't') || is_ascii_lower(n1, 'm') ||
                is_ascii_lower(n1, 'd')) {
                pos += s.emit(pos + 2);
                continue;
            }
            if (pos + 2 < s.end) {
                const uint32_t n2 = s.cpt(pos + 2);
                if ((is_ascii_lower(n1, 'r') && is_ascii_lower(n2, 'e')) ||
                    (is_ascii_lower(n1, 'v') && is_ascii_lower(n2, 'e')) ||
                    (is_ascii_lower(n1, 'l') && is_ascii_lower(n2, 'l'))) {
                    pos += s.emit(pos + 3);
                    continue;
                }
            }
        }
        if (!(c == '\r' || c == '\n' || (f & uc::kNumber))) {
            if ((f & word_bits) || (s.flags(pos + 1) & word_bits)) {
                ++pos;
                while (s.flags(pos) & word_bits) ++pos;
                s.emit(pos);
                continue;
            }
        }
        if (f & uc::kNumber) {
            size_t run_start = pos;
            while (s.flags(pos) & uc::kNumber) {
                if (++pos - run_start >= max_digits) {
                    s.emit(pos);
                    run_start = pos;
                }
            }
            s.emit(pos);
            continue;
        }
        uint16_t f2 = c == ' ' ? s.flags(pos + 1) : f;
        if (!(f2 & not_punct_bits) && f) {
            pos += c == ' ';
            while (!(f2 & not_punct_bits) && f2) f2 = s.flags(++pos);
            uint32_t c2 = s.cpt(pos);
            while (c2 == '\r' || c2 == '\n') c2 = s.cpt(++pos);
            s.emit(pos);
            continue;
        }
        size_t spaces = 0;
        size_t last_newline_end = 0;
        while (s.flags(pos + spaces) & uc::kWhitespace) {
            const uint32_t c2 = s.cpt(pos + spaces);
            if (c2 == '\r' || c2 == '\n') last_newline_end = pos + spaces + 1;
            ++spaces;
        }
        if (last_newline_end > 0) {  // \s*[\r\n]+
            pos = last_newline_end;
            s.emit(pos);
            continue;
        }
        if (spaces > 1 && s.cpt(pos + spaces) != Scanner::kOutOfRange) {  // \s+(?!\S)
            pos += spaces - 1;
            s.emit(pos);
            continue;
        }
        if (spaces > 0) {  // \s+
            pos += spaces;
            s.emit(pos);
            continue;
        }
        s.emit(++pos);
    }
}

// Runs a PCRE2 regex over each fragment like std::regex_iterator: matches and the gaps
// between them become pieces. `subject` has one unit per code point (collapsed) or is
// UTF-8 with `unit_of_cp` giving each code point's byte offset (and one past the end).
void split_regex(pcre2_code* code, std::string_view subject, const std::vector<size_t>* unit_of_cp,
                 const std::vector<uint32_t>* cp_of_unit, const std::vector<size_t>& offsets,
                 std::vector<size_t>& out) {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(code, nullptr);
    if (!md) throw Error(ErrorCode::OutOfMemory, "pre-tokenizer: cannot allocate PCRE2 match data");
    struct Free {
        pcre2_match_data* md;
        ~Free() { pcre2_match_data_free(md); }
    } free_md{md};

    auto to_unit = [&](size_t cp) { return unit_of_cp ? (*unit_of_cp)[cp] : cp; };
    auto to_cp = [&](size_t unit) { return cp_of_unit ? size_t((*cp_of_unit)[unit]) : unit; };

    size_t frag_cp = 0;
    for (size_t len : offsets) {
        const size_t unit_begin = to_unit(frag_cp);
        const size_t unit_end = to_unit(frag_cp + len);
        const auto* base = reinterpret_cast<PCRE2_SPTR>(subject.data() + unit_begin);
        const size_t n = unit_end - unit_begin;
        size_t start = 0;     // search position (units, relative)
        size_t prev_end = 0;  // end of the last piece (units, relative)
        auto push = [&](size_t from, size_t to) {
            const size_t cps = to_cp(unit_begin + to) - to_cp(unit_begin + from);
            if (cps > 0) out.push_back(cps);
        };
        uint32_t match_options = PCRE2_NO_UTF_CHECK;
        while (start <= n) {
            int rc = pcre2_match(code, base, n, start, match_options, md, nullptr);
            if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
                rc = pcre2_match(code, base, n, start, match_options | PCRE2_NO_JIT, md, nullptr);
            if (rc == PCRE2_ERROR_NOMATCH && (match_options & PCRE2_NOTEMPTY_ATSTART)) {
                // an empty match was found here before: move on by one character
                match_options = PCRE2_NO_UTF_CHECK;
                ++start;
                if (cp_of_unit)
                    while (start < n && (base[start] & 0xC0) == 0x80) ++start;
                continue;
            }
            if (rc < 0) {
                if (rc == PCRE2_ERROR_NOMATCH) break;
                throw Error(ErrorCode::Internal, "pre-tokenizer: PCRE2 match failed with code " + std::to_string(rc));
            }
            const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
            const size_t ms = ov[0], me = ov[1];
            if (ms > prev_end) push(prev_end, ms);
            push(ms, me);
            prev_end = me;
            if (me == ms) {
                match_options = PCRE2_NO_UTF_CHECK | PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED;
            } else {
                match_options = PCRE2_NO_UTF_CHECK;
            }
            start = me;
        }
        if (prev_end < n) push(prev_end, n);
        frag_cp += len;
    }
}

}  // namespace

void PreTokenizer::split(const std::vector<uint32_t>& cpts, std::vector<size_t>& word_lengths) const {
    word_lengths.clear();
    if (cpts.empty()) return;
    std::vector<size_t> offsets{cpts.size()};
    std::vector<size_t> next;

    std::optional<std::string> collapsed;
    std::optional<std::string> utf8;
    std::vector<size_t> unit_of_cp;
    std::vector<uint32_t> cp_of_unit;

    for (const auto& step : steps_) {
        next.clear();
        next.reserve(offsets.size() * 2);
        switch (step->kind) {
            case Step::Kind::Gpt2:
            case Step::Kind::Llama3:
            case Step::Kind::Qwen2:
            case Step::Kind::Qwen35: {
                size_t begin = 0;
                for (size_t len : offsets) {
                    Scanner s{cpts, begin, begin + len, begin, next};
                    if (step->kind == Step::Kind::Gpt2) split_gpt2(s);
                    else if (step->kind == Step::Kind::Llama3) split_llama3_family(s, 3, false);
                    else if (step->kind == Step::Kind::Qwen2) split_llama3_family(s, 1, false);
                    else split_llama3_family(s, 1, true);
                    begin += len;
                }
                break;
            }
            case Step::Kind::Collapsed: {
                if (!collapsed) {
                    collapsed.emplace(cpts.size(), '\0');
                    for (size_t i = 0; i < cpts.size(); ++i) {
                        const uint32_t cp = cpts[i];
                        char ch;
                        if (cp < 0x80) {
                            ch = char(cp);
                        } else {
                            const uint16_t f = uc::flags(cp);
                            if (f & uc::kWhitespace) ch = kCollapsedWhitespace;
                            else if (f & uc::kNumber) ch = char(0xD1);
                            else if (f & uc::kLetter) ch = char(0xD2);
                            else if (f & uc::kPunctuation) ch = char(0xD3);
                            else if (f & uc::kMark) ch = char(0xD4);
                            else if (f & uc::kSymbol) ch = char(0xD5);
                            else ch = kCollapsedOther;
                        }
                        (*collapsed)[i] = ch;
                    }
                }
                split_regex(step->code, *collapsed, nullptr, nullptr, offsets, next);
                break;
            }
            case Step::Kind::Codepoints: {
                if (!utf8) {
                    utf8.emplace();
                    utf8->reserve(cpts.size() * 2);
                    unit_of_cp.resize(cpts.size() + 1);
                    for (size_t i = 0; i < cpts.size(); ++i) {
                        unit_of_cp[i] = utf8->size();
                        uint32_t cp = cpts[i];
                        if (cp >= 0xD800 && cp <= 0xDFFF) cp = uc::kReplacement;  // keep PCRE2's UTF valid
                        if (cp > 0x7F && uc::is_whitespace(cp)) cp = 0x0B;     // so that \s sees it
                        uc::append_utf8(*utf8, cp);
                    }
                    unit_of_cp[cpts.size()] = utf8->size();
                    cp_of_unit.assign(utf8->size() + 1, 0);
                    for (size_t i = 0; i <= cpts.size(); ++i) cp_of_unit[unit_of_cp[i]] = uint32_t(i);
                }
                split_regex(step->code, *utf8, &unit_of_cp, &cp_of_unit, offsets, next);
                break;
            }
        }
        offsets.swap(next);
    }
    word_lengths = std::move(offsets);
}

}  // namespace genie::tokenizer
