// The `genie` Python module: entry point, version and error translation.
// Each area of the API registers itself from its own file (quant.cpp, ...).
#include "bindings.hpp"

#include <genie/error.hpp>
#include <genie/version.h>

namespace py = pybind11;

PYBIND11_MODULE(genie, m) {
    m.doc() = "libgenie: embeddable LLM inference (Python bindings)";
    m.attr("__version__") = GENIE_VERSION_STRING;

    // genie::Error -> the closest built-in Python exception, message kept.
    py::register_exception_translator([](std::exception_ptr error) {
        try {
            if (error) std::rethrow_exception(error);
        } catch (const genie::Error& e) {
            switch (e.code()) {
                case genie::ErrorCode::InvalidArgument:
                case genie::ErrorCode::Format: PyErr_SetString(PyExc_ValueError, e.what()); break;
                case genie::ErrorCode::Unsupported: PyErr_SetString(PyExc_NotImplementedError, e.what()); break;
                case genie::ErrorCode::NotFound: PyErr_SetString(PyExc_LookupError, e.what()); break;
                case genie::ErrorCode::OutOfMemory: PyErr_SetString(PyExc_MemoryError, e.what()); break;
                case genie::ErrorCode::Io: PyErr_SetString(PyExc_OSError, e.what()); break;
                default: PyErr_SetString(PyExc_RuntimeError, e.what()); break;
            }
        }
    });

    genie::python::register_quant(m);
}
