// backend/cpu/simd_math: the vectorised expf (ggml's algorithm) against std::exp, SiLU
// against its definition, and the P·V register tiles against the axpy chain they replace
// (same FMAs in the same order: bit-identical).
#include "backend/cpu/kernels/kernels.hpp"
#include "backend/cpu/simd_math.hpp"
#include "core/fp16.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <cstring>
#include <random>
#include <vector>

using namespace genie;

namespace {

int64_t ulp_distance(float a, float b) {
    int32_t ia, ib;
    std::memcpy(&ia, &a, 4);
    std::memcpy(&ib, &b, 4);
    if (ia < 0) ia = INT32_MIN - ia;
    if (ib < 0) ib = INT32_MIN - ib;
    return std::llabs(static_cast<int64_t>(ia) - ib);
}

/// ggml_v_expf's algorithm for one float, with std::fma where the SIMD code fuses: the x86
/// (8 lanes) and NEON (4 lanes) variants must both equal it bit for bit, so genie computes
/// the same exponentials on both, as ggml does on each.
float expf_ggml_algorithm(float x) {
    auto bits = [](uint32_t u) {
        float f;
        std::memcpy(&f, &u, 4);
        return f;
    };
    const float r = 0x1.8p23f;
    const float z = std::fma(x, 0x1.715476p+0f, r);
    const float n = z - r;
    const float b = std::fma(-n, 0x1.7f7d1cp-20f, std::fma(-n, 0x1.62e4p-1f, x));
    uint32_t zi;
    std::memcpy(&zi, &z, 4);
    const uint32_t e = zi << 23;
    const float k = bits(e + 0x3f800000u);
    const float u = b * b;
    const float j = std::fma(std::fma(std::fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, std::fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)),
                             u, 0x1.ffffecp-1f * b);
    if (!(std::fabs(n) > 126.0f)) return std::fma(j, k, k);
    const uint32_t g = n <= 0.0f ? 0x82000000u : 0u;
    const float s1 = bits(g + 0x7f000000u), s2 = bits(e - g);
    if (std::fabs(n) > 192.0f) return s1 * s1;
    return std::fma(s2, j, s2) * s1;
}

std::vector<const cpu::MathFns*> all_math() { return cpu::available_math(); }

}  // namespace

TEST_CASE("simd math: softmax exp is within 2 ulp of std::exp and sums in double", "[simd_math]") {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-100.0f, 10.0f);
    for (const cpu::MathFns* m : all_math()) {
        INFO(m->isa);
        for (int64_t n : {1, 7, 8, 9, 64, 1001}) {
            std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
            for (auto& v : x) v = dist(rng);
            x[0] = 0.0f;
            const float scale = n % 2 ? 1.0f : 0.0883883f;  // scaled on the fly, rounded before the subtraction
            const float max = *std::max_element(x.begin(), x.end()) * scale;
            const double sum = m->softmax_exp(n, y.data(), x.data(), scale, max);
            double want_sum = 0.0;
            for (int64_t i = 0; i < n; ++i) {
                const float scaled = x[static_cast<size_t>(i)] * scale;
                const float want = std::exp(scaled - max);
                REQUIRE(ulp_distance(y[static_cast<size_t>(i)], want) <= 2);
                want_sum += static_cast<double>(y[static_cast<size_t>(i)]);
            }
            REQUIRE(sum == Approx(want_sum).epsilon(1e-6));  // SIMD: 8 (AVX2) or 4 (NEON) lanes summed in float first, as ggml
        }
        // Large negative arguments underflow to 0 like expf, never to garbage.
        std::vector<float> x{0.0f, -87.0f, -100.0f, -104.0f, -150.0f, -1e30f, -87.0f, -50.0f}, y(8);
        m->softmax_exp(8, y.data(), x.data(), 1.0f, 0.0f);
        for (size_t i = 0; i < x.size(); ++i) REQUIRE(ulp_distance(y[i], std::exp(x[i])) <= 2);
        // In place (attention's scores become their exponentials).
        std::vector<float> z = x;
        m->softmax_exp(8, z.data(), z.data(), 1.0f, 0.0f);
        REQUIRE(std::memcmp(z.data(), y.data(), y.size() * sizeof(float)) == 0);
    }
}

TEST_CASE("simd math: swiglu equals silu(g) * u within 4 ulp", "[simd_math]") {
    std::mt19937 rng(8);
    std::uniform_real_distribution<float> dist(-20.0f, 20.0f);
    for (const cpu::MathFns* m : all_math()) {
        INFO(m->isa);
        const int64_t n = 517;
        std::vector<float> g(n), u(n), out(n);
        for (auto& v : g) v = dist(rng);
        for (auto& v : u) v = dist(rng);
        m->swiglu(n, g.data(), u.data(), out.data());
        for (int64_t i = 0; i < n; ++i) {
            const float want = g[static_cast<size_t>(i)] / (1.0f + std::exp(-g[static_cast<size_t>(i)])) * u[static_cast<size_t>(i)];
            REQUIRE(ulp_distance(out[static_cast<size_t>(i)], want) <= 4);
        }
        m->swiglu(n, g.data(), u.data(), g.data());  // in place
        REQUIRE(std::memcmp(g.data(), out.data(), out.size() * sizeof(float)) == 0);
    }
}

TEST_CASE("simd math: geglu equals ggml's F16-table GELU times u, bit for bit, in every variant", "[simd_math]") {
    // Every F16 input value (so every table entry), values past +-10, and random floats
    // (which round to F16 first, ties included).
    std::vector<float> g;
    for (uint32_t h = 0; h < (1u << 16); ++h) {
        const float f = fp16_to_fp32(static_cast<uint16_t>(h));
        if (std::isfinite(f)) g.push_back(f);
    }
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> dist(-14.0f, 14.0f);
    for (int i = 0; i < 4099; ++i) g.push_back(dist(rng));
    for (float f : {-10.0f, 10.0f, -10.000001f, 9.999999f, 0.0f, -0.0f}) g.push_back(f);
    std::vector<float> u(g.size());
    for (auto& v : u) v = dist(rng);
    // The definition, as ggml_vec_geglu_f32 with GGML_GELU_FP16 computes it.
    auto want = [](float x, float up) {
        if (x <= -10.0f) return 0.0f;
        if (x >= 10.0f) return x * up;
        const float xh = fp16_to_fp32(fp32_to_fp16(x));
        const float gelu = 0.5f * xh * (1.0f + std::tanh(0.79788456080286535587989211986876f * xh * (1.0f + 0.044715f * xh * xh)));
        return fp16_to_fp32(fp32_to_fp16(gelu)) * up;
    };
    for (const cpu::MathFns* m : all_math()) {
        INFO(m->isa);
        const auto n = static_cast<int64_t>(g.size());
        std::vector<float> out(g.size());
        m->geglu(n, g.data(), u.data(), out.data());
        size_t wrong = 0;
        for (size_t i = 0; i < g.size(); ++i) {
            const float w = want(g[i], u[i]);
            wrong += std::memcmp(&out[i], &w, sizeof w) != 0;
        }
        CHECK(wrong == 0);
        std::vector<float> in_place = g;
        m->geglu(n, in_place.data(), u.data(), in_place.data());
        REQUIRE(std::memcmp(in_place.data(), out.data(), out.size() * sizeof(float)) == 0);
    }
}

TEST_CASE("simd math: sum_squares is the double sum of float squares, and RMSNorm's float mean equals the sequential chain's", "[simd_math]") {
    std::mt19937 rng(10);
    std::normal_distribution<float> dist(0.0f, 3.0f);
    for (const cpu::MathFns* m : all_math()) {
        INFO(m->isa);
        for (int64_t n : {0, 1, 7, 8, 15, 16, 17, 128, 1000, 1024, 3072, 4099}) {
            CAPTURE(n);
            for (int trial = 0; trial < 50; ++trial) {
                std::vector<float> x(static_cast<size_t>(n));
                for (auto& v : x) v = dist(rng) * (trial % 5 == 0 ? 1e-3f : 1.0f);
                if (n > 3 && trial % 7 == 0) x[static_cast<size_t>(n / 2)] = 4e3f;  // one large outlier
                double chain = 0.0;
                for (float v : x) chain += static_cast<double>(v * v);
                const double got = m->sum_squares(n, x.data());
                REQUIRE(std::fabs(got - chain) <= 1e-14 * chain);
                // what rms_norm keeps of it: the mean as float
                REQUIRE(static_cast<float>(got / static_cast<double>(n ? n : 1)) == static_cast<float>(chain / static_cast<double>(n ? n : 1)));
            }
        }
    }
}

TEST_CASE("simd math: the SIMD exp is ggml's algorithm bit for bit (x86 and NEON alike)", "[simd_math]") {
    int simd = 0;
    for (const cpu::MathFns* m : all_math()) {
        if (std::strcmp(m->isa, "scalar") == 0) continue;
        ++simd;
        INFO(m->isa);
        std::mt19937 rng(9);
        std::uniform_real_distribution<float> dist(-110.0f, 90.0f);
        std::vector<float> x(4096);
        for (auto& v : x) v = dist(rng);
        // the special paths: |n| > 126 (subnormal results and overflow) and |n| > 192
        const float edge[] = {-87.4f, -88.0f, -95.0f, -103.9f, -104.0f, -120.0f, -140.0f, -1e30f, 88.0f, 88.7f, 89.0f, 100.0f, 0.0f, -0.0f, 1e-30f, -1e-30f};
        std::copy(std::begin(edge), std::end(edge), x.begin());
        std::vector<float> y(x.size());
        m->softmax_exp(static_cast<int64_t>(x.size()), y.data(), x.data(), 1.0f, 0.0f);  // a multiple of 16: all lanes SIMD
        for (size_t i = 0; i < x.size(); ++i) {
            const float want = expf_ggml_algorithm(x[i]);
            INFO("x = " << x[i]);
            REQUIRE(std::memcmp(&y[i], &want, 4) == 0);
        }
    }
    if (simd == 0)
        WARN("SKIPPED: no SIMD math variant for this CPU / build (or GENIE_CPU_ISA=scalar): the reference uses std::exp");
}

TEST_CASE("simd math: scaled_max is the exact maximum of the rounded products, the row untouched", "[simd_math]") {
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> dist(-50.0f, 50.0f);
    for (int64_t n : {0, 1, 7, 8, 9, 31, 1000}) {
        for (int where : {0, 1, 2, 3}) {  // the largest first, last, wherever it falls; a NaN among them
            for (float scale : {0.0883883f, 1.0f, 3.0f, -0.125f}) {
                CAPTURE(n, where, scale);
                std::vector<float> x(static_cast<size_t>(n));
                for (auto& e : x) e = dist(rng);
                if (n > 0 && where == 0) x.front() = 99.0f;
                if (n > 0 && where == 1) x.back() = 99.0f;
                if (n > 2 && where == 3) x[static_cast<size_t>(n / 2)] = NAN;
                const std::vector<float> before = x;
                const float m = cpu::scaled_max(x.data(), n, scale);
                float want = -INFINITY;
                for (int64_t t = 0; t < n; ++t) {  // the old in-place pass: products rounded, then compared
                    const float v = x[static_cast<size_t>(t)] * scale;
                    want = want < v ? v : want;
                }
                CHECK(m == want);
                CHECK((n == 0 || std::memcmp(x.data(), before.data(), x.size() * sizeof(float)) == 0));  // bits: NaN != NaN
            }
        }
    }
}

TEST_CASE("simd math: scale_to_f16 is F16(x * s), rounded to nearest even, subnormals kept", "[simd_math]") {
    std::mt19937 rng(6);
    std::uniform_real_distribution<float> expo(-30.0f, 2.0f);
    for (const cpu::MathFns* m : all_math()) {
        INFO(m->isa);
        for (int64_t n : {0, 1, 7, 8, 9, 100, 1031}) {
            std::vector<float> x(static_cast<size_t>(n));
            for (auto& v : x) v = std::exp2(expo(rng));  // probabilities down to F16's subnormals and below
            if (n > 3) x[2] = 0.0f;
            const float s = 1.0f / 3.0f;
            std::vector<uint16_t> got(static_cast<size_t>(n) + 1, 0xABCD);
            m->scale_to_f16(n, x.data(), s, got.data());
            for (int64_t i = 0; i < n; ++i) REQUIRE(got[static_cast<size_t>(i)] == fp32_to_fp16(x[static_cast<size_t>(i)] * s));
            REQUIRE(got[static_cast<size_t>(n)] == 0xABCD);  // nothing past n
        }
    }
}
