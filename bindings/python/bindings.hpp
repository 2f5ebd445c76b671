// Registration functions of the `genie` Python module, one per source file.
#pragma once

#include <pybind11/pybind11.h>

namespace genie::python {

/// quantize / dequantize / can_quantize / can_dequantize (quant.cpp).
void register_quant(pybind11::module_& m);

}  // namespace genie::python
