// The device seam: how the layers above (model/, runtime/) choose, size and open a compute
// backend without naming one. Each backend provides the facts behind these functions
// (the CPU backend here and in backend/cpu/; CUDA in cuda/, or backend/cuda_stub.cpp in a
// build without it, through backend/cuda_entry.hpp, which nothing above backend/ includes).
#pragma once

#include "backend/backend.hpp"

#include <genie/model.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace genie::backend {

/// A model's tensor bytes made reachable by a device, per that backend's allocation
/// policy (e.g. a unified-memory device uses the mapping in place, a discrete one gets one
/// upload). A Weight keeps its host address (the model's mapping): the backend translates
/// it. Shared by every session of the model.
class DeviceWeights {
public:
    virtual ~DeviceWeights() = default;
    /// e.g. "NVIDIA H200 (sm_90, discrete): 1.20 GiB uploaded".
    virtual std::string describe() const = 0;
    /// Device memory these weights hold (0 when used in place from host memory).
    virtual size_t device_bytes() const noexcept = 0;
};

/// Auto resolved: the GPU backend when a device is usable, else the CPU; any other kind
/// is returned as it is.
BackendKind resolve_backend(BackendKind requested) noexcept;
/// "CPU", "CUDA" ("auto" for Auto).
const char* backend_name(BackendKind kind) noexcept;

/// The memory a backend computes in, for the memory planner.
struct DeviceMemory {
    std::string description;  ///< "host memory", "CUDA device 0 (NVIDIA H200, discrete)"
    uint64_t free = 0;        ///< bytes this process can still get there
    std::string free_source;  ///< where `free` comes from, e.g. "MemAvailable (/proc/meminfo)"
};
/// `kind` must be resolved. Throws genie::Error Unsupported (the backend is not in this
/// build) or Device (no usable device, with the reason).
DeviceMemory device_memory_info(BackendKind kind);

/// Makes host bytes [data, data + bytes) (a model's tensor data) reachable by the backend
/// `kind`; nullptr for a backend that reads host memory in place (the CPU). Throws like
/// device_memory_info, and OutOfMemory when the device has too little free.
std::shared_ptr<DeviceWeights> place_weights(BackendKind kind, const void* data, size_t bytes);

struct BackendOpenOptions {
    int32_t threads = 0;                            ///< CPU worker threads (0 = hardware concurrency)
    std::shared_ptr<const DeviceWeights> weights;   ///< from place_weights (device backends)
};
/// A backend of `kind` (resolved) for one session. Throws like place_weights.
std::unique_ptr<Backend> open_backend(BackendKind kind, const BackendOpenOptions& options);

/// The shapes a session's scratch memory grows with.
struct ScratchShape {
    int64_t batch = 1;                 ///< tokens per forward call
    int64_t context_length = 0;        ///< KV cells
    int64_t max_row = 0;               ///< longest matmul input row (weights' n_in, n_ff)
    int64_t max_weight_elements = 0;   ///< largest 2-D weight
    int64_t n_vocab = 0;
    int32_t n_head = 0;
    int32_t n_head_kv = 0;
};
/// What a backend needs beyond the forward pass's activations (which the model layer
/// counts): its own scratch, and a fixed cost per device.
struct ScratchNeeds {
    uint64_t scratch = 0;          ///< bytes that grow with the shape
    uint64_t device_overhead = 0;  ///< e.g. a GPU context, library handles, kernel images; 0 on the CPU
};
/// The scratch needs of the backend `kind` (resolved) for `shape`. Never throws.
ScratchNeeds scratch_bytes(BackendKind kind, const ScratchShape& shape) noexcept;

}  // namespace genie::backend
