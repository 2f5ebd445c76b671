// The `genie` Python module: entry point and version. Each class registers itself from
// its own file (errors.cpp, model.cpp, sampler.cpp, session.cpp, quant.cpp, chat.cpp, engine.cpp).
#include "bindings.hpp"

#include <genie/version.h>

namespace py = pybind11;

PYBIND11_MODULE(genie, m) {
    m.doc() = "libgenie: embeddable LLM inference (Python bindings)";
    m.attr("__version__") = GENIE_VERSION_STRING;

    genie::python::register_errors(m);
    genie::python::register_quant(m);
    genie::python::register_model(m);
    genie::python::register_sampler(m);
    genie::python::register_session(m);
    genie::python::register_chat(m);
    genie::python::register_engine(m);
}
