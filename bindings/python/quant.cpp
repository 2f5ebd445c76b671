// Python bindings of the row quantization API (quant/quant.hpp). Type names are
// llama.cpp's ("Q4_K", "f16"; case-insensitive). The GIL is released while rows
// are converted.
#include "bindings.hpp"

#include <genie/error.hpp>
#include <genie/types.hpp>

#include "quant/quant.hpp"

#include <pybind11/numpy.h>

#include <cstring>
#include <string>
#include <vector>

namespace py = pybind11;

namespace genie::python {
namespace {

DType parse_type(const std::string& name) {
    const auto type = dtype_from_name(name);
    if (!type) throw py::value_error("unknown tensor type name '" + name + "'");
    return *type;
}

// Block structs need 2- or 4-byte alignment; Python buffers promise none, so
// rows are staged in 8-byte aligned storage.
std::vector<uint64_t> aligned_copy(const void* data, size_t size) {
    std::vector<uint64_t> storage((size + 7) / 8);
    if (size != 0) std::memcpy(storage.data(), data, size);
    return storage;
}

// True if the buffer's items are laid out densely in C order.
bool is_c_contiguous(const py::buffer_info& info) {
    py::ssize_t expected = info.itemsize;
    for (py::ssize_t axis = info.ndim - 1; axis >= 0; --axis) {
        const auto index = static_cast<size_t>(axis);
        if (info.shape[index] > 1 && info.strides[index] != expected) return false;
        expected *= info.shape[index];
    }
    return true;
}

py::array_t<float> dequantize(const std::string& type_name, const py::buffer& data) {
    const DType type = parse_type(type_name);
    if (!quant::can_dequantize(type))
        throw Error(ErrorCode::Unsupported, "dequantize: " + type_name + " cannot be dequantized");
    const py::buffer_info info = data.request();
    if (!is_c_contiguous(info)) throw py::value_error("dequantize: data must be a contiguous bytes-like object");
    const size_t size = static_cast<size_t>(info.size * info.itemsize);
    const DTypeInfo type_info = dtype_info(type);
    if (size % type_info.block_bytes != 0)
        throw py::value_error("dequantize: " + std::to_string(size) + " bytes is not a whole number of " +
                              std::string(type_info.name) + " blocks (" + std::to_string(type_info.block_bytes) +
                              " bytes each)");
    const int64_t n = static_cast<int64_t>(size / type_info.block_bytes) * type_info.block_size;
    py::array_t<float> out(std::vector<py::ssize_t>{static_cast<py::ssize_t>(n)});
    float* dst = out.mutable_data();
    const void* src = info.ptr;
    {
        py::gil_scoped_release release;
        const std::vector<uint64_t> staged = aligned_copy(src, size);
        quant::dequantize_row(type, staged.data(), dst, n);
    }
    return out;
}

using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;

py::bytes quantize(const std::string& type_name, const FloatArray& values) {
    const DType type = parse_type(type_name);
    if (values.ndim() != 1) throw py::value_error("quantize: values must be a 1-D float32 array");
    const int64_t n = values.shape(0);
    const size_t size = quant::row_bytes(type, n);  // throws for a bad n
    std::vector<uint64_t> staged((size + 7) / 8);
    const float* src = values.data();
    {
        py::gil_scoped_release release;
        quant::quantize_row(type, src, staged.data(), n);
    }
    return py::bytes(reinterpret_cast<const char*>(staged.data()), size);
}

}  // namespace

void register_quant(py::module_& m) {
    m.def("dequantize", &dequantize, py::arg("type_name"), py::arg("data"),
          "Dequantizes a row of `type_name` blocks (a bytes-like object) to a float32 array, "
          "bit-exact with ggml's reference dequantization.");
    m.def("quantize", &quantize, py::arg("type_name"), py::arg("values"),
          "Quantizes a 1-D float32 array (length a multiple of the block size) to bytes, "
          "byte-exact with ggml's reference quantizers.");
    m.def(
        "can_quantize", [](const std::string& name) { return quant::can_quantize(parse_type(name)); },
        py::arg("type_name"), "True if quantize() supports the type.");
    m.def(
        "can_dequantize", [](const std::string& name) { return quant::can_dequantize(parse_type(name)); },
        py::arg("type_name"), "True if dequantize() supports the type.");
}

}  // namespace genie::python
