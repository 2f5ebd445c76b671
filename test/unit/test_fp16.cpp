// fp16 / bf16 conversions (core/fp16.hpp): exhaustive over all 16-bit patterns,
// round-to-nearest-even at the tie points, overflow, subnormals, NaN and inf.
#include <catch2/catch.hpp>

#include "core/fp16.hpp"

#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <vector>

using namespace genie;

namespace {

// Independent decoding of IEEE binary16 with ldexp (no bit tricks).
double half_value(uint16_t h) {
    const int sign = (h & 0x8000) ? -1 : 1;
    const int exponent = (h >> 10) & 0x1f;
    const int mantissa = h & 0x3ff;
    if (exponent == 0) return sign * std::ldexp(mantissa, -24);
    if (exponent == 31) return mantissa ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
    return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

bool is_nan_half(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }

}  // namespace

TEST_CASE("every half decodes to its exact value and round-trips", "[fp16]") {
    for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
        const uint16_t h = static_cast<uint16_t>(bits);
        const float f = fp16_to_fp32(h);
        if (is_nan_half(h)) {
            REQUIRE(std::isnan(f));
            REQUIRE(std::signbit(f) == ((h & 0x8000) != 0));
            // A NaN stays NaN; a signalling one comes back quiet (bit 9 set).
            REQUIRE(fp32_to_fp16(f) == (h | 0x0200));
            continue;
        }
        INFO("half bits 0x" << std::hex << bits);
        REQUIRE(static_cast<double>(f) == half_value(h));
        REQUIRE(std::signbit(f) == ((h & 0x8000) != 0));  // -0 stays -0
        REQUIRE(fp32_to_fp16(f) == h);
    }
}

TEST_CASE("fp32_to_fp16 rounds to nearest with ties to even", "[fp16]") {
    // 1 + 2^-11 is halfway between 1 (0x3c00, even) and 1 + 2^-10 (0x3c01).
    CHECK(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);
    // 1 + 3*2^-11 is halfway between 0x3c01 and 0x3c02 (even).
    CHECK(fp32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);
    // Just past the tie rounds up.
    CHECK(fp32_to_fp16(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)) == 0x3c01);
    CHECK(fp32_to_fp16(-(1.0f + 3 * std::ldexp(1.0f, -11))) == 0xbc02);
    // Carry out of the mantissa bumps the exponent: 2 - 2^-12 -> 2.0 (0x4000).
    CHECK(fp32_to_fp16(2.0f - std::ldexp(1.0f, -12)) == 0x4000);

    // Subnormal results (units of 2^-24).
    CHECK(fp32_to_fp16(std::ldexp(1.0f, -24)) == 0x0001);
    CHECK(fp32_to_fp16(std::ldexp(1.0f, -25)) == 0x0000);                                  // tie -> even 0
    CHECK(fp32_to_fp16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)) == 0x0001);           // above the tie
    CHECK(fp32_to_fp16(3 * std::ldexp(1.0f, -25)) == 0x0002);                              // 1.5 units -> 2
    CHECK(fp32_to_fp16(5 * std::ldexp(1.0f, -25)) == 0x0002);                              // 2.5 units -> 2
    CHECK(fp32_to_fp16(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -25)) == 0x0400);          // rounds up to min normal
    CHECK(fp32_to_fp16(std::ldexp(1.0f, -30)) == 0x0000);
    CHECK(fp32_to_fp16(-std::ldexp(1.0f, -30)) == 0x8000);
    CHECK(fp32_to_fp16(std::numeric_limits<float>::denorm_min()) == 0x0000);

    // Largest finite half is 65504; 65520 is the tie with 65536, which is inf.
    CHECK(fp32_to_fp16(65504.0f) == 0x7bff);
    CHECK(fp32_to_fp16(65519.996f) == 0x7bff);
    CHECK(fp32_to_fp16(65520.0f) == 0x7c00);
    CHECK(fp32_to_fp16(-1e30f) == 0xfc00);
    CHECK(fp32_to_fp16(INFINITY) == 0x7c00);
    CHECK(fp32_to_fp16(-INFINITY) == 0xfc00);
    CHECK(is_nan_half(fp32_to_fp16(std::numeric_limits<float>::quiet_NaN())));
    CHECK(is_nan_half(fp32_to_fp16(f32_from_bits(0x7f800001u))));  // smallest-payload NaN stays NaN
}

// The compiler's half type as an oracle: _Float16 (g++ 12 has it in C++ on x86 only), or
// ARM's __fp16 on aarch64 (IEEE binary16, converted by the fcvt instruction).
#if defined(__aarch64__)
#define GENIE_HALF_ORACLE __fp16
#elif defined(__FLT16_MAX__) && !defined(__CUDACC__)
#define GENIE_HALF_ORACLE _Float16
#endif
#if defined(GENIE_HALF_ORACLE)
TEST_CASE("fp32_to_fp16 agrees with the compiler's _Float16 conversion", "[fp16]") {
    // g++ converts float -> _Float16 with correct IEEE rounding: an independent
    // oracle. Walk the float bit patterns with a stride coprime to 2^32.
    size_t checked = 0;
    for (uint64_t bits = 0; bits <= 0xffffffffull; bits += 65521) {
        const float f = f32_from_bits(static_cast<uint32_t>(bits));
        if (std::isnan(f)) continue;
        const GENIE_HALF_ORACLE reference = static_cast<GENIE_HALF_ORACLE>(f);
        uint16_t expected;
        std::memcpy(&expected, &reference, 2);
        INFO("float bits 0x" << std::hex << bits);
        REQUIRE(fp32_to_fp16(f) == expected);
        ++checked;
    }
    CHECK(checked > 60000);
}
#endif

TEST_CASE("every bf16 decodes exactly and round-trips", "[fp16][bf16]") {
    for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
        const uint16_t b = static_cast<uint16_t>(bits);
        const float f = bf16_to_fp32(b);
        REQUIRE(f32_bits(f) == bits << 16);
        if (std::isnan(f))
            REQUIRE(fp32_to_bf16(f) == (b | 0x0040));  // quieted like ggml_compute_fp32_to_bf16
        else
            REQUIRE(fp32_to_bf16(f) == b);
    }
}

TEST_CASE("fp32_to_bf16 rounds to nearest even and keeps NaN a quiet NaN", "[fp16][bf16]") {
    CHECK(fp32_to_bf16(1.0f) == 0x3f80);
    CHECK(fp32_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);      // tie -> even
    CHECK(fp32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);  // tie -> even (up)
    CHECK(fp32_to_bf16(std::nextafter(1.0f + std::ldexp(1.0f, -8), 2.0f)) == 0x3f81);
    CHECK(fp32_to_bf16(3.14159265f) == 0x4049);
    CHECK(fp32_to_bf16(-2.0f) == 0xc000);
    CHECK(fp32_to_bf16(std::numeric_limits<float>::max()) == 0x7f80);  // rounds up to inf, as in ggml
    CHECK(fp32_to_bf16(INFINITY) == 0x7f80);
    CHECK(fp32_to_bf16(-INFINITY) == 0xff80);
    CHECK(fp32_to_bf16(f32_from_bits(0x7f800001u)) == 0x7fc0);  // signalling NaN -> quiet
    CHECK(fp32_to_bf16(f32_from_bits(0xffc12345u)) == 0xffc1);
    CHECK(fp32_to_bf16(std::numeric_limits<float>::denorm_min()) == 0x0000);
}

TEST_CASE("row conversions apply the scalar conversion to each element", "[fp16]") {
    const std::vector<float> values = {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 1e-8f, 3.14159265f, INFINITY};
    std::vector<uint16_t> halves(values.size()), bfloats(values.size());
    std::vector<float> back(values.size());
    fp32_to_fp16_row(values.data(), halves.data(), values.size());
    fp32_to_bf16_row(values.data(), bfloats.data(), values.size());
    for (size_t i = 0; i < values.size(); ++i) {
        CHECK(halves[i] == fp32_to_fp16(values[i]));
        CHECK(bfloats[i] == fp32_to_bf16(values[i]));
    }
    fp16_to_fp32_row(halves.data(), back.data(), halves.size());
    for (size_t i = 0; i < values.size(); ++i) CHECK(f32_bits(back[i]) == f32_bits(fp16_to_fp32(halves[i])));
    bf16_to_fp32_row(bfloats.data(), back.data(), bfloats.size());
    for (size_t i = 0; i < values.size(); ++i) CHECK(f32_bits(back[i]) == f32_bits(bf16_to_fp32(bfloats[i])));
}
