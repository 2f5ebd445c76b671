// CUDA device discovery. Plain C++ types only, so callers need no CUDA headers.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace genie::cuda {

/// Facts about one CUDA device.
struct DeviceInfo {
    int index = 0;                           ///< CUDA device ordinal
    std::string name;                        ///< e.g. "NVIDIA H100 80GB HBM3", "Orin"
    int compute_major = 0;                   ///< compute capability, e.g. 9 for sm_90
    int compute_minor = 0;
    bool integrated = false;                 ///< shares memory with the CPU (Jetson)
    bool concurrent_managed_access = false;  ///< CPU and GPU may touch managed memory at once
    size_t total_memory = 0;                 ///< bytes
    size_t free_memory = 0;                  ///< bytes free when queried (0 if that query failed)
};

/// The result of query_devices().
struct DeviceQuery {
    int count = 0;                    ///< number of usable devices (0 without driver or GPU)
    std::vector<DeviceInfo> devices;  ///< one entry per device, in ordinal order
    std::string error;                ///< why count is 0 or a query failed ("" when all went well)
};

/// Enumerates the CUDA devices. Never throws and never aborts: without a driver
/// or a device it returns count 0 and the CUDA runtime's explanation in `error`.
/// Creates a context on each device (to read free memory). Thread-safe.
DeviceQuery query_devices() noexcept;

}  // namespace genie::cuda
