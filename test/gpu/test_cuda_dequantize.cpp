// Device dequantization must equal the CPU reference bit for bit, for every
// format, on random blocks (including extreme scales).
#include <catch2/catch.hpp>

#include <genie/error.hpp>

#include "cuda/dequantize.hpp"
#include "cuda/device.hpp"
#include "quant/quant.hpp"
#include "unit/quant_test_data.hpp"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using genie::DType;

void check(cudaError_t status, const char* what) {
    INFO(what << ": " << cudaGetErrorString(status));
    REQUIRE(status == cudaSuccess);
}

// Device memory released on scope exit, even when a REQUIRE fails.
struct DeviceBuffer {
    void* ptr = nullptr;
    explicit DeviceBuffer(size_t bytes) { check(cudaMalloc(&ptr, bytes == 0 ? 1 : bytes), "cudaMalloc"); }
    ~DeviceBuffer() { cudaFree(ptr); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

}  // namespace

TEST_CASE("query_devices reports the device the tests run on", "[gpu]") {
    const genie::cuda::DeviceQuery query = genie::cuda::query_devices();
    REQUIRE(query.count >= 1);
    REQUIRE(query.devices.size() == static_cast<size_t>(query.count));
    CHECK_FALSE(query.devices[0].name.empty());
    CHECK(query.devices[0].total_memory > 0);
    CHECK(query.devices[0].free_memory <= query.devices[0].total_memory);
}

TEST_CASE("CUDA dequantization equals the CPU reference bit for bit", "[gpu][quant]") {
    const DType types[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0, DType::Q4_1,
                           DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K,
                           DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_K};
    std::mt19937 rng(20240607);
    for (DType type : types) {
        const genie::DTypeInfo info = genie::dtype_info(type);
        const size_t n_blocks = info.block_size == 1 ? 65536 : 4096;
        const std::vector<uint8_t> bytes = genie::test::random_blocks(type, n_blocks, rng);
        const int64_t n = static_cast<int64_t>(n_blocks * info.block_size);

        // CPU reference (copied into aligned storage first).
        std::vector<uint32_t> aligned((bytes.size() + 3) / 4);
        std::memcpy(aligned.data(), bytes.data(), bytes.size());
        std::vector<float> expected(static_cast<size_t>(n));
        genie::quant::dequantize_row(type, aligned.data(), expected.data(), n);

        DeviceBuffer src(bytes.size());
        DeviceBuffer dst(expected.size() * sizeof(float));
        check(cudaMemcpy(src.ptr, bytes.data(), bytes.size(), cudaMemcpyHostToDevice), "upload");
        REQUIRE(genie::cuda::can_dequantize(type));
        genie::cuda::dequantize_rows(type, src.ptr, static_cast<float*>(dst.ptr), n, nullptr);
        check(cudaDeviceSynchronize(), "kernel");
        std::vector<float> actual(expected.size());
        check(cudaMemcpy(actual.data(), dst.ptr, actual.size() * sizeof(float), cudaMemcpyDeviceToHost), "download");

        size_t mismatches = 0, first = 0;
        for (size_t i = 0; i < actual.size(); ++i) {
            if (!genie::test::is_same_float(actual[i], expected[i]) && mismatches++ == 0) first = i;
        }
        INFO(info.name << ": " << mismatches << " of " << actual.size() << " values differ; first at " << first
                       << " (device " << actual[first] << ", cpu " << expected[first] << ")");
        CHECK(mismatches == 0);
        std::printf("gpu parity %-5s %6zu blocks, %8lld values: %s\n", std::string(info.name).c_str(), n_blocks,
                    static_cast<long long>(n), mismatches == 0 ? "bit-exact" : "MISMATCH");
    }
}

TEST_CASE("CUDA dequantize_rows rejects bad arguments", "[gpu][quant]") {
    DeviceBuffer src(64), dst(64 * sizeof(float));
    CHECK_THROWS_AS(genie::cuda::dequantize_rows(DType::Q4_0, src.ptr, static_cast<float*>(dst.ptr), 33, nullptr),
                    genie::Error);
    CHECK_THROWS_AS(genie::cuda::dequantize_rows(DType::IQ2_XXS, src.ptr, static_cast<float*>(dst.ptr), 256, nullptr),
                    genie::Error);
    CHECK_FALSE(genie::cuda::can_dequantize(DType::IQ2_XXS));
    // Zero elements is a valid no-op.
    CHECK_NOTHROW(genie::cuda::dequantize_rows(DType::Q4_K, src.ptr, static_cast<float*>(dst.ptr), 0, nullptr));
}
