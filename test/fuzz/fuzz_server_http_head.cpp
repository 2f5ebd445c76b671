// Fuzz target: genie-server's request-head check (examples/server/http_head.cpp), which the
// connection layer runs on every request head before cpp-httplib parses it. Any bytes give
// Incomplete, Complete or Invalid (never a crash, hang or exception), and the answer is
// consistent as bytes arrive: once a prefix is Complete (or Invalid) every longer input
// says the same, and a Complete head ends with its blank line within the limits.
#include "fuzz_support.hpp"
#include "http_head.hpp"

#include <cstdint>
#include <string_view>

#define GENIE_FUZZ_CHECK(cond) \
    do {                           \
        if (!(cond)) genie_fuzz::property_failed(#cond); \
    } while (0)

using genie::server::check_request_head;
using genie::server::HeadCheck;
using genie::server::HeadLimits;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    genie_fuzz::Input in(data, size);
    // Small limits chosen by the input, so every limit is reached by short inputs too.
    HeadLimits limits;
    limits.max_line_bytes = 4 + in.below(128);
    limits.max_head_bytes = limits.max_line_bytes + 2 + in.below(512);  // as in the server: a head holds a whole line
    limits.max_fields = in.below(12);
    limits.max_body_bytes = in.below(4096);
    const size_t cut = in.below(4096);
    const std::string_view bytes = in.rest();

    const HeadCheck full = check_request_head(bytes, limits);
    if (full.state == HeadCheck::State::Complete) {
        GENIE_FUZZ_CHECK(full.head_bytes >= 4 && full.head_bytes <= bytes.size() && full.head_bytes <= limits.max_head_bytes);
        GENIE_FUZZ_CHECK(bytes.substr(full.head_bytes - 4, 4) == "\r\n\r\n");
        GENIE_FUZZ_CHECK(full.content_length <= limits.max_body_bytes);
        GENIE_FUZZ_CHECK(!(full.chunked && full.content_length > 0));
    }
    if (full.state == HeadCheck::State::Invalid) GENIE_FUZZ_CHECK(full.status >= 400 && full.status < 600 && !full.message.empty());
    // The same bytes arriving in two parts: what the first part decides, the whole keeps.
    const HeadCheck part = check_request_head(bytes.substr(0, std::min(cut, bytes.size())), limits);
    if (part.state != HeadCheck::State::Incomplete) {
        GENIE_FUZZ_CHECK(part.state == full.state && part.status == full.status && part.head_bytes == full.head_bytes);
    }
    return 0;
}
