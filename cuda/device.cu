// CUDA device discovery: every runtime call is checked and its failure reported
// in the result instead of thrown, since this runs before anything else is known
// to work (no driver, no GPU, a GPU taken by another process).
#include "cuda/device.hpp"

#include <cuda_runtime_api.h>

#include <exception>
#include <string>

namespace genie::cuda {
namespace {

std::string describe(cudaError_t status, const char* call) {
    return std::string(call) + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")";
}

}  // namespace

DeviceQuery query_devices() noexcept {
    DeviceQuery result;
    try {
        int count = 0;
        cudaError_t status = cudaGetDeviceCount(&count);
        if (status != cudaSuccess) {
            result.error = describe(status, "cudaGetDeviceCount");
            (void)cudaGetLastError();  // reset the last-error state so later calls start clean
            return result;
        }
        if (count == 0) {
            result.error = "cudaGetDeviceCount: no CUDA device";
            return result;
        }
        int previous = 0;
        const bool restore = cudaGetDevice(&previous) == cudaSuccess;
        for (int index = 0; index < count; ++index) {
            cudaDeviceProp props{};
            status = cudaGetDeviceProperties(&props, index);
            if (status != cudaSuccess) {
                result.error = describe(status, "cudaGetDeviceProperties");
                continue;
            }
            DeviceInfo info;
            info.index = index;
            info.name = props.name;
            info.compute_major = props.major;
            info.compute_minor = props.minor;
            info.integrated = props.integrated != 0;
            info.concurrent_managed_access = props.concurrentManagedAccess != 0;
            info.total_memory = props.totalGlobalMem;
            size_t free_bytes = 0, total_bytes = 0;
            if ((status = cudaSetDevice(index)) == cudaSuccess &&
                (status = cudaMemGetInfo(&free_bytes, &total_bytes)) == cudaSuccess) {
                info.free_memory = free_bytes;
            } else {
                result.error = describe(status, "cudaMemGetInfo");
                (void)cudaGetLastError();
            }
            result.devices.push_back(std::move(info));
        }
        if (restore) (void)cudaSetDevice(previous);
        result.count = static_cast<int>(result.devices.size());
    } catch (const std::exception& e) {  // std::bad_alloc from the strings/vector
        result.error = std::string("query_devices: ") + e.what();
    } catch (...) {
        result.error = "query_devices: unknown failure";
    }
    return result;
}

}  // namespace genie::cuda
