#include "chat/jinja_text.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace genie::chat::jinja::text {

std::vector<uint32_t> decode(std::string_view s) {
    std::vector<uint32_t> out;
    out.reserve(s.size());
    size_t i = 0;
    while (i < s.size()) {
        const auto b0 = static_cast<uint8_t>(s[i]);
        size_t len = 0;
        uint32_t cp = 0;
        if (b0 < 0x80) { out.push_back(b0); ++i; continue; }
        if (b0 >= 0xC2 && b0 <= 0xDF) { len = 2; cp = b0 & 0x1F; }
        else if (b0 >= 0xE0 && b0 <= 0xEF) { len = 3; cp = b0 & 0x0F; }
        else if (b0 >= 0xF0 && b0 <= 0xF4) { len = 4; cp = b0 & 0x07; }
        bool ok = len != 0 && i + len <= s.size();
        for (size_t k = 1; ok && k < len; ++k) {
            const auto b = static_cast<uint8_t>(s[i + k]);
            if ((b & 0xC0) != 0x80) ok = false;
            else cp = (cp << 6) | (b & 0x3F);
        }
        // reject overlongs, surrogates and values past U+10FFFF
        if (ok && ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
                   (cp >= 0xD800 && cp <= 0xDFFF)))
            ok = false;
        if (!ok) { out.push_back(0xDC00 + b0); ++i; continue; }
        out.push_back(cp);
        i += len;
    }
    return out;
}

void append(std::string& out, uint32_t cp) {
    if (cp >= 0xDC80 && cp <= 0xDCFF) { out += static_cast<char>(cp - 0xDC00); return; }  // escaped byte
    if (cp < 0x80) out += static_cast<char>(cp);
    else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

std::string encode(const uint32_t* begin, const uint32_t* end) {
    std::string out;
    out.reserve(static_cast<size_t>(end - begin));
    for (const uint32_t* p = begin; p != end; ++p) append(out, *p);
    return out;
}

size_t length(std::string_view s) {
    bool ascii = true;
    for (char c : s)
        if (static_cast<uint8_t>(c) >= 0x80) { ascii = false; break; }
    return ascii ? s.size() : decode(s).size();
}

bool is_space(uint32_t cp) {
    if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F)) return true;
    if (cp < 0x85) return false;
    return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
           cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

std::string strip(std::string_view s, const std::string* chars, bool left, bool right) {
    const std::vector<uint32_t> cps = decode(s);
    std::vector<uint32_t> set;
    if (chars) set = decode(*chars);
    auto strippable = [&](uint32_t cp) {
        if (!chars) return is_space(cp);
        for (uint32_t c : set)
            if (c == cp) return true;
        return false;
    };
    size_t b = 0, e = cps.size();
    if (left)
        while (b < e && strippable(cps[b])) ++b;
    if (right)
        while (e > b && strippable(cps[e - 1])) --e;
    return encode(cps.data() + b, cps.data() + e);
}

// Case mapping covers ASCII, Latin-1, Latin Extended-A pairs, Greek and Cyrillic: the
// scripts chat templates meet in practice (documented in docs/chat.md).
uint32_t to_lower(uint32_t cp) {
    if (cp >= 'A' && cp <= 'Z') return cp + 32;
    if (cp < 0xC0) return cp;
    if (cp <= 0xDE && cp != 0xD7) return cp + 32;
    if (cp == 0x178) return 0xFF;
    if (cp >= 0x100 && cp <= 0x17F && cp != 0x130 && cp != 0x131 && cp != 0x138 && cp != 0x149 && cp != 0x17F) {
        const bool odd_upper = (cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E);
        if (odd_upper) return (cp % 2 == 1) ? cp + 1 : cp;
        return (cp % 2 == 0) ? cp + 1 : cp;
    }
    if (cp >= 0x391 && cp <= 0x3AB && cp != 0x3A2) return cp + 32;
    if (cp >= 0x410 && cp <= 0x42F) return cp + 32;
    if (cp >= 0x400 && cp <= 0x40F) return cp + 80;
    return cp;
}

uint32_t to_upper(uint32_t cp) {
    if (cp >= 'a' && cp <= 'z') return cp - 32;
    if (cp < 0xB5) return cp;
    if (cp == 0xB5) return 0x39C;
    if (cp >= 0xE0 && cp <= 0xFE && cp != 0xF7) return cp - 32;
    if (cp == 0xFF) return 0x178;
    if (cp >= 0x100 && cp <= 0x17F && cp != 0x130 && cp != 0x131 && cp != 0x138 && cp != 0x149 && cp != 0x17F) {
        const bool odd_upper = (cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E);
        if (odd_upper) return (cp % 2 == 0) ? cp - 1 : cp;
        return (cp % 2 == 1) ? cp - 1 : cp;
    }
    if (cp >= 0x3B1 && cp <= 0x3CB && cp != 0x3C2) return cp - 32;
    if (cp == 0x3C2) return 0x3A3;
    if (cp >= 0x430 && cp <= 0x44F) return cp - 32;
    if (cp >= 0x450 && cp <= 0x45F) return cp - 80;
    return cp;
}

bool is_cased_lower(uint32_t cp) { return to_upper(cp) != cp || cp == 0xDF; }
bool is_cased_upper(uint32_t cp) { return to_lower(cp) != cp; }
bool is_alpha(uint32_t cp) {
    return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || is_cased_lower(cp) || is_cased_upper(cp) ||
           (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3040 && cp <= 0x30FF) || (cp >= 0xAC00 && cp <= 0xD7A3);
}
bool is_digit(uint32_t cp) { return cp >= '0' && cp <= '9'; }

std::string lower(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (uint32_t cp : decode(s)) append(out, to_lower(cp));
    return out;
}

std::string upper(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (uint32_t cp : decode(s)) {
        if (cp == 0xDF) { out += "SS"; continue; }
        append(out, to_upper(cp));
    }
    return out;
}

std::string capitalize(std::string_view s) {
    std::string out;
    bool first = true;
    for (uint32_t cp : decode(s)) {
        append(out, first ? to_upper(cp) : to_lower(cp));
        first = false;
    }
    return out;
}

std::string title(std::string_view s) {
    std::string out;
    bool previous_cased = false;
    for (uint32_t cp : decode(s)) {
        const bool cased = is_cased_lower(cp) || is_cased_upper(cp);
        append(out, cased ? (previous_cased ? to_lower(cp) : to_upper(cp)) : cp);
        previous_cased = cased;
    }
    return out;
}

std::vector<std::string> splitlines(std::string_view s) {
    std::vector<std::string> lines;
    const std::vector<uint32_t> cps = decode(s);
    size_t start = 0;
    for (size_t i = 0; i < cps.size(); ++i) {
        const uint32_t c = cps[i];
        const bool boundary = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || (c >= 0x1C && c <= 0x1E) ||
                              c == 0x85 || c == 0x2028 || c == 0x2029;
        if (!boundary) continue;
        lines.push_back(encode(cps.data() + start, cps.data() + i));
        if (c == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ++i;
        start = i + 1;
    }
    if (start < cps.size()) lines.push_back(encode(cps.data() + start, cps.data() + cps.size()));
    return lines;
}

std::string float_repr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
    // Shortest round-trip digits in scientific form, then laid out the way Python does:
    // positional for 1e-4 <= |d| < 1e16, scientific otherwise.
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string sci(buf, r.ptr);
    std::string sign;
    if (sci[0] == '-') { sign = "-"; sci.erase(0, 1); }
    const size_t e_pos = sci.find('e');
    std::string mantissa = sci.substr(0, e_pos);
    const int exponent = std::atoi(sci.c_str() + e_pos + 1);
    std::string digits;
    for (char c : mantissa)
        if (c != '.') digits += c;
    if (exponent >= -4 && exponent < 16) {
        std::string out;
        if (exponent < 0) {
            out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
        } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
            out = digits + std::string(static_cast<size_t>(exponent) + 1 - digits.size(), '0') + ".0";
        } else {
            out = digits.substr(0, static_cast<size_t>(exponent) + 1) + "." + digits.substr(static_cast<size_t>(exponent) + 1);
        }
        return sign + out;
    }
    std::string out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp_buf[16];
    std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return sign + out + exp_buf;
}

namespace {
bool printable(uint32_t cp) {
    if (cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD) return false;
    if (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F) ||
        (cp >= 0x205F && cp <= 0x206F) || cp == 0x3000 || cp == 0xFEFF)
        return false;
    if ((cp >= 0xD800 && cp <= 0xDFFF) || (cp >= 0xE000 && cp <= 0xF8FF) || cp > 0x10FFFF) return false;
    return true;
}
}  // namespace

std::string string_repr(std::string_view s) {
    const bool has_single = s.find('\'') != std::string_view::npos;
    const bool has_double = s.find('"') != std::string_view::npos;
    const char quote = (has_single && !has_double) ? '"' : '\'';
    std::string out(1, quote);
    for (uint32_t cp : decode(s)) {
        if (cp == static_cast<uint32_t>(quote) || cp == '\\') { out += '\\'; out += static_cast<char>(cp); }
        else if (cp == '\n') out += "\\n";
        else if (cp == '\r') out += "\\r";
        else if (cp == '\t') out += "\\t";
        else if (printable(cp)) append(out, cp);
        else {
            char buf[16];
            if (cp < 0x100) std::snprintf(buf, sizeof buf, "\\x%02x", cp);
            else if (cp < 0x10000) std::snprintf(buf, sizeof buf, "\\u%04x", cp);
            else std::snprintf(buf, sizeof buf, "\\U%08x", cp);
            out += buf;
        }
    }
    out += quote;
    return out;
}

}  // namespace genie::chat::jinja::text
