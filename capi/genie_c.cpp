// The C ABI: extern "C" wrappers over the C++ API. Every body that can fail is one
// try/catch that turns exceptions into a status and a thread-local message.
#include <genie/error.hpp>
#include <genie/genie.h>
#include <genie/version.h>

#include <string>

namespace {
thread_local std::string g_last_error;
}

extern "C" {

int genie_abi_version(void) { return GENIE_ABI_VERSION; }

const char* genie_version(void) { return GENIE_VERSION_STRING; }

const char* genie_status_name(genie_status status) {
    return genie::error_code_name(static_cast<genie::ErrorCode>(status));
}

const char* genie_last_error(void) { return g_last_error.c_str(); }

}  // extern "C"
