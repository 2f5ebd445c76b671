// The C ABI of KV persistence (include/genie/genie.h "session state"): genie_session_save_state
// and genie_session_load_state over Session::save_state / load_state. Every body runs inside
// genie::capi::guarded_call, so no exception crosses into C.
#include "chat_convert.hpp"

#include <genie/error.hpp>
#include <genie/genie.h>
#include <genie/session.hpp>

#include <atomic>
#include <string>

namespace genie::capi {
// Defined in genie_c.cpp (which owns struct genie_session).
genie::Session& session_for_call(genie_session* session, std::atomic<bool>*& busy);
}  // namespace genie::capi

namespace {

/// Holds a session's busy flag for one call (GENIE_BUSY when another call holds it).
class SessionCall {
public:
    explicit SessionCall(genie_session* handle) {
        std::atomic<bool>* busy = nullptr;
        session_ = &genie::capi::session_for_call(handle, busy);
        if (busy->exchange(true)) throw genie::Error(genie::ErrorCode::Busy, "the session is in use by another call");
        busy_ = busy;
    }
    SessionCall(const SessionCall&) = delete;
    SessionCall& operator=(const SessionCall&) = delete;
    ~SessionCall() { busy_->store(false); }
    genie::Session& session() { return *session_; }

private:
    genie::Session* session_ = nullptr;
    std::atomic<bool>* busy_ = nullptr;
};

const char* path_argument(const char* path) {
    if (!path || !*path) genie::capi::invalid_arg("path must be a non-empty NUL-terminated string");
    return path;
}

}  // namespace

extern "C" {

genie_status genie_session_save_state(uint64_t* out_bytes, genie_session* session, const char* path) {
    return genie::capi::guarded_call(__func__, [&] {
        if (out_bytes) *out_bytes = 0;
        SessionCall call(session);
        const uint64_t bytes = call.session().save_state(path_argument(path));
        if (out_bytes) *out_bytes = bytes;
    });
}

genie_status genie_session_load_state(genie_session* session, const char* path) {
    return genie::capi::guarded_call(__func__, [&] {
        SessionCall call(session);
        call.session().load_state(path_argument(path));
    });
}

}  // extern "C"
