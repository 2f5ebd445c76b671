// backend/cpu/simd_math: the vectorised expf (ggml's algorithm) against std::exp, SiLU
// against its definition, and the P·V register tiles against the axpy chain they replace
// (same FMAs in the same order: bit-identical).
#include "backend/cpu/kernels/kernels.hpp"
#include "backend/cpu/simd_math.hpp"
#include "core/fp16.hpp"

#include <catch2/catch.hpp>

#include <cmath>
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

std::vector<const cpu::MathFns*> all_math() {
    std::vector<const cpu::MathFns*> m{&cpu::reference_math()};
    if (&cpu::math_fns() != &cpu::reference_math()) m.push_back(&cpu::math_fns());
    return m;
}

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
            const float max = *std::max_element(x.begin(), x.end());
            const double sum = m->softmax_exp(n, y.data(), x.data(), max);
            double want_sum = 0.0;
            for (int64_t i = 0; i < n; ++i) {
                const float want = std::exp(x[static_cast<size_t>(i)] - max);
                REQUIRE(ulp_distance(y[static_cast<size_t>(i)], want) <= 2);
                want_sum += static_cast<double>(y[static_cast<size_t>(i)]);
            }
            REQUIRE(sum == Approx(want_sum).epsilon(1e-6));  // SIMD: 8 lanes summed in float first, as ggml
        }
        // Large negative arguments underflow to 0 like expf, never to garbage.
        std::vector<float> x{0.0f, -87.0f, -100.0f, -104.0f, -150.0f, -1e30f, -87.0f, -50.0f}, y(8);
        m->softmax_exp(8, y.data(), x.data(), 0.0f);
        for (size_t i = 0; i < x.size(); ++i) REQUIRE(ulp_distance(y[i], std::exp(x[i])) <= 2);
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

