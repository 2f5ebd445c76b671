// The CUDA backend's entry points, behind backend/device.hpp. cuda/ defines them; a build
// without CUDA compiles backend/cuda_stub.cpp instead. Only backend/device.cpp, cuda/ and
// the tests of the CUDA backend include this header (model/ and runtime/ go through
// device.hpp).
#pragma once

#include "backend/backend.hpp"
#include "backend/device.hpp"

#include <cstddef>
#include <memory>
#include <string>

namespace genie::backend {

/// Memory facts of a CUDA device.
struct CudaMemoryInfo {
    size_t free = 0;
    size_t total = 0;
    bool integrated = false;  ///< shares physical memory with the CPU (Jetson)
    std::string name;
};

/// Number of usable CUDA devices; 0 in a build without CUDA or without a device/driver,
/// with the reason in *reason. Never throws.
int cuda_device_count(std::string* reason = nullptr) noexcept;
/// Free/total memory of device `device`; false (and *reason) when unavailable. Never throws.
bool cuda_memory_info(int device, CudaMemoryInfo& info, std::string* reason = nullptr) noexcept;
/// Makes host bytes [data, data + bytes) (a model's tensor data, page-aligned or not)
/// reachable by device `device` per the allocation policy of cuda/allocator (integrated:
/// the mapping used in place; discrete: one upload). Throws genie::Error: Unsupported
/// (build without CUDA), Device (CUDA failure: call, file, line), OutOfMemory (more than
/// the device has free).
std::shared_ptr<DeviceWeights> cuda_load_weights(const void* data, size_t bytes, int device);
/// The CUDA backend on the device of `weights`. Throws like cuda_load_weights.
std::unique_ptr<Backend> make_cuda_backend(std::shared_ptr<const DeviceWeights> weights);
/// The CUDA backend's scratch for `shape` (cuda/backend.cpp's buffers) and the device's
/// fixed overhead. Never throws.
ScratchNeeds cuda_scratch_needs(const ScratchShape& shape) noexcept;

}  // namespace genie::backend
