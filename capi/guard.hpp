// Private to the C ABI (capi/*.cpp): the error machinery every extern "C" body runs in.
// guarded() is the one try/catch that turns any exception into a status and the calling
// thread's last-error message; the argument checks throw genie::Error(InvalidArgument)
// with one text per condition; string and token copies are malloc'ed for the caller.
#pragma once

#include <genie/error.hpp>
#include <genie/genie.h>

#include <cstring>
#include <exception>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace genie::capi {

// ---- last error and log sink ----------------------------------------------------------
/// Records "function: message" as the calling thread's last error, logs it (ERROR) and
/// returns `status`.
genie_status fail(const char* function, genie_status status, std::string_view message) noexcept;
/// The calling thread's last error ("" when none); valid until its next failing call.
const char* last_error() noexcept;
void clear_last_error() noexcept;
/// Sends a line to the installed log callback (if any); a throwing sink is ignored.
void log_message(genie_log_level level, const char* message) noexcept;
/// Installs (NULL: removes) the process-wide log callback.
void set_log_sink(genie_log_callback callback, void* user);

/// Runs `body`; any exception becomes a status and the thread's last-error message.
template <class Body>
genie_status guarded(const char* function, Body&& body) noexcept {
    try {
        body();
        return GENIE_OK;
    } catch (const genie::Error& e) {
        const auto status = static_cast<genie_status>(e.code());
        return fail(function, status == GENIE_OK ? GENIE_INTERNAL : status, e.what());
    } catch (const std::bad_alloc&) {
        return fail(function, GENIE_OUT_OF_MEMORY, "out of memory");
    } catch (const std::exception& e) {
        return fail(function, GENIE_INTERNAL, std::string("unexpected exception: ") + e.what());
    } catch (...) {
        return fail(function, GENIE_INTERNAL, "unexpected exception of unknown type");
    }
}

// ---- argument checks (each throws genie::Error InvalidArgument) ------------------------
[[noreturn]] void invalid_arg(const std::string& message);
/// "<name> must not be NULL".
void require_not_null(const void* pointer, const char* name);
/// A versioned struct: `version` must be 1..current ("<name>: version N is not supported ...").
void check_version(unsigned int version, unsigned int current, const char* name);
/// A (pointer, length) text argument: NULL is allowed only with length 0.
std::string_view text_arg(const char* text, size_t len, std::string_view name);

/// The int a caller stored in an enum field of a struct it filled. C lets any int sit in
/// an enum object; in C++ loading an enum value outside the enumerators' range is
/// undefined behaviour (UBSan: "load of value 99, which is not a valid value for type"),
/// so such fields are read through their bytes and validated as ints.
template <class E>
int enum_field(const E& field) noexcept {
    static_assert(std::is_enum_v<E>);
    std::underlying_type_t<E> v;
    std::memcpy(&v, &field, sizeof v);
    return static_cast<int>(v);
}

// ---- copies handed to the caller ------------------------------------------------------
/// A malloc'ed NUL-terminated copy (the caller frees it with genie_string_free).
char* copy_string(std::string_view text);
/// A malloc'ed copy (genie_tokens_free); NULL for an empty span.
genie_token* copy_tokens(std::span<const int32_t> tokens);

}  // namespace genie::capi
