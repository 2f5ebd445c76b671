// The C ABI of KV persistence (include/genie/genie.h "session state"): genie_session_save_state
// and genie_session_load_state over Session::save_state / load_state. Every body runs inside
// guarded() (capi/guard.hpp), so no exception crosses into C.
#include "guard.hpp"
#include "handles.hpp"

#include <cstdint>

namespace {

using namespace genie::capi;

const char* path_argument(const char* path) {
    if (!path || !*path) invalid_arg("path must be a non-empty NUL-terminated string");
    return path;
}

}  // namespace

extern "C" {

genie_status genie_session_save_state(uint64_t* out_bytes, genie_session* session, const char* path) {
    return guarded(__func__, [&] {
        if (out_bytes) *out_bytes = 0;
        check(session);
        BusyGuard guard;
        guard.acquire(session->busy, "the session");
        const uint64_t bytes = session->session.save_state(path_argument(path));
        if (out_bytes) *out_bytes = bytes;
    });
}

genie_status genie_session_load_state(genie_session* session, const char* path) {
    return guarded(__func__, [&] {
        check(session);
        BusyGuard guard;
        guard.acquire(session->busy, "the session");
        session->session.load_state(path_argument(path));
    });
}

}  // extern "C"
