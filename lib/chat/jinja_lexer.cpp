// The lexer follows jinja2's rules (lexer.py) for the options HF uses:
// - the text before `{%-`, `{{-`, `{#-` loses its trailing whitespace (newlines included);
// - `-%}`, `-}}`, `-#}` swallow the whitespace after the tag;
// - trim_blocks: `%}` and `#}` swallow one newline right after them (`+%}` keeps it);
// - lstrip_blocks: spaces and tabs between the start of a line and `{%` / `{#` are dropped
//   (`{%+` keeps them); "start of a line" includes the start of the template and the point
//   right after a tag whose end swallowed a newline;
// - tag ends are recognised only while ( [ { are balanced.
#include "chat/jinja_lexer.hpp"

#include "chat/jinja_text.hpp"
#include "chat/jinja_value.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>

namespace genie::chat::jinja {

namespace {

bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

// Python str.rstrip() (Unicode whitespace).
std::string rstrip_whitespace(std::string_view s) { return text::strip(s, nullptr, false, true); }

// True when `s` is non-empty and all Python whitespace.
bool all_whitespace(std::string_view s) {
    if (s.empty()) return false;
    for (uint32_t cp : text::decode(s))
        if (!text::is_space(cp)) return false;
    return true;
}

class Lexer {
public:
    explicit Lexer(std::string_view source) {
        // Newlines normalised to \n, one trailing newline dropped (keep_trailing_newline=False).
        src_.reserve(source.size());
        for (size_t i = 0; i < source.size(); ++i) {
            if (source[i] == '\r') {
                src_ += '\n';
                if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
            } else {
                src_ += source[i];
            }
        }
        if (!src_.empty() && src_.back() == '\n') src_.pop_back();
        line_starts_.push_back(0);
        for (size_t i = 0; i < src_.size(); ++i)
            if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }

    std::vector<Token> run() {
        while (pos_ < src_.size()) {
            const size_t start = find_tag_start(pos_);
            if (start == std::string::npos) {
                emit_data(pos_, src_.substr(pos_));
                break;
            }
            const char kind = src_[start + 1];
            size_t after = start + 2;
            char sign = 0;
            if (after < src_.size() && (src_[after] == '-' || src_[after] == '+')) sign = src_[after++];
            std::string text = src_.substr(pos_, start - pos_);
            apply_left_strip(text, sign, kind != '{');
            emit_data(pos_, std::move(text));

            if (kind == '#') {
                lex_comment(start, after);
            } else if (kind == '%' && try_raw(start, after)) {
                // handled
            } else {
                lex_tag(start, after, kind == '%');
            }
        }
        Token end;
        end.type = TokenType::End;
        position(src_.size(), end);
        tokens_.push_back(std::move(end));
        return std::move(tokens_);
    }

private:
    std::string src_;
    size_t pos_ = 0;
    bool line_starting_ = true;
    std::vector<size_t> line_starts_;
    std::vector<Token> tokens_;

    void position(size_t offset, Token& t) const {
        const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
        const size_t line = static_cast<size_t>(it - line_starts_.begin());
        t.line = static_cast<int>(line);
        t.column = static_cast<int>(offset - line_starts_[line - 1] + 1);
    }

    [[noreturn]] void error(size_t offset, const std::string& message) const {
        Token t;
        position(offset, t);
        TemplateError e;
        e.code = ErrorCode::Format;
        e.message = message;
        e.line = t.line;
        e.column = t.column;
        throw e;
    }

    size_t find_tag_start(size_t from) const {
        size_t i = from;
        while (true) {
            i = src_.find('{', i);
            if (i == std::string::npos || i + 1 >= src_.size()) return std::string::npos;
            const char c = src_[i + 1];
            if (c == '{' || c == '%' || c == '#') return i;
            ++i;
        }
    }

    void apply_left_strip(std::string& text, char sign, bool is_block_or_comment) const {
        if (sign == '-') {
            text = rstrip_whitespace(text);
        } else if (sign != '+' && is_block_or_comment) {
            const size_t newline = text.rfind('\n');
            const size_t l_pos = newline == std::string::npos ? 0 : newline + 1;
            if ((l_pos > 0 || line_starting_) && all_whitespace(std::string_view(text).substr(l_pos)))
                text.resize(l_pos);
        }
    }

    void emit_data(size_t offset, std::string text) {
        if (text.empty()) return;
        Token t;
        t.type = TokenType::Data;
        t.value = std::move(text);
        position(offset, t);
        tokens_.push_back(std::move(t));
    }

    // After a tag's end marker at `end` (one past it): -, + or trim_blocks handling.
    void finish_tag(size_t end, char end_sign, bool trim_newline) {
        size_t p = end;
        if (end_sign == '-') {
            while (p < src_.size()) {
                // Python \s: ASCII whitespace plus Unicode spaces
                if (is_ascii_space(src_[p]) || (src_[p] >= '\x1c' && src_[p] <= '\x1f')) { ++p; continue; }
                if (static_cast<uint8_t>(src_[p]) >= 0x80) {
                    size_t len = 1;
                    while (p + len < src_.size() && len < 4 && (static_cast<uint8_t>(src_[p + len]) & 0xC0) == 0x80) ++len;
                    const auto cps = text::decode(std::string_view(src_).substr(p, len));
                    if (cps.size() == 1 && text::is_space(cps[0])) { p += len; continue; }
                }
                break;
            }
        } else if (end_sign != '+' && trim_newline && p < src_.size() && src_[p] == '\n') {
            ++p;
        }
        line_starting_ = p > 0 && src_[p - 1] == '\n';
        pos_ = p;
    }

    void lex_comment(size_t start, size_t after) {
        const size_t close = src_.find("#}", after);
        if (close == std::string::npos) error(start, "missing end of comment tag '#}'");
        char end_sign = 0;
        if (close > after && (src_[close - 1] == '-' || src_[close - 1] == '+')) end_sign = src_[close - 1];
        finish_tag(close + 2, end_sign, true);
    }

    // {% raw %} ... {% endraw %}: the text between is data, unparsed.
    bool try_raw(size_t start, size_t after) {
        size_t p = after;
        while (p < src_.size() && is_ascii_space(src_[p])) ++p;
        if (src_.compare(p, 3, "raw") != 0 || (p + 3 < src_.size() && is_name_char(src_[p + 3]))) return false;
        p += 3;
        while (p < src_.size() && is_ascii_space(src_[p])) ++p;
        size_t content;
        if (src_.compare(p, 3, "-%}") == 0) {
            content = p + 3;
            while (content < src_.size() && is_ascii_space(src_[content])) ++content;
        } else if (src_.compare(p, 2, "%}") == 0) {
            content = p + 2;
        } else {
            return false;
        }
        line_starting_ = content > 0 && src_[content - 1] == '\n';
        // find {%(-|+)? \s* endraw \s* (+%}|-%}|%})
        size_t search = content;
        while (true) {
            const size_t open = src_.find("{%", search);
            if (open == std::string::npos) error(start, "missing end of raw directive ('{% endraw %}')");
            size_t q = open + 2;
            char sign = 0;
            if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) sign = src_[q++];
            while (q < src_.size() && is_ascii_space(src_[q])) ++q;
            if (src_.compare(q, 6, "endraw") != 0) { search = open + 2; continue; }
            q += 6;
            while (q < src_.size() && is_ascii_space(src_[q])) ++q;
            char end_sign = 0;
            if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) end_sign = src_[q++];
            if (src_.compare(q, 2, "%}") != 0) { search = open + 2; continue; }
            std::string text = src_.substr(content, open - content);
            apply_left_strip(text, sign, true);
            emit_data(content, std::move(text));
            finish_tag(q + 2, end_sign, true);
            return true;
        }
    }

    void lex_tag(size_t start, size_t after, bool is_block) {
        Token begin;
        begin.type = is_block ? TokenType::BlockBegin : TokenType::VariableBegin;
        begin.value = is_block ? "{%" : "{{";
        position(start, begin);
        tokens_.push_back(std::move(begin));
        std::vector<char> balance;
        size_t p = after;
        const char close = is_block ? '%' : '}';
        while (true) {
            if (p >= src_.size())
                error(start, std::string("unterminated '") + (is_block ? "{%" : "{{") + "' tag: expected '" +
                                 (is_block ? "%}" : "}}") + "' before the end of the template");
            if (balance.empty()) {
                char end_sign = 0;
                size_t q = p;
                if (src_[q] == '-' || (is_block && src_[q] == '+')) { end_sign = src_[q]; ++q; }
                if (q + 1 < src_.size() && src_[q] == close && src_[q + 1] == '}') {
                    Token end;
                    end.type = is_block ? TokenType::BlockEnd : TokenType::VariableEnd;
                    position(p, end);
                    tokens_.push_back(std::move(end));
                    finish_tag(q + 2, end_sign, is_block);
                    return;
                }
            }
            const char c = src_[p];
            if (is_ascii_space(c)) { ++p; continue; }
            Token t;
            position(p, t);
            if (is_digit(c)) {
                p = lex_number(p, t);
            } else if (is_name_start(c)) {
                const size_t b = p;
                while (p < src_.size() && is_name_char(src_[p])) ++p;
                t.type = TokenType::Name;
                t.value = src_.substr(b, p - b);
            } else if (c == '\'' || c == '"') {
                p = lex_string(p, t);
            } else {
                static const char* const two[] = {"//", "**", "==", "!=", ">=", "<="};
                t.type = TokenType::Operator;
                for (const char* op : two)
                    if (src_.compare(p, 2, op) == 0) { t.value = op; break; }
                if (t.value.empty()) {
                    if (std::string_view("+-/*%~[](){}><=.:|,;").find(c) == std::string_view::npos)
                        error(p, "unexpected character " + text::string_repr(std::string_view(src_).substr(p, 1)) + " in tag");
                    t.value = std::string(1, c);
                }
                p += t.value.size();
                if (c == '(' || c == '[' || c == '{') {
                    balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
                } else if (c == ')' || c == ']' || c == '}') {
                    if (balance.empty()) error(p - 1, std::string("unexpected '") + c + "'");
                    if (balance.back() != c)
                        error(p - 1, std::string("unexpected '") + c + "', expected '" + balance.back() + "'");
                    balance.pop_back();
                }
            }
            tokens_.push_back(std::move(t));
        }
    }

    // Digits with optional '_' separators: (\d+_)*\d+
    size_t digits(size_t p) const {
        if (p >= src_.size() || !is_digit(src_[p])) return std::string::npos;
        while (p < src_.size()) {
            if (is_digit(src_[p])) ++p;
            else if (src_[p] == '_' && p + 1 < src_.size() && is_digit(src_[p + 1])) ++p;
            else break;
        }
        return p;
    }

    size_t lex_number(size_t p, Token& t) {
        const size_t b = p;
        auto strip_underscores = [](std::string s) {
            s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
            return s;
        };
        // float: digits ( (.digits)? e[+-]?digits | .digits ), not right after a '.'
        if (!(b > 0 && src_[b - 1] == '.')) {
            size_t q = digits(p);
            size_t frac = std::string::npos;
            if (q < src_.size() && src_[q] == '.') frac = digits(q + 1);
            size_t mant_end = frac != std::string::npos ? frac : q;
            size_t exp_end = std::string::npos;
            if (mant_end < src_.size() && (src_[mant_end] == 'e' || src_[mant_end] == 'E')) {
                size_t e = mant_end + 1;
                if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
                exp_end = digits(e);
            }
            const size_t end = exp_end != std::string::npos ? exp_end : frac;
            if (end != std::string::npos) {
                t.type = TokenType::Float;
                t.number = std::strtod(strip_underscores(src_.substr(b, end - b)).c_str(), nullptr);
                return end;
            }
        }
        t.type = TokenType::Integer;
        int base = 10;
        size_t q = p;
        if (src_[p] == '0' && p + 1 < src_.size()) {
            const char x = static_cast<char>(src_[p + 1] | 0x20);
            if (x == 'x') base = 16;
            else if (x == 'o') base = 8;
            else if (x == 'b') base = 2;
        }
        std::string body;
        if (base != 10) {
            q = p + 2;
            auto valid = [&](char ch) {
                if (base == 16) return std::isxdigit(static_cast<unsigned char>(ch)) != 0;
                if (base == 8) return ch >= '0' && ch <= '7';
                return ch == '0' || ch == '1';
            };
            while (q < src_.size() && (valid(src_[q]) || (src_[q] == '_' && q + 1 < src_.size() && valid(src_[q + 1])))) {
                if (src_[q] != '_') body += src_[q];
                ++q;
            }
            if (body.empty()) { base = 10; q = p; }
        }
        if (base == 10) {
            q = digits(p);
            body = strip_underscores(src_.substr(p, q - p));
        }
        errno = 0;
        char* endp = nullptr;
        const unsigned long long v = std::strtoull(body.c_str(), &endp, base);
        if (errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX))
            error(b, "integer literal is too large (libgenie supports 64-bit integers)");
        t.integer = static_cast<int64_t>(v);
        return q;
    }

    static int hex_value(char c) {
        if (c >= '0' && c <= '9') return c - '0';
        c = static_cast<char>(c | 0x20);
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
    }

    // A quoted literal, decoded like Python's "unicode-escape" (what jinja2 does).
    size_t lex_string(size_t p, Token& t) {
        const char quote = src_[p];
        const size_t b = p;
        ++p;
        std::string out;
        while (true) {
            if (p >= src_.size()) error(b, "unterminated string literal");
            const char c = src_[p];
            if (c == quote) { ++p; break; }
            if (c != '\\') { out += c; ++p; continue; }
            if (p + 1 >= src_.size()) error(b, "unterminated string literal");
            const char e = src_[p + 1];
            p += 2;
            switch (e) {
                case '\n': break;
                case '\\': out += '\\'; break;
                case '\'': out += '\''; break;
                case '"': out += '"'; break;
                case 'a': out += '\a'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'v': out += '\v'; break;
                case 'x':
                case 'u':
                case 'U': {
                    const int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
                    uint32_t cp = 0;
                    for (int k = 0; k < n; ++k) {
                        const int h = p < src_.size() ? hex_value(src_[p]) : -1;
                        if (h < 0) error(p, std::string("truncated \\") + e + " escape in string literal");
                        cp = cp * 16 + static_cast<uint32_t>(h);
                        ++p;
                    }
                    if (cp > 0x10FFFF) error(p, "illegal Unicode character in string literal");
                    text::append(out, cp);
                    break;
                }
                default:
                    if (e >= '0' && e <= '7') {
                        uint32_t cp = static_cast<uint32_t>(e - '0');
                        for (int k = 0; k < 2 && p < src_.size() && src_[p] >= '0' && src_[p] <= '7'; ++k, ++p)
                            cp = cp * 8 + static_cast<uint32_t>(src_[p] - '0');
                        text::append(out, cp);
                    } else {
                        out += '\\';
                        out += e;
                    }
            }
        }
        t.type = TokenType::String;
        t.value = std::move(out);
        return p;
    }
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(source).run(); }

}  // namespace genie::chat::jinja
