#include <genie/error.hpp>

namespace genie {

const char* error_code_name(ErrorCode code) noexcept {
    switch (code) {
        case ErrorCode::Ok: return "OK";
        case ErrorCode::InvalidArgument: return "INVALID_ARGUMENT";
        case ErrorCode::NotFound: return "NOT_FOUND";
        case ErrorCode::Format: return "FORMAT";
        case ErrorCode::Unsupported: return "UNSUPPORTED";
        case ErrorCode::OutOfMemory: return "OUT_OF_MEMORY";
        case ErrorCode::ContextOverflow: return "CONTEXT_OVERFLOW";
        case ErrorCode::Cancelled: return "CANCELLED";
        case ErrorCode::Busy: return "BUSY";
        case ErrorCode::NotLoaded: return "NOT_LOADED";
        case ErrorCode::Device: return "DEVICE";
        case ErrorCode::Internal: return "INTERNAL";
        case ErrorCode::Io: return "IO";
    }
    return "UNKNOWN";
}

Error::Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}

}  // namespace genie
