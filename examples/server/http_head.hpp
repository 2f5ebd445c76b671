// genie-server: checks an HTTP/1.x request head (the request line and the header fields)
// before cpp-httplib parses it. cpp-httplib 0.11.4 (Debian 12) bounds the length of one
// header line but not their number, skips a line without a colon, accepts a duplicate
// Content-Length and reads the head with a per-read timeout only; the connection layer
// (http_front.hpp) reads each head into a bounded buffer, runs this check on it and answers
// a bad head itself, so httplib only ever sees heads that passed. No sockets here, so it is
// fuzzed on its own (test/fuzz/fuzz_server_http_head.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace genie::server {

struct HeadLimits {
    size_t max_head_bytes = 32 * 1024;  ///< request line + fields + blank line; beyond: 431
    size_t max_line_bytes = 8192;       ///< one line (cpp-httplib's CPPHTTPLIB_HEADER_MAX_LENGTH); beyond: 414 / 431
    size_t max_fields = 100;            ///< header fields (current cpp-httplib's CPPHTTPLIB_HEADER_MAX_COUNT); beyond: 431
    uint64_t max_body_bytes = uint64_t{8} << 20;  ///< Content-Length above it: 413
};

struct HeadCheck {
    enum class State { Incomplete, Complete, Invalid };
    State state = State::Incomplete;
    int status = 0;       ///< Invalid: the HTTP status to answer (400, 413, 414, 431, 501, 505)
    std::string message;  ///< Invalid: what is wrong, for the error body
    size_t head_bytes = 0;  ///< Complete: the head's length, its blank line included
    uint64_t content_length = 0;
    bool chunked = false;           ///< Transfer-Encoding: chunked
    bool keep_alive = true;         ///< false for "Connection: close" and HTTP/1.0 without keep-alive
    bool http11 = true;             ///< HTTP/1.1 (else HTTP/1.0)
    bool expect_continue = false;   ///< Expect: 100-continue
};

/// Checks the bytes received so far on a connection (they start with the request line).
/// Incomplete: no blank line yet and no limit exceeded; read more. Complete: the head is
/// well formed (RFC 9112: CR LF line ends, "METHOD SP TARGET SP HTTP/1.x", every field
/// "name: value" with a token name, no control characters but HT in values, no obsolete
/// line folding, at most one Content-Length of digits only, Transfer-Encoding only
/// "chunked" and never together with Content-Length). Invalid: `status` and `message`.
HeadCheck check_request_head(std::string_view bytes, const HeadLimits& limits);

}  // namespace genie::server
