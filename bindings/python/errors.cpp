// genie.Error (base, with .code and .code_name) and one subclass per genie::ErrorCode.
// Subclasses also derive from the closest built-in exception (InvalidArgumentError is a
// ValueError, NotFoundError a LookupError, IoError an OSError ...), so code written
// against built-in exceptions keeps working.
#include "bindings.hpp"

#include <genie/error.hpp>

#include <pybind11/eval.h>

#include <map>
#include <string>

namespace py = pybind11;

namespace genie::python {
namespace {

// Defined in Python: multiple inheritance from built-in exceptions is simplest there.
constexpr const char* kErrorClasses = R"(
class Error(Exception):
    """Base of every libgenie error. `code` is the C ABI's genie_status (negative int),
    `code_name` its stable name (e.g. "FORMAT")."""
    def __init__(self, message="", code=-11, code_name="INTERNAL"):
        super().__init__(message)
        self.code = code
        self.code_name = code_name

    def __str__(self):
        return f"[{self.code_name}] {self.args[0] if self.args else ''}"

class InvalidArgumentError(Error, ValueError): pass
class NotFoundError(Error, LookupError): pass
class FormatError(Error, ValueError): pass
class UnsupportedError(Error, NotImplementedError): pass
class OutOfMemoryError(Error, MemoryError): pass
class ContextOverflowError(Error, ValueError): pass
class CancelledError(Error, RuntimeError): pass
class BusyError(Error, RuntimeError): pass
class NotLoadedError(Error, RuntimeError): pass
class DeviceError(Error, RuntimeError): pass
class InternalError(Error, RuntimeError): pass
class IoError(Error, OSError): pass
)";

const std::map<ErrorCode, const char*> kClassNames = {
    {ErrorCode::InvalidArgument, "InvalidArgumentError"},
    {ErrorCode::NotFound, "NotFoundError"},
    {ErrorCode::Format, "FormatError"},
    {ErrorCode::Unsupported, "UnsupportedError"},
    {ErrorCode::OutOfMemory, "OutOfMemoryError"},
    {ErrorCode::ContextOverflow, "ContextOverflowError"},
    {ErrorCode::Cancelled, "CancelledError"},
    {ErrorCode::Busy, "BusyError"},
    {ErrorCode::NotLoaded, "NotLoadedError"},
    {ErrorCode::Device, "DeviceError"},
    {ErrorCode::Internal, "InternalError"},
    {ErrorCode::Io, "IoError"},
};

// The module's namespace, kept for the life of the process (never destroyed, so no
// Python object is released after the interpreter finalizes).
py::dict* g_module_dict = nullptr;

void set_python_error(ErrorCode code, const char* message) {
    const auto it = kClassNames.find(code);
    const char* name = it != kClassNames.end() ? it->second : "InternalError";
    py::object cls = (*g_module_dict)[name];
    py::object instance = cls(message, static_cast<int>(code), error_code_name(code));
    PyErr_SetObject(cls.ptr(), instance.ptr());
}

}  // namespace

void raise_error(ErrorCode code, const std::string& message) { throw Error(code, message); }

void register_errors(py::module_& m) {
    g_module_dict = new py::dict(m.attr("__dict__"));
    py::exec(kErrorClasses, m.attr("__dict__"));
    // Classes defined by exec get the module of the exec'd code ("builtins"): fix it.
    for (const auto& [code, name] : kClassNames) m.attr(name).attr("__module__") = "genie";
    m.attr("Error").attr("__module__") = "genie";

    py::register_exception_translator([](std::exception_ptr error) {
        try {
            if (error) std::rethrow_exception(error);
        } catch (const genie::Error& e) {
            set_python_error(e.code(), e.what());
        }
    });
}

}  // namespace genie::python
