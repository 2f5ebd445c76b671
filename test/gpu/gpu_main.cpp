// Entry point of genie_gpu_tests: runs the Catch2 session only when a CUDA device
// is usable; otherwise reports the reason and exits with 77, ctest's "skipped".
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "cuda/device.hpp"

#include <cstdio>

int main(int argc, char** argv) {
    const genie::cuda::DeviceQuery query = genie::cuda::query_devices();
    if (query.count == 0) {
        std::printf("SKIPPED: no CUDA device: %s\n", query.error.c_str());
        return 77;
    }
    for (const genie::cuda::DeviceInfo& device : query.devices)
        std::printf("CUDA device %d: %s (sm_%d%d, %s, %zu MiB free of %zu MiB)\n", device.index, device.name.c_str(),
                    device.compute_major, device.compute_minor, device.integrated ? "integrated" : "discrete",
                    device.free_memory >> 20, device.total_memory >> 20);
    return Catch::Session().run(argc, argv);
}
