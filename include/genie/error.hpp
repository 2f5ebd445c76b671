// libgenie: the error type thrown by the C++ API.
#pragma once

#include <genie/export.h>

#include <stdexcept>
#include <string>
#include <string_view>

namespace genie {

/// What kind of failure an Error reports. The numeric values are the C ABI's
/// `genie_status` codes (0 = OK, negative = error) so the two never drift.
enum class ErrorCode : int {
    Ok = 0,
    InvalidArgument = -1,  ///< a caller passed a value outside the documented domain
    NotFound = -2,         ///< a file, key, tensor or token that was asked for does not exist
    Format = -3,           ///< input bytes are malformed (corrupt/truncated GGUF, bad UTF-8, bad JSON)
    Unsupported = -4,      ///< well-formed input this build cannot handle (unknown architecture, quant type)
    OutOfMemory = -5,      ///< an allocation failed (host or device)
    ContextOverflow = -6,  ///< the prompt or conversation does not fit the context window
    Cancelled = -7,        ///< the operation was cancelled by the caller
    Busy = -8,             ///< the object is in use by another operation
    NotLoaded = -9,        ///< no model is loaded
    Device = -10,          ///< an accelerator (CUDA) error
    Internal = -11,        ///< a bug in libgenie: please report it
    Io = -12,              ///< the operating system refused a read, write, map or open
};

/// Short stable name of a code, e.g. "FORMAT". Never null.
GENIE_API const char* error_code_name(ErrorCode code) noexcept;

/// The exception thrown by every libgenie C++ function that can fail.
/// `what()` is a complete sentence naming what failed and where
/// (file, byte offset, key, tensor ...). Thread-safe to copy and read.
class GENIE_API Error : public std::runtime_error {
public:
    Error(ErrorCode code, const std::string& message);
    ErrorCode code() const noexcept { return code_; }

private:
    ErrorCode code_;
};

}  // namespace genie
