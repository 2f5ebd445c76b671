// genie-server: request-head check (see http_head.hpp).
#include "http_head.hpp"

#include <algorithm>
#include <cctype>

namespace genie::server {
namespace {

bool is_tchar(unsigned char c) {
    // RFC 9110 token characters.
    if (std::isalnum(c)) return true;
    switch (c) {
        case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+':
        case '-': case '.': case '^': case '_': case '`': case '|': case '~':
            return true;
        default:
            return false;
    }
}

bool is_token(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return is_tchar(static_cast<unsigned char>(c)); });
}

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
}

std::string_view trim_ows(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

/// True when the comma-separated list `value` has the token `want` (case-insensitive).
bool has_token(std::string_view value, std::string_view want) {
    while (!value.empty()) {
        const size_t comma = value.find(',');
        if (iequals(trim_ows(value.substr(0, comma)), want)) return true;
        if (comma == std::string_view::npos) break;
        value.remove_prefix(comma + 1);
    }
    return false;
}

HeadCheck invalid(int status, std::string message) {
    HeadCheck r;
    r.state = HeadCheck::State::Invalid;
    r.status = status;
    r.message = std::move(message);
    return r;
}

/// The request line "METHOD SP TARGET SP HTTP/1.x"; sets r.http11 or returns an error.
bool check_request_line(std::string_view line, HeadCheck& r) {
    const size_t sp1 = line.find(' ');
    const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
        r = invalid(400, "malformed request line");
        return false;
    }
    const std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1),
                           version = line.substr(sp2 + 1);
    if (!is_token(method) || target.empty()) {
        r = invalid(400, "malformed request line");
        return false;
    }
    for (unsigned char c : target)
        if (c <= 0x20 || c == 0x7f) {
            r = invalid(400, "the request target contains a control character");
            return false;
        }
    if (version == "HTTP/1.1") {
        r.http11 = true;
    } else if (version == "HTTP/1.0") {
        r.http11 = false;
    } else if (version.size() == 8 && version.substr(0, 5) == "HTTP/" && std::isdigit(static_cast<unsigned char>(version[5])) &&
               version[6] == '.' && std::isdigit(static_cast<unsigned char>(version[7]))) {
        r = invalid(505, "HTTP version not supported: " + std::string(version));
        return false;
    } else {
        r = invalid(400, "malformed request line");
        return false;
    }
    return true;
}

}  // namespace

HeadCheck check_request_head(std::string_view bytes, const HeadLimits& limits) {
    HeadCheck r;
    bool seen_length = false, seen_encoding = false, connection_keep_alive = false, connection_close = false;
    size_t pos = 0, fields = 0;
    for (size_t line_no = 0;; ++line_no) {
        const size_t nl = bytes.find('\n', pos);
        if (nl == std::string_view::npos) {
            // An unfinished line: only the limits can be checked.
            if (bytes.size() - pos > limits.max_line_bytes + 1)
                return line_no == 0 ? invalid(414, "the request line is longer than " + std::to_string(limits.max_line_bytes) + " bytes")
                                    : invalid(431, "a header line is longer than " + std::to_string(limits.max_line_bytes) + " bytes");
            if (bytes.size() > limits.max_head_bytes)
                return invalid(431, "the request head is larger than " + std::to_string(limits.max_head_bytes) + " bytes");
            return r;  // Incomplete
        }
        // The same order of checks as for an unfinished line above (length, then head size),
        // so the answer does not depend on how the bytes arrived.
        const bool has_cr = nl > pos && bytes[nl - 1] == '\r';
        const std::string_view line = bytes.substr(pos, nl - pos - (has_cr ? 1 : 0));
        if (line.size() > limits.max_line_bytes)
            return line_no == 0 ? invalid(414, "the request line is longer than " + std::to_string(limits.max_line_bytes) + " bytes")
                                : invalid(431, "a header line is longer than " + std::to_string(limits.max_line_bytes) + " bytes");
        if (nl + 1 > limits.max_head_bytes)
            return invalid(431, "the request head is larger than " + std::to_string(limits.max_head_bytes) + " bytes");
        if (!has_cr) return invalid(400, "a line of the request head does not end with CR LF");
        pos = nl + 1;
        if (line_no == 0) {
            if (!check_request_line(line, r)) return r;
            continue;
        }
        if (line.empty()) break;  // the blank line: end of the head
        if (++fields > limits.max_fields)
            return invalid(431, "the request has more than " + std::to_string(limits.max_fields) + " header fields");
        if (line.front() == ' ' || line.front() == '\t') return invalid(400, "obsolete line folding in the request head");
        const size_t colon = line.find(':');
        if (colon == std::string_view::npos) return invalid(400, "a header line without a colon");
        const std::string_view name = line.substr(0, colon), value = trim_ows(line.substr(colon + 1));
        if (!is_token(name)) return invalid(400, "an invalid header field name");
        for (unsigned char c : value)
            if ((c < 0x20 && c != '\t') || c == 0x7f)
                return invalid(400, "the header field '" + std::string(name) + "' contains a control character");
        if (iequals(name, "Content-Length")) {
            if (seen_length) return invalid(400, "duplicate Content-Length header");
            seen_length = true;
            if (value.empty() || value.size() > 18 ||
                !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }))
                return invalid(400, "invalid Content-Length");
            r.content_length = std::stoull(std::string(value));
        } else if (iequals(name, "Transfer-Encoding")) {
            if (seen_encoding) return invalid(400, "duplicate Transfer-Encoding header");
            seen_encoding = true;
            if (!iequals(value, "chunked"))
                return invalid(501, "Transfer-Encoding '" + std::string(value) + "' is not supported (only chunked)");
            r.chunked = true;
        } else if (iequals(name, "Connection")) {
            if (has_token(value, "close")) connection_close = true;
            if (has_token(value, "keep-alive")) connection_keep_alive = true;
        } else if (iequals(name, "Expect")) {
            if (iequals(value, "100-continue")) r.expect_continue = true;
        }
    }
    if (seen_length && seen_encoding) return invalid(400, "both Content-Length and Transfer-Encoding");
    if (r.content_length > limits.max_body_bytes)
        return invalid(413, "the request body is larger than " + std::to_string(limits.max_body_bytes) + " bytes");
    r.keep_alive = !connection_close && (r.http11 || connection_keep_alive);
    r.state = HeadCheck::State::Complete;
    r.head_bytes = pos;
    return r;
}

}  // namespace genie::server
