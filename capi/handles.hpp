// Private to the C ABI (capi/*.cpp): the structs behind the opaque handles of genie.h,
// the check that a pointer is a live handle of the right type, the handles' busy flags
// (one call at a time per session / sampler) and their release.
#pragma once

#include "guard.hpp"

#include <genie/constraint.hpp>
#include <genie/engine.hpp>
#include <genie/error.hpp>
#include <genie/genie.h>
#include <genie/model.hpp>
#include <genie/sampler.hpp>
#include <genie/session.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

// Each handle starts with a tag so a NULL, freed or wrong-type pointer to readable
// memory is reported as INVALID_ARGUMENT instead of being used. kName names the handle
// in that message ("model is NULL or not a live genie_model").

struct genie_model {
    static constexpr uint64_t kTag = 0x67656e69654d444cULL;  // "genieMDL"
    static constexpr const char* kName = "model";
    uint64_t tag = kTag;
    genie::Model model;
    std::string chat_template;  // tokenizer.chat_template, "" when absent
};

struct genie_sampler {
    static constexpr uint64_t kTag = 0x67656e696553414dULL;  // "genieSAM"
    static constexpr const char* kName = "sampler";
    uint64_t tag = kTag;
    genie::Sampler sampler;
    std::atomic<bool> busy{false};
};

struct genie_session {
    static constexpr uint64_t kTag = 0x67656e6965534553ULL;  // "genieSES"
    static constexpr const char* kName = "session";
    uint64_t tag = kTag;
    genie::Session session;
    std::atomic<bool> busy{false};
    // genie_session_chat's JSON constraints, built once (building one walks the vocabulary).
    // Only the call holding `busy` touches them.
    std::shared_ptr<const genie::JsonConstraint> any_object{};
    std::string schema_text{};
    std::shared_ptr<const genie::JsonConstraint> schema{};
};

struct genie_engine {
    static constexpr uint64_t kTag = 0x67656e6965454e47ULL;  // "genieENG"
    static constexpr const char* kName = "engine";
    uint64_t tag = kTag;
    genie::Engine engine;
    genie::BackendKind backend = genie::BackendKind::Auto;
    explicit genie_engine(const genie::EngineOptions& o) : engine(o) {}
};

namespace genie::capi {

/// The tag a handle gets when freed (a later use is reported, not followed).
constexpr uint64_t kFreedTag = 0xdeadbeefdeadbeefULL;

/// `handle` itself when it is a live handle of its type; InvalidArgument otherwise.
template <class Handle>
Handle* check(Handle* handle) {
    if (!handle || handle->tag != Handle::kTag)
        invalid_arg(std::string(Handle::kName) + " is NULL or not a live genie_" + Handle::kName);
    return handle;
}

/// The genie_*_free of every handle: NULL and non-live pointers are ignored; the tag is
/// overwritten before the delete so a use after free is caught while the memory is readable.
template <class Handle>
void destroy(Handle* handle) noexcept {
    if (!handle || handle->tag != Handle::kTag) return;
    handle->tag = kFreedTag;
    try {
        delete handle;
    } catch (...) {
        // Destructors do not throw; nothing may cross into C regardless.
    }
}

/// Marks a session (and sampler) in use for the duration of one call: Busy ("<what> is in
/// use by another call") when another call holds it.
class BusyGuard {
public:
    BusyGuard() = default;
    BusyGuard(const BusyGuard&) = delete;
    BusyGuard& operator=(const BusyGuard&) = delete;
    void acquire(std::atomic<bool>& flag, const char* what) {
        bool expected = false;
        if (!flag.compare_exchange_strong(expected, true))
            throw genie::Error(genie::ErrorCode::Busy, std::string(what) + " is in use by another call");
        flags_.push_back(&flag);
    }
    ~BusyGuard() {
        for (auto* f : flags_) f->store(false);
    }

private:
    std::vector<std::atomic<bool>*> flags_;
};

}  // namespace genie::capi
