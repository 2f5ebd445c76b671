// The CUDA decode mat-vec's int8 dot products (cuda/dot_units.hpp, GENIE_HD), run on the
// host: for every format with a dp4a path, the sum of dot_unit() over a row equals the dot
// product of the dequantized weight row with the dequantized Q8_1 activations (up to float
// rounding). This checks the bit unpacking (nibbles, fifth bits, Q6_K interleave, scales)
// without a GPU; test/gpu runs the same functions on the device.
#include "../../cuda/dot_units.hpp"

#include "quant/dequantize.hpp"
#include "quant/quant.hpp"

#include <genie/types.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

using namespace genie;

namespace {

template <class Block>
void check_type(DType type, std::mt19937& rng) {
    constexpr int64_t n = 1024;
    constexpr int elements = static_cast<int>(quant::BlockTraits<Block>::elements);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    for (int trial = 0; trial < 20; ++trial) {
        std::vector<float> w(n), x(n);
        for (float& v : w) v = dist(rng) * (trial % 3 == 0 ? 0.01f : 1.0f);
        for (float& v : x) v = dist(rng) * (trial % 4 == 0 ? 100.0f : 1.0f);
        std::vector<Block> wq(n / elements);
        std::vector<quant::BlockQ8_1> xq(n / 32);
        quant::quantize_row(type, w.data(), wq.data(), n);
        quant::quantize_row(DType::Q8_1, x.data(), xq.data(), n);
        std::vector<float> wd(n), xd(n);
        quant::dequantize_row(type, wq.data(), wd.data(), n);
        for (int64_t b = 0; b < n / 32; ++b)
            for (int i = 0; i < 32; ++i)
                xd[static_cast<size_t>(b * 32 + i)] = fp16_to_fp32(xq[static_cast<size_t>(b)].d) * xq[static_cast<size_t>(b)].qs[i];
        double exact = 0, mag = 0;
        for (int64_t i = 0; i < n; ++i) {
            exact += static_cast<double>(wd[static_cast<size_t>(i)]) * xd[static_cast<size_t>(i)];
            mag += std::fabs(static_cast<double>(wd[static_cast<size_t>(i)]) * xd[static_cast<size_t>(i)]);
        }
        constexpr int units = elements / 32;
        double got = 0;
        for (int64_t u = 0; u < n / 32; ++u)
            got += cuda::kernels::dot_unit(wq[static_cast<size_t>(u / units)], static_cast<int>(u % units), xq[static_cast<size_t>(u)]);
        INFO(dtype_name(type) << " trial " << trial << ": dot_unit sum " << got << ", reference " << exact);
        // Q4_1/Q5_1 use the F16-rounded s = d * sum(q) of the activation block, as the CPU does.
        const double tol = (type == DType::Q4_1 || type == DType::Q5_1 ? 2e-3 : 1e-5) * mag + 1e-6;
        CHECK(std::fabs(got - exact) <= tol);
    }
}

}  // namespace

TEST_CASE("CUDA dp4a dot units equal the reference dot product for every format", "[cuda][quant]") {
    std::mt19937 rng(42);
    check_type<quant::BlockQ4_0>(DType::Q4_0, rng);
    check_type<quant::BlockQ4_1>(DType::Q4_1, rng);
    check_type<quant::BlockQ5_0>(DType::Q5_0, rng);
    check_type<quant::BlockQ5_1>(DType::Q5_1, rng);
    check_type<quant::BlockQ8_0>(DType::Q8_0, rng);
    check_type<quant::BlockQ4_K>(DType::Q4_K, rng);
    check_type<quant::BlockQ5_K>(DType::Q5_K, rng);
    check_type<quant::BlockQ6_K>(DType::Q6_K, rng);
}

TEST_CASE("CUDA dp4a and vsub4 host fallbacks", "[cuda][quant]") {
    CHECK(cuda::kernels::dp4a(0x01020304, 0x01010101, 10) == 10 + 1 + 2 + 3 + 4);
    CHECK(cuda::kernels::dp4a(static_cast<int>(0xFF7F8001u), 0x02020202, 0) == 2 * (-1 + 127 - 128 + 1));
    CHECK(cuda::kernels::vsub4(0x0F000810, 0x08080808) == static_cast<int>(0x07F80008u));
}
