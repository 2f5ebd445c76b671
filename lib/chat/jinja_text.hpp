// Text helpers with Python str semantics over UTF-8: codepoint indexing, Python's
// whitespace set, case mapping, float repr and string repr.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace genie::chat::jinja::text {

/// Decodes UTF-8 into codepoints. An invalid byte b becomes 0xDC00 + b (Python's
/// "surrogateescape"), so encode(decode(s)) == s for every byte string.
std::vector<uint32_t> decode(std::string_view s);
void append(std::string& out, uint32_t cp);
std::string encode(const uint32_t* begin, const uint32_t* end);
inline std::string encode(const std::vector<uint32_t>& cps) { return encode(cps.data(), cps.data() + cps.size()); }
/// Number of codepoints (Python len()).
size_t length(std::string_view s);

/// Python str.isspace() for one codepoint.
bool is_space(uint32_t cp);
/// Python str.strip/lstrip/rstrip; `chars` null = whitespace.
std::string strip(std::string_view s, const std::string* chars, bool left, bool right);

uint32_t to_lower(uint32_t cp);
uint32_t to_upper(uint32_t cp);
bool is_cased_lower(uint32_t cp);
bool is_cased_upper(uint32_t cp);
bool is_alpha(uint32_t cp);
bool is_digit(uint32_t cp);
std::string lower(std::string_view s);
std::string upper(std::string_view s);
/// Python str.capitalize(): first character upper, the rest lower.
std::string capitalize(std::string_view s);
/// Python str.title().
std::string title(std::string_view s);
/// Python str.splitlines() (without keepends).
std::vector<std::string> splitlines(std::string_view s);

/// Python repr(float): shortest round-trip digits, "1.0", "1e+16", "inf", "nan".
std::string float_repr(double d);
/// Python repr(str): single quotes unless the text has ' and no ".
std::string string_repr(std::string_view s);

}  // namespace genie::chat::jinja::text
