// The CUDA entry points (backend/cuda_entry.hpp) of a build without the CUDA backend
// (GENIE_CUDA=OFF or no nvcc): no device is ever reported, and asking for the backend is
// an Unsupported error. lib/CMakeLists.txt compiles this file only when cuda/ is not built.
#include "backend/cuda_entry.hpp"

#include <genie/error.hpp>

namespace genie::backend {

namespace {
constexpr const char* kUnavailable = "CUDA backend not available in this build";
}

int cuda_device_count(std::string* reason) noexcept {
    if (reason) *reason = kUnavailable;
    return 0;
}

bool cuda_memory_info(int, CudaMemoryInfo&, std::string* reason) noexcept {
    if (reason) *reason = kUnavailable;
    return false;
}

std::shared_ptr<DeviceWeights> cuda_load_weights(const void*, size_t, int) {
    throw Error(ErrorCode::Unsupported, kUnavailable);
}

std::unique_ptr<Backend> make_cuda_backend(std::shared_ptr<const DeviceWeights>) {
    throw Error(ErrorCode::Unsupported, kUnavailable);
}

ScratchNeeds cuda_scratch_needs(const ScratchShape&) noexcept { return {}; }

}  // namespace genie::backend
