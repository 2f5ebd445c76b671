#include "guard.hpp"

#include <cstdlib>
#include <mutex>

namespace genie::capi {

namespace {

thread_local std::string g_last_error;

std::mutex g_log_mutex;
genie_log_callback g_log_callback = nullptr;
void* g_log_user = nullptr;

}  // namespace

genie_status fail(const char* function, genie_status status, std::string_view message) noexcept {
    try {
        g_last_error.assign(function);
        g_last_error.append(": ");
        g_last_error.append(message);
    } catch (...) {
        // No memory for the message: keep what fits in the existing capacity.
        g_last_error.clear();
    }
    log_message(GENIE_LOG_ERROR, g_last_error.c_str());
    return status;
}

const char* last_error() noexcept { return g_last_error.c_str(); }

void clear_last_error() noexcept { g_last_error.clear(); }

void log_message(genie_log_level level, const char* message) noexcept {
    try {
        std::lock_guard<std::mutex> lock(g_log_mutex);
        if (g_log_callback) g_log_callback(g_log_user, level, message);
    } catch (...) {
        // A log sink must never turn a call into a failure.
    }
}

void set_log_sink(genie_log_callback callback, void* user) {
    std::lock_guard<std::mutex> lock(g_log_mutex);
    g_log_callback = callback;
    g_log_user = user;
}

void invalid_arg(const std::string& message) { throw genie::Error(genie::ErrorCode::InvalidArgument, message); }

void require_not_null(const void* pointer, const char* name) {
    if (!pointer) invalid_arg(std::string(name) + " must not be NULL");
}

void check_version(unsigned int version, unsigned int current, const char* name) {
    if (version == 0 || version > current)
        invalid_arg(std::string(name) + ": version " + std::to_string(version) + " is not supported (this library knows 1.." +
                    std::to_string(current) + "; initialise it with the _INIT macro or _init function)");
}

std::string_view text_arg(const char* text, size_t len, std::string_view name) {
    if (!text && len != 0) invalid_arg(std::string(name) + " is NULL but its length is not 0");
    return text ? std::string_view(text, len) : std::string_view();
}

char* copy_string(std::string_view text) {
    char* out = static_cast<char*>(std::malloc(text.size() + 1));
    if (!out) throw std::bad_alloc();
    if (!text.empty()) std::memcpy(out, text.data(), text.size());
    out[text.size()] = '\0';
    return out;
}

genie_token* copy_tokens(std::span<const int32_t> tokens) {
    if (tokens.empty()) return nullptr;
    auto* out = static_cast<genie_token*>(std::malloc(tokens.size() * sizeof(genie_token)));
    if (!out) throw std::bad_alloc();
    std::memcpy(out, tokens.data(), tokens.size() * sizeof(genie_token));
    return out;
}

}  // namespace genie::capi
