// The allocation policy of the CUDA backend (docs/cuda.md):
//  - the device kind decides where weights live:
//      integrated (Jetson: one DRAM for CPU and GPU)
//        * pageable memory through the host page tables (ATS/HMM) -> the mmap used as is;
//        * else cudaHostRegister(mapped, read-only) of the mmap -> zero-copy, nothing
//          duplicated;
//        * else (registration refused) managed memory with read-mostly advice (one copy
//          next to the page cache, which the kernel may drop);
//      discrete -> one cudaMalloc, filled once through pinned double-buffered staging;
//  - KV cache and scratch: cudaMalloc on either kind;
//  - no allocation asks for more than cudaMemGetInfo reports free (OutOfMemory instead).
#pragma once

#include "backend/cuda_entry.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace genie::cuda {

/// What a device is and which zero-copy paths it offers.
struct DeviceTraits {
    int device = 0;
    std::string name;
    int major = 0, minor = 0;
    int sm_count = 0;
    bool integrated = false;                       ///< cudaDevAttrIntegrated
    bool concurrent_managed_access = false;        ///< cudaDevAttrConcurrentManagedAccess
    bool pageable_uses_host_page_tables = false;   ///< cudaDevAttrPageableMemoryAccessUsesHostPageTables
    bool host_register_read_only = false;          ///< cudaDevAttrHostRegisterReadOnlySupported
    bool can_map_host_memory = false;              ///< cudaDevAttrCanMapHostMemory
};

/// Reads the attributes of `device`. Throws genie::Error (Device).
DeviceTraits device_traits(int device);

/// How a model's weights reach the device.
enum class WeightPlacement {
    Uploaded,         ///< discrete: a device copy (cudaMalloc)
    HostPageTables,   ///< integrated with ATS/HMM: the host address used directly
    HostRegistered,   ///< integrated: cudaHostRegister'ed mapping (zero-copy)
    Managed,          ///< integrated fallback: managed memory copy
};
const char* placement_name(WeightPlacement p) noexcept;

/// cudaMalloc that first checks cudaMemGetInfo: OutOfMemory (naming `what`, the size
/// and what is free) instead of asking for more than the device has free.
void* device_malloc(size_t bytes, const char* what);
/// cudaFree, errors ignored (destructors).
void device_free(void* p) noexcept;

/// The DeviceWeights of the CUDA backend.
class CudaWeights final : public backend::DeviceWeights {
public:
    /// Makes [data, data + bytes) reachable by `device` per the policy above.
    CudaWeights(const void* data, size_t bytes, int device);
    ~CudaWeights() override;
    CudaWeights(const CudaWeights&) = delete;
    CudaWeights& operator=(const CudaWeights&) = delete;

    std::string describe() const override;
    size_t device_bytes() const noexcept override;

    /// The device address of host address `host` (inside the range), or nullptr.
    const void* device_address(const void* host) const noexcept {
        const auto* h = static_cast<const uint8_t*>(host);
        if (h < host_begin_ || h >= host_end_) return nullptr;
        return device_begin_ + (h - host_begin_);
    }
    int device() const noexcept { return traits_.device; }
    const DeviceTraits& traits() const noexcept { return traits_; }
    WeightPlacement placement() const noexcept { return placement_; }

private:
    void upload(const uint8_t* src, size_t bytes);

    DeviceTraits traits_;
    WeightPlacement placement_ = WeightPlacement::Uploaded;
    const uint8_t* host_begin_ = nullptr;
    const uint8_t* host_end_ = nullptr;
    const uint8_t* device_begin_ = nullptr;
    void* owned_ = nullptr;       // cudaMalloc / cudaMallocManaged memory
    void* registered_ = nullptr;  // the page-aligned start given to cudaHostRegister
    size_t bytes_ = 0;
};

}  // namespace genie::cuda
