// Helpers of the GPU tests: a CPU and a CUDA backend over the same weights, device
// tensors filled from and read back to host vectors.
#pragma once

#include "backend/cuda_entry.hpp"

#include <cuda_runtime_api.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

namespace genie::gpu_test {

inline void cuda_ok(cudaError_t status, const char* what) {
    INFO(what << ": " << cudaGetErrorString(status));
    REQUIRE(status == cudaSuccess);
}

/// Host bytes for weights (256-byte aligned slots) that both backends read: the CPU in
/// place, the CUDA backend through cuda_load_weights (uploaded or registered, as a model).
class WeightArena {
public:
    explicit WeightArena(size_t capacity) : bytes_(capacity + 256) {
        base_ = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(bytes_.data()) + 255) & ~uintptr_t{255});
    }
    /// Copies `data` into the arena; returns its address there.
    const void* add(const void* data, size_t n) {
        used_ = (used_ + 255) & ~size_t{255};
        REQUIRE(used_ + n <= bytes_.size() - 256);
        std::memcpy(base_ + used_, data, n);
        const void* at = base_ + used_;
        used_ += n;
        return at;
    }
    /// Makes everything added so far reachable by device 0 (call after the last add).
    std::shared_ptr<backend::DeviceWeights> to_device() const { return backend::cuda_load_weights(base_, used_, 0); }

private:
    std::vector<uint8_t> bytes_;
    uint8_t* base_ = nullptr;
    size_t used_ = 0;
};

/// A [rows, cols] tensor in both backends' memory with the same contents.
struct Pair {
    std::vector<float> host;
    backend::Tensor cpu;
    backend::Tensor dev;
};

inline Pair make_pair(backend::Workspace& ws, int64_t rows, int64_t cols, const std::vector<float>& values) {
    Pair p;
    p.host = values;
    p.host.resize(static_cast<size_t>(rows * cols));
    p.cpu = {p.host.data(), rows, cols};
    p.dev = ws.allocate(rows, cols);
    cuda_ok(cudaMemcpy(p.dev.data, p.host.data(), p.host.size() * sizeof(float), cudaMemcpyHostToDevice), "upload");
    // From pageable memory cudaMemcpy may return before the DMA has landed, and the CUDA
    // backend's kernels run on a non-blocking stream that does not wait for the legacy
    // stream's copy.
    cuda_ok(cudaDeviceSynchronize(), "upload (synchronize)");
    return p;
}

/// The device tensor's values (after every queued op on any stream finished).
inline std::vector<float> download(const backend::Tensor& t) {
    cuda_ok(cudaDeviceSynchronize(), "synchronize");
    std::vector<float> out(static_cast<size_t>(t.rows * t.cols));
    cuda_ok(cudaMemcpy(out.data(), t.data, out.size() * sizeof(float), cudaMemcpyDeviceToHost), "download");
    return out;
}

inline std::vector<float> random_floats(size_t n, std::mt19937& rng, float scale = 1.0f) {
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
}

}  // namespace genie::gpu_test
