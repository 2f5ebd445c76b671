// Quant formats (lib/quant): hand-built blocks with hand-derived values for every
// format, quantizer outputs derived by hand for inputs whose scales are exact,
// quantize -> dequantize error bounds on random data, and argument errors.
// Bit-exact parity with ggml itself is tested in test/python (gguf-py and libggml).
#include <catch2/catch.hpp>

#include <genie/error.hpp>

#include "quant/dequantize.hpp"
#include "quant/quant.hpp"
#include "quant/quantize.hpp"
#include "quant/scale_search.hpp"
#include "unit/quant_test_data.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace genie;
using namespace genie::quant;

namespace {

// Halves used below, by value: 0x3c00 = 1, 0x4000 = 2, 0x3800 = 0.5, 0x3400 = 0.25,
// 0xbc00 = -1, 0x0c00 = 2^-12.
constexpr uint16_t kHalfOne = 0x3c00, kHalfTwo = 0x4000, kHalfHalf = 0x3800, kHalfQuarter = 0x3400,
                   kHalfMinusOne = 0xbc00;

template <typename Block>
std::vector<float> dequantized(const Block& block) {
    std::vector<float> out(BlockTraits<Block>::elements);
    dequantize_block(block, out.data());
    return out;
}

}  // namespace

// ---- dequantization: one hand-built block per format ---------------------------

TEST_CASE("Q4_0 block dequantizes to (q - 8) * d", "[quant]") {
    BlockQ4_0 block{};
    block.d = kHalfHalf;
    block.qs[0] = 0x1f;  // element 0: low nibble 15; element 16: high nibble 1
    const auto y = dequantized(block);
    CHECK(y[0] == 3.5f);    // (15 - 8) * 0.5
    CHECK(y[16] == -3.5f);  // (1 - 8) * 0.5
    CHECK(y[1] == -4.0f);   // (0 - 8) * 0.5
}

TEST_CASE("Q4_1 block dequantizes to q * d + m", "[quant]") {
    BlockQ4_1 block{};
    block.d = kHalfQuarter;
    block.m = kHalfMinusOne;
    block.qs[3] = 0xa5;
    const auto y = dequantized(block);
    CHECK(y[3] == 0.25f);   // 5 * 0.25 - 1
    CHECK(y[19] == 1.5f);   // 10 * 0.25 - 1
    CHECK(y[0] == -1.0f);   // 0 * 0.25 - 1
}

TEST_CASE("Q5_0 block takes bit 4 from qh", "[quant]") {
    BlockQ5_0 block{};
    block.d = kHalfOne;
    block.qs[2] = 0x3c;  // element 2: 12, element 18: 3
    block.qh[0] = 0x04;  // bit 2 set (element 2), bit 18 clear
    const auto y = dequantized(block);
    CHECK(y[2] == 12.0f);   // (12 | 16) - 16
    CHECK(y[18] == -13.0f); // 3 - 16
    CHECK(y[0] == -16.0f);
}

TEST_CASE("Q5_1 block takes bit 4 from qh and adds m", "[quant]") {
    BlockQ5_1 block{};
    block.d = kHalfHalf;
    block.m = kHalfTwo;
    block.qs[15] = 0xf0;  // element 15: 0, element 31: 15
    block.qh[3] = 0x80;   // bit 31
    const auto y = dequantized(block);
    CHECK(y[31] == 17.5f);  // 31 * 0.5 + 2
    CHECK(y[15] == 2.0f);
}

TEST_CASE("Q8_0 block dequantizes to q * d", "[quant]") {
    BlockQ8_0 block{};
    block.d = kHalfTwo;
    block.qs[5] = -3;
    block.qs[31] = 127;
    const auto y = dequantized(block);
    CHECK(y[5] == -6.0f);
    CHECK(y[31] == 254.0f);
    CHECK(y[0] == 0.0f);
}

TEST_CASE("Q2_K element uses its group's 4-bit scale and min", "[quant]") {
    BlockQ2_K block{};
    block.d = kHalfOne;
    block.dmin = kHalfHalf;
    block.scales[12] = 0x23;  // group 12 (elements 192..207): scale 3, min 2
    // Element 200: half 1, run (200 % 128) / 32 = 2 -> byte 32 + 200 % 32 = 40, bits 4..5.
    block.qs[40] = 0x20;
    const auto y = dequantized(block);
    CHECK(y[200] == 5.0f);   // 1*3 * 2 - 0.5*2
    CHECK(y[201] == -1.0f);  // q = 0: -0.5*2
    CHECK(y[0] == 0.0f);     // scale and min 0
}

TEST_CASE("Q3_K element: 6-bit signed scale and the high bit from hmask", "[quant]") {
    BlockQ3_K block{};
    block.d = kHalfHalf;
    // Scale 4 = 29 (-3 after the -32 offset): low nibble 13 in scales[4], top bits 01 in scales[8] bits 2..3.
    block.scales[4] = 0x0d;
    block.scales[8] = 0x04;
    // Element 77 (group 4): 2-bit field in qs[77 % 32 = 13] at shift 2 * (77 / 32) = 4.
    block.qs[13] = 0x30;
    const auto y = dequantized(block);
    CHECK(y[77] == 1.5f);  // hmask bit clear -> q = 3 - 4 = -1; 0.5 * -3 * -1
    block.hmask[13] = 0x04;  // bit 77 / 32 = 2 set -> q = 3
    CHECK(dequantized(block)[77] == -4.5f);
    CHECK(y[0] == 0.5f * -32 * -4);  // scale 0 is 0 - 32, q = 0 - 4
}

TEST_CASE("get_scale_min_k4 unpacks the 12-byte scale layout", "[quant]") {
    uint8_t packed[12] = {};
    packed[1] = 0x40 | 33;   // scale 1 = 33, top bits (01) belong to scale 5
    packed[5] = 0x80 | 7;    // min 1 = 7, top bits (10) belong to min 5
    packed[9] = 0x52;        // scale 5 low nibble 2, min 5 low nibble 5
    uint8_t sc, m;
    get_scale_min_k4(1, packed, sc, m);
    CHECK(sc == 33);
    CHECK(m == 7);
    get_scale_min_k4(5, packed, sc, m);
    CHECK(sc == (2 | (1 << 4)));  // 18
    CHECK(m == (5 | (2 << 4)));   // 37
}

TEST_CASE("Q4_K element: d*sc * q - dmin*m", "[quant]") {
    BlockQ4_K block{};
    block.d = kHalfOne;
    block.dmin = kHalfQuarter;
    block.scales[0] = 0x40;  // top bits 01 of scale 4
    block.scales[4] = 0x80;  // top bits 10 of min 4
    block.scales[8] = 0x52;  // scale 4 = 18, min 4 = 37
    // Element 150 (group 4, even -> low nibbles) is in qs[32 * (150 / 64) + 150 % 32] = qs[86].
    block.qs[86] = 0x07;
    const auto y = dequantized(block);
    CHECK(y[150] == 116.75f);  // 18 * 7 - 0.25 * 37
    CHECK(y[151] == -9.25f);   // q = 0
}

TEST_CASE("Q5_K element adds 16 when its qh bit is set", "[quant]") {
    BlockQ5_K block{};
    block.d = kHalfOne;
    block.dmin = kHalfQuarter;
    block.scales[0] = 0x40;
    block.scales[4] = 0x80;
    block.scales[8] = 0x52;
    block.qs[86] = 0x07;
    block.qh[150 % 32] = 1 << (150 / 32);
    const auto y = dequantized(block);
    CHECK(y[150] == 404.75f);  // 18 * (7 + 16) - 9.25
    CHECK(y[151] == -9.25f);
}

TEST_CASE("Q6_K element: d * scale * (q - 32)", "[quant]") {
    BlockQ6_K block{};
    block.d = kHalfHalf;
    block.scales[12] = -5;  // group 200 / 16
    // Element 200: half 1, run 2, l = 8 -> high nibble of ql[64 + 8], bits 4..5 of qh[32 + 8].
    block.ql[72] = 0xa0;
    block.qh[40] = 0x20;
    const auto y = dequantized(block);
    CHECK(y[200] == -25.0f);  // q = (10 | 2 << 4) - 32 = 10; 0.5 * -5 * 10
    CHECK(y[0] == 0.0f);      // scale 0
}

TEST_CASE("Q8_K element: float d * q", "[quant]") {
    BlockQ8_K block{};
    block.d = 0.125f;
    block.qs[100] = -7;
    CHECK(dequantized(block)[100] == -0.875f);
}

TEST_CASE("plain types dequantize by conversion", "[quant]") {
    const uint16_t halves[] = {0x3c00, 0xc000, 0x0001, 0x7c00};
    float out[4];
    dequantize_row(DType::F16, halves, out, 4);
    CHECK(out[0] == 1.0f);
    CHECK(out[1] == -2.0f);
    CHECK(out[2] == std::ldexp(1.0f, -24));
    CHECK(std::isinf(out[3]));
    const uint16_t bfloats[] = {0x3f80, 0x4049};
    dequantize_row(DType::BF16, bfloats, out, 2);
    CHECK(out[0] == 1.0f);
    CHECK(out[1] == 3.140625f);
    const float floats[] = {1.5f, -0.0f};
    dequantize_row(DType::F32, floats, out, 2);
    CHECK(out[0] == 1.5f);
    CHECK(std::signbit(out[1]));
}

// ---- quantization: inputs whose scale comes out exact ---------------------------

TEST_CASE("nearest_int rounds half to even", "[quant]") {
    CHECK(nearest_int(2.5f) == 2);
    CHECK(nearest_int(3.5f) == 4);
    CHECK(nearest_int(-2.5f) == -2);
    CHECK(nearest_int(-0.4f) == 0);
    CHECK(nearest_int(1.6f) == 2);
    CHECK(nearest_int(-127.0f) == -127);
    CHECK(nearest_int(4194303.0f) == 4194303);
}

TEST_CASE("Q8_0 quantizes with d = amax / 127 and round-half-away", "[quant]") {
    float x[32] = {};
    x[0] = -127.0f;  // amax 127 -> d = 1, 1/d = 1
    x[1] = 2.5f;     // roundf: away from zero
    x[2] = -2.5f;
    x[3] = 0.49f;
    x[4] = 100.0f;
    BlockQ8_0 block;
    quantize_block(x, block);
    CHECK(block.d == kHalfOne);
    CHECK(block.qs[0] == -127);
    CHECK(block.qs[1] == 3);
    CHECK(block.qs[2] == -3);
    CHECK(block.qs[3] == 0);
    CHECK(block.qs[4] == 100);

    BlockQ8_1 block1;
    quantize_block(x, block1);
    CHECK(block1.d == kHalfOne);
    CHECK(block1.s == fp32_to_fp16(-127 + 3 - 3 + 0 + 100));  // sum(q) * d = -27
    CHECK(std::memcmp(block1.qs, block.qs, 32) == 0);
}

TEST_CASE("Q4_0 quantizes with d = signed max / -8 and truncation", "[quant]") {
    float x[32] = {};
    x[0] = -8.0f;  // the signed absmax: d = -8 / -8 = 1
    x[1] = 7.0f;   // 7 + 8.5 -> 15
    x[2] = 7.4f;   // 15.9 -> 15
    x[3] = -0.6f;  // 7.9 -> 7
    x[4] = 0.5f;   // 9.0 -> 9
    x[16] = 3.0f;  // 11.5 -> 11, the high nibble of qs[0]
    BlockQ4_0 block;
    quantize_block(x, block);
    CHECK(block.d == kHalfOne);
    CHECK(block.qs[0] == (0 | 11 << 4));
    CHECK(block.qs[1] == (15 | 8 << 4));
    CHECK(block.qs[2] == (15 | 8 << 4));
    CHECK(block.qs[3] == (7 | 8 << 4));
    CHECK(block.qs[4] == (9 | 8 << 4));
    CHECK(block.qs[5] == (8 | 8 << 4));  // zeros -> 8
}

TEST_CASE("Q4_1 and Q5_1 quantize with d = (max - min) / (2^bits - 1) and m = min", "[quant]") {
    float x[32];
    for (int i = 0; i < 32; ++i) x[i] = static_cast<float>(i % 16);  // min 0, max 15 -> d = 1
    x[5] = 2.5f;                                                     // 3.0 -> 3
    BlockQ4_1 q4;
    quantize_block(x, q4);
    CHECK(q4.d == kHalfOne);
    CHECK(q4.m == 0);
    CHECK(q4.qs[5] == (3 | 5 << 4));
    CHECK(q4.qs[15] == (15 | 15 << 4));

    float y[32];
    for (int i = 0; i < 32; ++i) y[i] = static_cast<float>(i) - 1.0f;  // min -1, max 30 -> d = 1, m = -1
    BlockQ5_1 q5;
    quantize_block(y, q5);
    CHECK(q5.d == kHalfOne);
    CHECK(q5.m == kHalfMinusOne);
    // Element i quantizes to trunc(i + 0.5) = i: low nibbles i & 15, bit 4 set for i >= 16.
    CHECK(q5.qs[3] == (3 | (19 & 15) << 4));
    CHECK(q5.qh[0] == 0x00);
    CHECK(q5.qh[1] == 0x00);
    CHECK(q5.qh[2] == 0xff);
    CHECK(q5.qh[3] == 0xff);
}

TEST_CASE("Q5_0 quantizes with d = signed max / -16", "[quant]") {
    float x[32] = {};
    x[0] = -16.0f;  // d = 1
    x[1] = 15.0f;   // 31.5 -> 31
    x[17] = -0.6f;  // 15.9 -> 15
    BlockQ5_0 block;
    quantize_block(x, block);
    CHECK(block.d == kHalfOne);
    CHECK(block.qs[0] == (0 | (16 & 15) << 4));   // element 16 is 0 -> q 16
    CHECK(block.qs[1] == (15 | 15 << 4));         // 31 & 15, element 17 -> 15
    // qh: bit 0 clear (q 0), bit 1 set (31), bits 2..15 set (q 16), bit 16 set, bit 17 clear.
    const uint32_t qh = block.qh[0] | block.qh[1] << 8 | block.qh[2] << 16 | static_cast<uint32_t>(block.qh[3]) << 24;
    CHECK(qh == (0xffffffffu & ~1u & ~(1u << 17)));
}

TEST_CASE("Q8_K quantizes with d = signed max / -127 and fills bsums", "[quant]") {
    std::vector<float> x(256);
    for (int i = 0; i < 256; ++i) x[i] = static_cast<float>(i % 100 - 50);
    x[7] = -127.0f;  // signed absmax -127 -> iscale = 1, d = 1
    BlockQ8_K block;
    quantize_block(x.data(), block);
    CHECK(block.d == 1.0f);
    int sum0 = 0;
    for (int i = 0; i < 256; ++i) REQUIRE(block.qs[i] == static_cast<int>(x[i]));
    for (int i = 0; i < 16; ++i) sum0 += static_cast<int>(x[i]);
    CHECK(block.bsums[0] == sum0);

    std::fill(x.begin(), x.end(), 0.0f);
    std::memset(&block, 0xAB, sizeof block);
    quantize_block(x.data(), block);
    CHECK(block.d == 0.0f);
    CHECK(std::all_of(block.bsums, block.bsums + 16, [](int16_t s) { return s == 0; }));
}

TEST_CASE("Q6_K of a constant block: every group at scale -128 and quants at the bottom", "[quant]") {
    // Each group fits x = 1 exactly with scale -1/32, q = -32. The super-block
    // scale is then (-1/32) / -128 = 2^-12 and every group scale is -128.
    std::vector<float> x(256, 1.0f);
    BlockQ6_K block;
    quantize_block(x.data(), block);
    CHECK(block.d == 0x0c00);  // 2^-12
    for (int8_t s : block.scales) CHECK(s == -128);
    CHECK(std::all_of(block.ql, block.ql + 128, [](uint8_t b) { return b == 0; }));
    CHECK(std::all_of(block.qh, block.qh + 64, [](uint8_t b) { return b == 0; }));
    const auto y = dequantized(block);
    CHECK(std::all_of(y.begin(), y.end(), [](float v) { return v == 1.0f; }));  // 2^-12 * -128 * -32
}

TEST_CASE("Q4_K and Q5_K of a constant positive block use the top quant", "[quant]") {
    // min > 0 is clamped to 0, so each group's fit is scale = 1/nmax, L = nmax,
    // min 0; the 6-bit group scales are all 63 and the mins all 0.
    std::vector<float> x(256, 1.0f);
    BlockQ4_K q4;
    quantize_block(x.data(), q4);
    CHECK(q4.d == fp32_to_fp16((1.0f / 15) / 63.f));
    CHECK(q4.dmin == 0);
    for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        get_scale_min_k4(j, q4.scales, sc, m);
        CHECK(sc == 63);
        CHECK(m == 0);
    }
    CHECK(std::all_of(q4.qs, q4.qs + 128, [](uint8_t b) { return b == 0xff; }));

    BlockQ5_K q5;
    quantize_block(x.data(), q5);
    CHECK(q5.d == fp32_to_fp16((1.0f / 31) / 63.f));
    CHECK(std::all_of(q5.qs, q5.qs + 128, [](uint8_t b) { return b == 0xff; }));
    CHECK(std::all_of(q5.qh, q5.qh + 32, [](uint8_t b) { return b == 0xff; }));
}

TEST_CASE("an all-zero block quantizes to zero scales and zero-valued quants", "[quant]") {
    const std::vector<float> zeros(256, 0.0f);
    for (DType type : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q8_1, DType::Q2_K,
                       DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_K}) {
        const DTypeInfo info = dtype_info(type);
        std::vector<uint8_t> expected(info.block_bytes, 0);
        if (type == DType::Q4_0) {
            // d = 0 / -8 = -0 (half 0x8000); q = trunc(0 + 8.5) = 8 in every nibble.
            expected[1] = 0x80;
            std::fill(expected.begin() + 2, expected.end(), uint8_t{0x88});
        } else if (type == DType::Q5_0) {
            // d = 0 / -16 = -0; q = trunc(0 + 16.5) = 16: nibbles 0, every qh bit set.
            expected[1] = 0x80;
            std::fill(expected.begin() + 2, expected.begin() + 6, uint8_t{0xff});
        }
        std::vector<uint8_t> bytes(row_bytes(type, 256), 0x5a);
        quantize_row(type, zeros.data(), bytes.data(), 256);
        for (size_t b = 0; b < bytes.size(); b += info.block_bytes) {
            INFO(info.name << " block at byte " << b);
            CHECK(std::equal(expected.begin(), expected.end(), bytes.begin() + static_cast<std::ptrdiff_t>(b)));
        }
    }
}

// ---- round trips on random data --------------------------------------------------

TEST_CASE("quantize -> dequantize error stays within the format's resolution", "[quant]") {
    // Bound on the RMS error of a block divided by the block's value range
    // (max - min). An ideal uniform b-bit quantizer gives 1 / ((2^b - 1) * sqrt(12));
    // the bounds leave room for the quantized scales and the k-quant groups.
    struct Case {
        DType type;
        double max_relative_rms;
    };
    // Observed worst cases with this seed are about 2/3 of these bounds.
    const Case cases[] = {
        {DType::F32, 0.0},     {DType::F16, 1.2e-4},  {DType::BF16, 1e-3},   {DType::Q8_0, 2.8e-3},
        {DType::Q8_K, 2.4e-3}, {DType::Q6_K, 5.5e-3}, {DType::Q5_0, 2e-2},   {DType::Q5_1, 1.6e-2},
        {DType::Q5_K, 1.1e-2}, {DType::Q4_0, 4.4e-2}, {DType::Q4_1, 3.4e-2}, {DType::Q4_K, 2.2e-2},
        {DType::Q3_K, 4.8e-2}, {DType::Q2_K, 9e-2},
    };
    std::mt19937 rng(1234);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> magnitude(-3.0f, 3.0f);
    for (const Case& c : cases) {
        const int64_t n = 256 * 64;
        std::vector<float> x(static_cast<size_t>(n));
        // 256-element stretches with their own scale (10^-3 .. 10^3), as tensor rows have.
        for (int64_t s = 0; s < n; s += 256) {
            const float scale = std::pow(10.0f, magnitude(rng));
            for (int64_t i = s; i < s + 256; ++i) x[static_cast<size_t>(i)] = normal(rng) * scale;
        }
        std::vector<uint64_t> aligned((row_bytes(c.type, n) + 7) / 8);
        std::vector<float> y(static_cast<size_t>(n));
        quantize_row(c.type, x.data(), aligned.data(), n);
        dequantize_row(c.type, aligned.data(), y.data(), n);

        const int block = static_cast<int>(dtype_info(c.type).block_size == 1 ? 32 : dtype_info(c.type).block_size);
        double worst = 0;
        for (int64_t b = 0; b < n; b += block) {
            const auto [lo, hi] = std::minmax_element(x.begin() + b, x.begin() + b + block);
            double squared = 0;
            for (int64_t i = b; i < b + block; ++i) {
                const double e = static_cast<double>(x[static_cast<size_t>(i)]) - y[static_cast<size_t>(i)];
                squared += e * e;
            }
            const double rms = std::sqrt(squared / block);
            worst = std::max(worst, rms / (static_cast<double>(*hi) - *lo));
        }
        INFO(dtype_name(c.type) << ": worst relative RMS error " << worst);
        CHECK(worst <= c.max_relative_rms);
    }
}

TEST_CASE("Q8_1 stores the same quants as Q8_0 and s = d * sum(q)", "[quant]") {
    std::mt19937 rng(99);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    std::vector<float> x(32 * 16);
    for (float& v : x) v = normal(rng);
    std::vector<BlockQ8_1> q1(16);
    std::vector<BlockQ8_0> q0(16);
    quantize_row(DType::Q8_1, x.data(), q1.data(), static_cast<int64_t>(x.size()));
    quantize_row(DType::Q8_0, x.data(), q0.data(), static_cast<int64_t>(x.size()));
    for (size_t b = 0; b < q1.size(); ++b) {
        CHECK(q1[b].d == q0[b].d);
        CHECK(std::memcmp(q1[b].qs, q0[b].qs, 32) == 0);
        int sum = 0;
        for (int8_t q : q1[b].qs) sum += q;
        // s is rounded from the unrounded float d, so compare against that rounding.
        const float d = fp16_to_fp32(q1[b].d);
        CHECK(std::fabs(fp16_to_fp32(q1[b].s) - static_cast<float>(sum) * d) <= std::fabs(sum * d) * 2e-3f + 1e-6f);
    }
}

TEST_CASE("per-block and per-element dequantization agree on random blocks", "[quant]") {
    std::mt19937 rng(7);
    for (DType type : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K,
                       DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_K}) {
        const DTypeInfo info = dtype_info(type);
        const std::vector<uint8_t> bytes = test::random_blocks(type, 64, rng);
        std::vector<uint32_t> aligned((bytes.size() + 3) / 4);
        std::memcpy(aligned.data(), bytes.data(), bytes.size());
        const int64_t n = 64 * info.block_size;
        std::vector<float> row(static_cast<size_t>(n));
        dequantize_row(type, aligned.data(), row.data(), n);
        size_t mismatches = 0;
        visit_dequantizable(type, [&](auto tag) {
            using Block = typename decltype(tag)::type;
            const auto* blocks = reinterpret_cast<const Block*>(aligned.data());
            for (int64_t i = 0; i < n; ++i) {
                const float v = dequantize_value(blocks[i / info.block_size], static_cast<int>(i % info.block_size));
                if (!test::is_same_float(v, row[static_cast<size_t>(i)])) ++mismatches;
            }
        });
        INFO(info.name);
        CHECK(mismatches == 0);
    }
}

// ---- golden hashes from ggml --------------------------------------------------------

namespace {

// A 32-bit integer hash (multiply, xor-shift, multiply).
uint32_t mix(uint32_t i) {
    const uint32_t h = i * 2654435761u;
    return (h ^ (h >> 15)) * 2246822519u;
}

// 128 super-blocks of inputs built from float bit patterns and float products, so
// numpy can build the same values (test/python/test_quant_ggml_parity.py does,
// and re-derives the hashes below from ggml's own code). Super-block b has scale
// 2^(b % 11 - 5) and kind b % 4: 0 random floats, 1 small integers times one
// float (many exact ties), 2 all positive, 3 one outlier 64x.
std::vector<float> golden_input() {
    std::vector<float> x(128 * 256);
    for (uint32_t i = 0; i < x.size(); ++i) {
        const uint32_t h = mix(i);
        const uint32_t block = i / 256;
        const uint32_t kind = block % 4;
        const int e = static_cast<int>(block % 11) - 5;
        const uint32_t sign = kind == 2 ? 0 : h >> 31;
        const uint32_t exponent = static_cast<uint32_t>(125 + static_cast<int>((h >> 23) & 3) + e);
        float v = f32_from_bits(sign << 31 | exponent << 23 | (h & 0x7fffff));
        if (kind == 1) {
            const int k = static_cast<int>((h >> 8) % 17) - 8;
            const float scale = f32_from_bits(static_cast<uint32_t>(120 + e) << 23 | (mix(block + 7919) & 0x7fffff));
            v = static_cast<float>(k) * scale;
        }
        if (kind == 3 && i % 256 == 0) v *= 64.0f;
        x[i] = v;
    }
    return x;
}

uint64_t fnv1a(const void* data, size_t size) {
    uint64_t hash = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < size; ++i) {
        hash ^= static_cast<const uint8_t*>(data)[i];
        hash *= 0x100000001b3ull;
    }
    return hash;
}

}  // namespace

TEST_CASE("quantized bytes and dequantized floats hash like ggml's for the golden input", "[quant]") {
    // FNV-1a of ggml's quantize_row_*_ref output and of dequantize_row_* applied
    // to it (0: ggml has no dequantizer). A mismatch here while the unit tests
    // above pass usually means the compiler fused a*b+c into an FMA: build with
    // -ffp-contract=off (see lib/quant/exact_math.hpp).
    struct Golden {
        DType type;
        uint64_t quantized;
        uint64_t dequantized;
    };
    // golden-hashes-begin
    const Golden table[] = {
        {DType::Q4_0, 0xec8f053b0f8eef19ull, 0xbc5d9cd1b83bc9a7ull},
        {DType::Q4_1, 0x1bbd5dd448c2887aull, 0x2cae4244d2402f25ull},
        {DType::Q5_0, 0x7342fae7c3ad8ecfull, 0x4b83c5d453797464ull},
        {DType::Q5_1, 0xce243e3ef091ea4full, 0xa4715495aa511d53ull},
        {DType::Q8_0, 0x95aae05a41bae053ull, 0xc7347d1b6c372623ull},
        {DType::Q8_1, 0x34faa252355e5c85ull, 0},
        {DType::Q2_K, 0xd99b4a390378f299ull, 0x1be6b88da0b9384dull},
        {DType::Q3_K, 0xef8e916013caeb83ull, 0x19a154bd4dac7fd9ull},
        {DType::Q4_K, 0x5ec13ce739cee8f1ull, 0xde9c0583cc9cdc49ull},
        {DType::Q5_K, 0x66b15999e7922acdull, 0x9158de3287c9c577ull},
        {DType::Q6_K, 0x193293a7ffaecd2full, 0x5f55d11703e5f416ull},
        {DType::Q8_K, 0xe68024d0e257dbcaull, 0x21e27fc3e3b4bbcdull},
    };
    // golden-hashes-end
    const std::vector<float> x = golden_input();
    const int64_t n = static_cast<int64_t>(x.size());
    for (const Golden& golden : table) {
        INFO(dtype_name(golden.type));
        const size_t size = row_bytes(golden.type, n);
        std::vector<uint64_t> bytes((size + 7) / 8);
        quantize_row(golden.type, x.data(), bytes.data(), n);
        CHECK(fnv1a(bytes.data(), size) == golden.quantized);
        if (golden.dequantized != 0) {
            std::vector<float> y(x.size());
            dequantize_row(golden.type, bytes.data(), y.data(), n);
            CHECK(fnv1a(y.data(), y.size() * sizeof(float)) == golden.dequantized);
        }
    }
}

// ---- the row API's contract ------------------------------------------------------

TEST_CASE("supported type sets", "[quant]") {
    for (DType type : {DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                       DType::Q8_0, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_K}) {
        CHECK(can_dequantize(type));
        CHECK(can_quantize(type));
    }
    CHECK(can_quantize(DType::Q8_1));
    CHECK_FALSE(can_dequantize(DType::Q8_1));  // ggml has no Q8_1 dequantizer either
    for (DType type : {DType::IQ2_XXS, DType::IQ4_NL, DType::IQ4_XS, DType::TQ1_0, DType::MXFP4, DType::I8,
                       DType::I32, DType::F64}) {
        CHECK_FALSE(can_dequantize(type));
        CHECK_FALSE(can_quantize(type));
    }
}

TEST_CASE("row_bytes follows the block layout", "[quant]") {
    CHECK(row_bytes(DType::F32, 10) == 40);
    CHECK(row_bytes(DType::BF16, 3) == 6);
    CHECK(row_bytes(DType::Q4_0, 64) == 36);
    CHECK(row_bytes(DType::Q4_K, 512) == 288);
    CHECK(row_bytes(DType::Q6_K, 256) == 210);
    CHECK(row_bytes(DType::Q8_K, 0) == 0);
    CHECK(row_bytes(DType::IQ2_XXS, 256) == 66);  // layout known even without a dequantizer
}

namespace {

// Runs `call`, expecting a genie::Error with `code` whose message contains every
// string in `parts`.
template <typename Call>
void require_error(Call&& call, ErrorCode code, std::initializer_list<std::string> parts) {
    try {
        call();
        FAIL("no exception");
    } catch (const Error& e) {
        INFO(e.what());
        CHECK(e.code() == code);
        for (const std::string& part : parts) CHECK(std::string(e.what()).find(part) != std::string::npos);
    }
}

}  // namespace

TEST_CASE("bad row lengths and unsupported types are reported clearly", "[quant]") {
    float values[512] = {};
    uint8_t bytes[2048] = {};
    require_error([&] { dequantize_row(DType::Q4_0, bytes, values, 33); }, ErrorCode::InvalidArgument,
                  {"Q4_0", "33", "32"});
    require_error([&] { quantize_row(DType::Q4_K, values, bytes, 255); }, ErrorCode::InvalidArgument,
                  {"Q4_K", "255", "256"});
    require_error([&] { quantize_row(DType::Q8_0, values, bytes, -32); }, ErrorCode::InvalidArgument, {"Q8_0", "-32"});
    require_error([&] { row_bytes(DType::Q6_K, 100); }, ErrorCode::InvalidArgument, {"Q6_K", "100"});
    require_error([&] { dequantize_row(DType::IQ2_XXS, bytes, values, 256); }, ErrorCode::Unsupported, {"IQ2_XXS"});
    require_error([&] { quantize_row(DType::IQ4_NL, values, bytes, 32); }, ErrorCode::Unsupported, {"IQ4_NL"});
    require_error([&] { dequantize_row(DType::Q8_1, bytes, values, 32); }, ErrorCode::Unsupported, {"Q8_1"});
    require_error([&] { row_bytes(static_cast<DType>(99), 1); }, ErrorCode::Unsupported, {"99"});
    require_error([&] { dequantize_row(static_cast<DType>(99), bytes, values, 1); }, ErrorCode::Unsupported, {"99"});
    // Zero elements is valid and writes nothing.
    CHECK_NOTHROW(dequantize_row(DType::Q4_K, bytes, values, 0));
}
