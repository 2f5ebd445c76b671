// The device seam (backend/device.hpp): each BackendKind's facts, from the CPU backend
// (host memory, its scratch) or the CUDA entry points (backend/cuda_entry.hpp).
#include "backend/device.hpp"

#include "backend/cuda_entry.hpp"
#include "core/system_memory.hpp"

#include <genie/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <thread>

namespace genie::backend {

namespace {

/// The CPU backend's scratch beyond the forward pass's activations: the quantized
/// activations (about 1.1 bytes per value, 2 counted) and each worker thread's attention
/// scores (F32 + F16 per cell for the query heads sharing a KV head).
ScratchNeeds cpu_scratch_needs(const ScratchShape& s) noexcept {
    const uint64_t threads = std::max(1u, std::thread::hardware_concurrency());
    const uint64_t group = static_cast<uint64_t>(s.n_head / std::max(1, s.n_head_kv));
    ScratchNeeds n;
    n.scratch = static_cast<uint64_t>(s.batch) * static_cast<uint64_t>(s.max_row) * 2 +
                threads * group * static_cast<uint64_t>(s.context_length) * 6;
    return n;
}

}  // namespace

BackendKind resolve_backend(BackendKind requested) noexcept {
    if (requested != BackendKind::Auto) return requested;
    return cuda_device_count() > 0 ? BackendKind::Cuda : BackendKind::Cpu;
}

const char* backend_name(BackendKind kind) noexcept {
    switch (kind) {
        case BackendKind::Cpu: return "CPU";
        case BackendKind::Cuda: return "CUDA";
        case BackendKind::Auto: break;
    }
    return "auto";
}

DeviceMemory device_memory_info(BackendKind kind) {
    const core::SystemMemory host = core::read_system_memory();
    DeviceMemory m;
    if (kind != BackendKind::Cuda) {
        m.description = "host memory";
        m.free = host.usable();
        m.free_source = host.usable_source();
        return m;
    }
    CudaMemoryInfo info;
    std::string reason;
    if (!cuda_memory_info(0, info, &reason)) {
        if (!GENIE_HAVE_CUDA) throw Error(ErrorCode::Unsupported, reason);  // "CUDA backend not available in this build"
        throw Error(ErrorCode::Device, fmt::format("the CUDA backend was asked for but no CUDA device is usable: {}", reason));
    }
    m.description = fmt::format("CUDA device 0 ({}, {})", info.name, info.integrated ? "integrated" : "discrete");
    if (info.integrated) {
        // One DRAM: cudaMemGetInfo's free leaves out the reclaimable page cache (where
        // zero-copy weights live); the host's available memory counts it.
        m.free = std::max<uint64_t>(host.usable(), info.free);
        m.free_source = host.usable_source() + ", integrated GPU";
    } else {
        m.free = info.free;
        m.free_source = "cudaMemGetInfo free";
    }
    return m;
}

std::shared_ptr<DeviceWeights> place_weights(BackendKind kind, const void* data, size_t bytes) {
    if (kind != BackendKind::Cuda) return nullptr;  // the CPU reads the model's mapping in place
    return cuda_load_weights(data, bytes, 0);
}

std::unique_ptr<Backend> open_backend(BackendKind kind, const BackendOpenOptions& options) {
    if (kind == BackendKind::Cuda) return make_cuda_backend(options.weights);
    return make_cpu_backend(options.threads);
}

ScratchNeeds scratch_bytes(BackendKind kind, const ScratchShape& shape) noexcept {
    return kind == BackendKind::Cuda ? cuda_scratch_needs(shape) : cpu_scratch_needs(shape);
}

}  // namespace genie::backend
