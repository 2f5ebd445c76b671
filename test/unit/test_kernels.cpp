// Dot products and matmul kernels: the reference dots (quant/vec_dot.hpp) against
// dequantize + double dot, and bit for bit against ggml's own *_generic functions from
// llama-cpp-python's libggml-cpu (skipped when not installed); every SIMD kernel set the
// CPU supports against the reference; SIMD activation quantizers bit for bit against the
// scalar ones; the backend matmul against the double-precision reference; ThreadPool.
#include <catch2/catch.hpp>

#include "backend/cpu/kernels/kernels.hpp"
#include "backend/cpu/matmul.hpp"
#include "core/fp16.hpp"
#include "core/thread_pool.hpp"
#include "quant/blocks.hpp"
#include "quant/quant.hpp"
#include "quant/vec_dot.hpp"

#include <dlfcn.h>

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

#include <algorithm>
#include <cstddef>
#include <cstdlib>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

using namespace genie;

namespace {

const DType kWeightTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0, DType::Q4_1,
                              DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K,
                              DType::Q4_K, DType::Q5_K, DType::Q6_K};

std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

/// Sets decode_two_streams() for a scope and restores it after: the single-row (decode)
/// kernels walk one or two row streams by CPU vendor, and both walks are tested anywhere.
struct DecodeStreams {
    explicit DecodeStreams(bool two) : saved(cpu::decode_two_streams()) { cpu::set_decode_two_streams(two); }
    ~DecodeStreams() { cpu::set_decode_two_streams(saved); }
    DecodeStreams(const DecodeStreams&) = delete;
    DecodeStreams& operator=(const DecodeStreams&) = delete;
    bool saved;
};

/// Activations in the weight's dot type, as the kernels receive them.
std::vector<uint8_t> activations(DType weight, const float* x, int64_t k) {
    const DType dt = quant::vec_dot_type(weight);
    std::vector<uint8_t> out(quant::row_bytes(dt, k));
    if (dt == DType::Q8_0) cpu::quantize_q8_0_ggml_x86(x, out.data(), k);
    else if (dt == DType::Q8_1) cpu::quantize_q8_1_ggml_x86(x, out.data(), k);
    else quant::quantize_row(dt, x, out.data(), k);
    return out;
}

/// Activations back to floats (Q8_1: d * q, as the dot products use them).
void dequantize_activations(DType weight, const void* a, float* out, int64_t k) {
    if (quant::vec_dot_type(weight) != DType::Q8_1) {
        quant::dequantize_row(quant::vec_dot_type(weight), a, out, k);
        return;
    }
    const auto* b = static_cast<const quant::BlockQ8_1*>(a);
    for (int64_t i = 0; i < k; ++i) out[i] = fp16_to_fp32(b[i / 32].d) * static_cast<float>(b[i / 32].qs[i % 32]);
}

double dequantized_dot(DType weight, const void* w, const void* a, int64_t k) {
    std::vector<float> wf(static_cast<size_t>(k)), af(static_cast<size_t>(k));
    quant::dequantize_row(weight, w, wf.data(), k);
    dequantize_activations(weight, a, af.data(), k);
    double s = 0.0;
    for (int64_t i = 0; i < k; ++i) s += static_cast<double>(wf[i]) * af[i];
    return s;
}

double abs_dot(DType weight, const void* w, const void* a, int64_t k) {
    std::vector<float> wf(static_cast<size_t>(k)), af(static_cast<size_t>(k));
    quant::dequantize_row(weight, w, wf.data(), k);
    dequantize_activations(weight, a, af.data(), k);
    double s = 0.0;
    for (int64_t i = 0; i < k; ++i) s += std::fabs(static_cast<double>(wf[i]) * af[i]);
    return s;
}

/// A kernel's nr x nw output y (activation row r, weight row j at y[r * nw + j]) against the
/// reference dots, within float-order tolerance.
void check_against_reference(DType t, int64_t k, const uint8_t* w, size_t wrow, int64_t nw, const uint8_t* a, size_t arow,
                             int64_t nr, const float* y) {
    for (int64_t r = 0; r < nr; ++r)
        for (int64_t j = 0; j < nw; ++j) {
            const void* wj = w + j * wrow;
            const void* ar = a + r * arow;
            const float want = quant::vec_dot(t, k, wj, ar);
            const double tol = 2e-6 * abs_dot(t, wj, ar, k) + 1e-30;
            CAPTURE(k, nr, r, j, want);
            CHECK(std::fabs(y[r * nw + j] - want) <= tol);
        }
}

struct Ggml {
    void* handle = nullptr;
    std::string why;
    Ggml() {
        std::string dir;
        if (const char* env = std::getenv("GENIE_GGML_LIB_DIR")) dir = env;
        else if (FILE* p = popen("python3 -c 'import llama_cpp, os; print(os.path.dirname(llama_cpp.__file__) + \"/lib\")' 2>/dev/null", "r")) {
            char buf[4096] = {};
            if (fgets(buf, sizeof buf, p)) dir = buf;
            pclose(p);
            while (!dir.empty() && (dir.back() == '\n' || dir.back() == '\r')) dir.pop_back();
        }
        if (dir.empty()) {
            why = "llama-cpp-python (which ships libggml-cpu) is not installed and GENIE_GGML_LIB_DIR is unset";
            return;
        }
        handle = dlopen((dir + "/libggml-cpu.so").c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
            why = std::string("cannot load libggml-cpu.so: ") + dlerror();
            return;
        }
        // ggml's FP16_TO_FP32 reads a table that ggml_cpu_init fills.
        if (auto init = reinterpret_cast<void (*)()>(dlsym(handle, "ggml_cpu_init"))) init();
    }
    using Fn = void (*)(int, float*, size_t, const void*, size_t, const void*, size_t, int);
    Fn fn(const std::string& name) const { return handle ? reinterpret_cast<Fn>(dlsym(handle, name.c_str())) : nullptr; }
};

const char* ggml_generic_name(DType t) {
    switch (t) {
        case DType::Q4_0: return "ggml_vec_dot_q4_0_q8_0_generic";
        case DType::Q4_1: return "ggml_vec_dot_q4_1_q8_1_generic";
        case DType::Q5_0: return "ggml_vec_dot_q5_0_q8_0_generic";
        case DType::Q5_1: return "ggml_vec_dot_q5_1_q8_1_generic";
        case DType::Q8_0: return "ggml_vec_dot_q8_0_q8_0_generic";
        case DType::Q2_K: return "ggml_vec_dot_q2_K_q8_K_generic";
        case DType::Q3_K: return "ggml_vec_dot_q3_K_q8_K_generic";
        case DType::Q4_K: return "ggml_vec_dot_q4_K_q8_K_generic";
        case DType::Q5_K: return "ggml_vec_dot_q5_K_q8_K_generic";
        case DType::Q6_K: return "ggml_vec_dot_q6_K_q8_K_generic";
        default: return nullptr;
    }
}

}  // namespace

TEST_CASE("vec_dot: reference dot products match dequantize + double dot", "[kernels]") {
    const int64_t k = 1024;
    for (DType t : kWeightTypes) {
        CAPTURE(dtype_name(t));
        for (uint32_t seed = 1; seed <= 4; ++seed) {
            const auto wf = random_floats(k, seed), xf = random_floats(k, seed + 100, 3.0f);
            std::vector<uint8_t> w(quant::row_bytes(t, k));
            quant::quantize_row(t, wf.data(), w.data(), k);
            const auto a = activations(t, xf.data(), k);
            const double want = dequantized_dot(t, w.data(), a.data(), k);
            const float got = quant::vec_dot(t, k, w.data(), a.data());
            // Q8_1's s is rounded to F16, the others only reorder float sums.
            const double tol = (t == DType::Q4_1 || t == DType::Q5_1 ? 1e-3 : 1e-5) * abs_dot(t, w.data(), a.data(), k);
            CHECK(std::fabs(got - want) <= tol);
        }
    }
    CHECK_THROWS(quant::vec_dot(DType::IQ2_XXS, 256, nullptr, nullptr));
}

TEST_CASE("vec_dot: reference dot products are bit-identical to ggml's generic ones", "[kernels][ggml]") {
    static const Ggml ggml;
    if (!ggml.handle) {
        WARN("SKIPPED: " << ggml.why);
        return;
    }
    const int64_t k = 2048;
    for (DType t : kWeightTypes) {
        const char* name = ggml_generic_name(t);
        if (!name) continue;
        CAPTURE(name);
        const Ggml::Fn fn = ggml.fn(name);
        REQUIRE(fn);
        for (uint32_t seed = 1; seed <= 8; ++seed) {
            const auto wf = random_floats(k, seed), xf = random_floats(k, seed + 7, 0.5f);
            std::vector<uint8_t> w(quant::row_bytes(t, k));
            quant::quantize_row(t, wf.data(), w.data(), k);
            const auto a = activations(t, xf.data(), k);
            float theirs = 0.0f;
            fn(static_cast<int>(k), &theirs, 0, w.data(), 0, a.data(), 0, 1);
            const float ours = quant::vec_dot(t, k, w.data(), a.data());
            // ggml's dispatched (SIMD) dot of the same blocks: same integer sums, other float order.
            float simd = 0.0f;
            const std::string simd_name = std::string(name).substr(0, std::string(name).size() - 8);
            ggml.fn(simd_name)(static_cast<int>(k), &simd, 0, w.data(), 0, a.data(), 0, 1);
            CHECK(std::fabs(ours - simd) <= 2e-6 * abs_dot(t, w.data(), a.data(), k));
            // The Q5_0 generic function in llama-cpp-python 0.3.36's libggml-cpu disagrees with
            // ggml's own dequantize_row_q5_0 + dot (checked with ctypes; the SIMD one agrees with
            // both), so it is not an oracle.
            if (t == DType::Q5_0) continue;
            // libggml-cpu is built with FMA and GCC's default -ffp-contract=fast, which fuses
            // ggml's `a*b + c` / `s -= a*b` per block; where the C source has such a pattern
            // the results may differ in the last bits (we compile without contraction).
            const bool fusable = !(t == DType::Q4_0 || t == DType::Q8_0 || t == DType::Q3_K || t == DType::Q6_K);
            if (fusable) CHECK(std::fabs(ours - theirs) <= 1e-6 * abs_dot(t, w.data(), a.data(), k));
            else CHECK(ours == theirs);
        }
    }
}

TEST_CASE("kernels: every kernel set matches the reference dots, tile edges included", "[kernels]") {
    const auto sets = cpu::available_kernel_sets();
    INFO("kernel sets: " << sets.size() << ", in use: " << cpu::isa_description());
    for (const bool two_streams : {false, true})
    for (const cpu::KernelSet* ks : sets) {
        const DecodeStreams walk(two_streams);
        for (DType t : kWeightTypes) {
            const cpu::GemmFn gemm = ks->gemm[static_cast<int>(t)];
            if (!gemm) continue;
            CAPTURE(two_streams, ks->isa, dtype_name(t));
            // 2816 = 11 super-blocks: the decoded prefill path's k chunks (6 + 5); odd and even
            // super-block counts (the single-row path works in pairs); 33024 = 129 super-blocks:
            // past the single-row path's activation table (it falls back to the tile).
            // Float weights (any k): lengths that end inside a SIMD step too (the loops'
            // scalar tails), and k below one step.
            std::vector<int64_t> lengths = {256, 512, 768, 2816, 33024};
            if (dtype_info(t).block_size == 1) lengths.insert(lengths.end(), {1, 7, 15, 17, 100, 129});
            // 32-element blocks: 9 blocks, not a multiple of the 512-bit Q4_0 decode step (4 blocks)
            if (dtype_info(t).block_size == 32) lengths.push_back(288);
            for (int64_t k : lengths) {
                const int64_t nw = 11, na = 7;
                const size_t wrow = quant::row_bytes(t, k);
                std::vector<uint8_t> w(wrow * nw);
                for (int64_t j = 0; j < nw; ++j) {
                    const auto wf = random_floats(k, static_cast<uint32_t>(j + 1), 0.1f);
                    quant::quantize_row(t, wf.data(), w.data() + j * wrow, k);
                }
                const size_t arow = quant::row_bytes(quant::vec_dot_type(t), k);
                std::vector<uint8_t> a(arow * na);
                for (int64_t r = 0; r < na; ++r) {
                    const auto xf = random_floats(k, static_cast<uint32_t>(r + 50), 2.0f);
                    const auto q = activations(t, xf.data(), k);
                    std::memcpy(a.data() + r * arow, q.data(), arow);
                }
                // 203 activation rows: the decoded path's column panels (104 + 99, last one short)
                const std::vector<int64_t> nrs = k == 512 ? std::vector<int64_t>{1, na, 203} : std::vector<int64_t>{1, na};
                if (k == 512) {
                    a.resize(arow * 203);
                    for (int64_t r = na; r < 203; ++r) {
                        const auto xf = random_floats(k, static_cast<uint32_t>(r + 50), 2.0f);
                        const auto q = activations(t, xf.data(), k);
                        std::memcpy(a.data() + r * arow, q.data(), arow);
                    }
                }
                for (int64_t nr : nrs) {
                    std::vector<float> y(static_cast<size_t>(nr * nw), -1.0f);
                    gemm(k, w.data(), wrow, nw, a.data(), arow, nr, y.data(), nw);
                    check_against_reference(t, k, w.data(), wrow, nw, a.data(), arow, nr, y.data());
                }
            }
        }
    }
}

TEST_CASE("kernels: prefill tiles (AVX-512 4 x 4, AMX 16 x 16) match the reference dots", "[kernels]") {
    // Shapes the small test above does not reach: 16-row weight groups plus a tail of 8
    // (AMX: two full groups, the rest on the 4 x 4 tiles), token counts of one full
    // 16-token tile, one tile plus one token (a padded tile), an odd number of tiles and
    // pairs of tiles, and k of 1 and 11 super-blocks (32-element blocks: 8, 88 and 9 blocks of
    // 32, the last an odd count for the AMX path's block pairs).
    for (const cpu::KernelSet* ks : cpu::available_kernel_sets()) {
        for (DType t : {DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q3_K, DType::Q2_K, DType::Q8_0, DType::Q4_0, DType::Q4_1,
                        DType::Q5_0, DType::Q5_1, DType::F16, DType::BF16, DType::F32}) {
            const cpu::GemmFn gemm = ks->gemm[static_cast<int>(t)];
            CAPTURE(ks->isa, dtype_name(t));
            const bool k_quant = dtype_info(t).block_size == 256;
            std::vector<int64_t> lengths = {256, 2816};
            if (!k_quant) lengths.push_back(288);
            for (int64_t k : lengths) {
                const int64_t nw = 40;
                const size_t wrow = quant::row_bytes(t, k);
                std::vector<uint8_t> w(wrow * nw);
                for (int64_t j = 0; j < nw; ++j) {
                    const auto wf = random_floats(k, static_cast<uint32_t>(j + 300), 0.1f);
                    quant::quantize_row(t, wf.data(), w.data() + j * wrow, k);
                }
                const size_t arow = quant::row_bytes(quant::vec_dot_type(t), k);
                const int64_t max_na = 51;
                std::vector<uint8_t> a(arow * max_na);
                for (int64_t r = 0; r < max_na; ++r) {
                    const auto xf = random_floats(k, static_cast<uint32_t>(r + 700), 2.0f);
                    const auto q = activations(t, xf.data(), k);
                    std::memcpy(a.data() + r * arow, q.data(), arow);
                }
                // The VNNI build's one-row-per-lane prefill (gemm_lane32 and, for Q2_K / Q3_K,
                // gemm_lane_k from 4 tokens, gemm_lane_k for Q4_K / Q5_K / Q6_K from 16) in
                // groups of 8 columns: 13 (8 + 5), 17 (a tail of 1), 51 (of 3); 13 is below
                // the Q4_K..Q6_K threshold. F16 / BF16 / F32: gemm_lane_float's blocks of
                // 256 along k (2816 = 11 of them; 288 a block of 32 after one of 256)
                for (int64_t na : {int64_t{13}, int64_t{16}, int64_t{17}, int64_t{48}, max_na}) {
                    CAPTURE(k, na);
                    std::vector<float> y(static_cast<size_t>(na * nw), -1.0f);
                    gemm(k, w.data(), wrow, nw, a.data(), arow, na, y.data(), nw);
                    check_against_reference(t, k, w.data(), wrow, nw, a.data(), arow, na, y.data());
                }
            }
        }
    }
}

TEST_CASE("kernels: K-quant kernels are exact at the extremes of quants, scales and activations", "[kernels]") {
    // Largest quants (Q4_K 15, Q5_K 31, Q6_K 63, Q3_K 3 and -4, Q2_K 3), extreme scales
    // (Q4_K/Q5_K 63 and mins 63, Q6_K -128 and 127, Q3_K 31 and -32, Q2_K 15) against activations at -128 (and +-127/-128 alternating): the
    // 4-product sums the VNNI kernels pack into 16-bit words reach 4 * 63 * 128 = 32256
    // and must neither saturate nor wrap. Single-row path, plain tiles and decoded 4x4 tiles.
    // 20 rows and up to 20 activation rows: AMX's 16 x 16 tiles (one full, one padded) too.
    const int64_t k = 512, nw = 20;
    for (const bool two_streams : {false, true})
    for (const cpu::KernelSet* ks : cpu::available_kernel_sets()) {
        const DecodeStreams walk(two_streams);
        for (DType t : {DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q3_K, DType::Q2_K}) {
            const cpu::GemmFn gemm = ks->gemm[static_cast<int>(t)];
            if (!gemm) continue;
            CAPTURE(two_streams, ks->isa, dtype_name(t));
            const size_t wrow = quant::row_bytes(t, k);
            std::vector<uint8_t> w(wrow * nw, 0xFF);
            for (int64_t b = 0; b < nw * k / 256; ++b) {
                uint8_t* blk = w.data() + b * (wrow / (k / 256));
                const uint16_t d = fp32_to_fp16(b % 2 ? 0.25f : -0.5f);
                if (t == DType::Q6_K) {
                    auto* q6 = reinterpret_cast<quant::BlockQ6_K*>(blk);
                    for (int g = 0; g < 16; ++g) q6->scales[g] = static_cast<int8_t>((g + b) % 3 == 0 ? 127 : -128);
                    q6->d = d;
                } else if (t == DType::Q3_K) {
                    // even blocks: quants 3 (u = 7) and scales 31; odd ones: quants -4 (u = 0) and scales -32
                    auto* q3 = reinterpret_cast<quant::BlockQ3_K*>(blk);
                    if (b % 2) std::memset(blk, 0, offsetof(quant::BlockQ3_K, d));
                    q3->d = d;
                } else if (t == DType::Q2_K) {
                    reinterpret_cast<quant::BlockQ2_K*>(blk)->d = d;  // quants 3, scales and mins 15
                    reinterpret_cast<quant::BlockQ2_K*>(blk)->dmin = fp32_to_fp16(0.125f);
                } else {
                    const uint16_t dmin = fp32_to_fp16(0.125f);
                    std::memcpy(blk, &d, 2);  // every 6-bit scale and min stays at its largest (63)
                    std::memcpy(blk + 2, &dmin, 2);
                }
            }
            const size_t arow = quant::row_bytes(DType::Q8_K, k);
            const int64_t na = 20;
            std::vector<uint8_t> a(arow * na);
            for (int64_t r = 0; r < na; ++r) {
                std::vector<float> x(static_cast<size_t>(k), -1.0f);  // quantizes to -128
                if (r % 2) for (int64_t i = 0; i < k; i += 2) x[static_cast<size_t>(i)] = 1.0f;  // +127 between -128
                quant::quantize_row(DType::Q8_K, x.data(), a.data() + r * arow, k);
            }
            for (int64_t nr : {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{16}, na}) {
                std::vector<float> y(static_cast<size_t>(nr * nw), 0.0f);
                gemm(k, w.data(), wrow, nw, a.data(), arow, nr, y.data(), nw);
                check_against_reference(t, k, w.data(), wrow, nw, a.data(), arow, nr, y.data());
            }
        }
    }
}

TEST_CASE("kernels: SIMD activation quantizers are bit-identical to the scalar ones", "[kernels]") {
    const int64_t k = 4096;
    auto x = random_floats(k, 9, 4.0f);
    // Ties and extremes: exact halves, zeros, a block of zeros, equal |max| of both signs.
    for (int i = 0; i < 64; ++i) x[i] = 0.5f * static_cast<float>(i - 32);
    for (int i = 256; i < 512; ++i) x[i] = 0.0f;
    x[600] = -7.0f;
    x[601] = 7.0f;
    for (const cpu::KernelSet* ks : cpu::available_kernel_sets()) {
        for (DType dt : {DType::Q8_K, DType::Q8_0, DType::Q8_1, DType::F16}) {
            const cpu::QuantizeFn q = ks->quantize[static_cast<int>(dt)];
            if (!q) continue;
            CAPTURE(ks->isa, dtype_name(dt));
            std::vector<uint8_t> want(quant::row_bytes(dt, k)), got(want.size(), 0xAB);
            if (dt == DType::Q8_0) cpu::quantize_q8_0_ggml_x86(x.data(), want.data(), k);
            else if (dt == DType::Q8_1) cpu::quantize_q8_1_ggml_x86(x.data(), want.data(), k);
            else quant::quantize_row(dt, x.data(), want.data(), k);
            q(x.data(), got.data(), k);
            CHECK(want == got);
        }
    }
}

namespace {

/// count F16 values, each from draw().
template <class Draw>
std::vector<uint16_t> f16_values(size_t count, Draw&& draw) {
    std::vector<uint16_t> v(count);
    for (auto& e : v) e = fp32_to_fp16(draw());
    return v;
}

/// Whether `got` is the sum over x < len of the F16 products a[x * a_step] * b[x * b_step]
/// (in double) within 1e-5 of the sum of their magnitudes.
bool f16_dot_close(double got, const uint16_t* a, size_t a_step, const uint16_t* b, size_t b_step, int64_t len) {
    double want = 0.0, mag = 0.0;
    for (int64_t x = 0; x < len; ++x) {
        const double term = static_cast<double>(fp16_to_fp32(a[static_cast<size_t>(x) * a_step])) * fp16_to_fp32(b[static_cast<size_t>(x) * b_step]);
        want += term;
        mag += std::fabs(term);
    }
    return std::fabs(got - want) <= 1e-5 * mag + 1e-9;
}

}  // namespace

namespace {

/// The lanes of a kernel set's attention vectors on x86 (0: not an x86 SIMD set).
int x86_attn_lanes(const std::string& isa) {
    if (isa == "avx2") return 8;
    if (isa.rfind("avx512", 0) == 0) return 16;
    return 0;
}

/// ggml's sum of the terms term(e), e < n, as llama.cpp computes attention's F16 dot
/// products on x86 with L-lane vectors, built by GCC (ggml-cpu/vec.h, simd-mappings.h,
/// llamafile/sgemm.cpp): Decode = ggml_vec_dot_f16 (term e into lane e % L of accumulator
/// (e / L) % 4, FMA chains, GGML_F32xL_REDUCE, the terms past the last multiple of 4 L added
/// in double); Batch = tinyBLAS (one accumulator, lane e % L, then hsum).
float ggml_order_sum(int L, cpu::AttnOrder order, int64_t n, const std::function<float(int64_t)>& term) {
    const int slots = order == cpu::AttnOrder::Decode ? 4 * L : L;
    const int64_t np = order == cpu::AttnOrder::Decode ? n - n % slots : n;
    std::vector<float> acc(static_cast<size_t>(slots), 0.0f);
    for (int64_t e = 0; e < np; ++e) acc[static_cast<size_t>(e % slots)] = std::fma(term(e), 1.0f, acc[static_cast<size_t>(e % slots)]);
    std::vector<float> lane(static_cast<size_t>(L));
    for (int l = 0; l < L; ++l)
        lane[static_cast<size_t>(l)] = order == cpu::AttnOrder::Decode ? (acc[l] + acc[2 * L + l]) + (acc[L + l] + acc[3 * L + l]) : acc[l];
    float r;
    if (L == 16) {  // _mm512_reduce_add_ps (GCC): halves, quarters, then (0 + 2) + (1 + 3)
        float h[8], t[4];
        for (int i = 0; i < 8; ++i) h[i] = lane[i + 8] + lane[i];
        for (int i = 0; i < 4; ++i) t[i] = h[i + 4] + h[i];
        r = (t[0] + t[2]) + (t[1] + t[3]);
    } else {
        float t[4];
        for (int i = 0; i < 4; ++i) t[i] = lane[i] + lane[i + 4];
        r = order == cpu::AttnOrder::Decode ? (t[0] + t[1]) + (t[2] + t[3])   // two hadds
                                            : (t[0] + t[2]) + (t[1] + t[3]);  // movehl, movehdup
    }
    double sum = r;
    for (int64_t e = np; e < n; ++e) sum += static_cast<double>(term(e));
    return static_cast<float>(sum);
}

}  // namespace

TEST_CASE("kernels: accumulate_f16 (attention's V·p over cell-major F16 values) sums as ggml", "[kernels]") {
    // Odd strides, head sizes with vector and scalar tails, query counts around the tile
    // sizes (1-4, 9, 32 = a prefill block), cell counts around the slots (32 / 64) and a
    // view that starts at cell 0 or later (a sliding window). Every set is close to a double
    // sum. The x86 sets equal, bit for bit, ggml's order over the KV view from cell 0
    // (ggml_order_sum: products of two F16 values are exact in float, so each FMA is one
    // add); the scalar reference and NEON sum the cells in order.
    std::mt19937 rng(17);
    std::uniform_real_distribution<float> value(-2.0f, 2.0f), prob(0.0f, 1.0f);
    for (const cpu::KernelSet* ks : cpu::available_kernel_sets()) {
        REQUIRE(ks->accumulate_f16 != nullptr);
        const int L = x86_attn_lanes(ks->isa);
        for (cpu::AttnOrder order : {cpu::AttnOrder::Decode, cpu::AttnOrder::Batch})
            for (int64_t hd : {4, 8, 16, 20, 64, 80, 128, 256}) {
                for (int64_t n : {1, 7, 33, 256, 300}) {
                    const size_t v_stride = static_cast<size_t>(hd) + 3, p_stride = static_cast<size_t>(n) + 5, ldo = static_cast<size_t>(hd) + 2;
                    const auto v = f16_values(static_cast<size_t>(n) * v_stride, [&] { return value(rng); });
                    for (int64_t nq : {1, 2, 3, 4, 5, 9, 32}) {
                        const int64_t cell0 = nq % 2 ? 0 : 13;
                        CAPTURE(ks->isa, static_cast<int>(order), hd, n, nq, cell0);
                        const auto p = f16_values(static_cast<size_t>(nq) * p_stride, [&] { return prob(rng) / static_cast<float>(n); });
                        std::vector<float> o(static_cast<size_t>(nq) * ldo, 123.0f);
                        ks->accumulate_f16(n, cell0, v.data(), v_stride, hd, p.data(), p_stride, nq, o.data(), ldo, order);
                        // tinyBLAS takes the head size in rows of 4
                        const cpu::AttnOrder used = order == cpu::AttnOrder::Batch && hd % 4 != 0 ? cpu::AttnOrder::Decode : order;
                        int bad = 0, inexact = 0;
                        for (int64_t i = 0; i < nq; ++i) {
                            const uint16_t* pi = p.data() + static_cast<size_t>(i) * p_stride;
                            for (int64_t d = 0; d < hd; ++d) {  // cells down column d of V
                                const float got = o[static_cast<size_t>(i) * ldo + static_cast<size_t>(d)];
                                if (!f16_dot_close(got, pi, 1, v.data() + d, v_stride, n)) ++bad;
                                auto term = [&](int64_t t) {
                                    return fp16_to_fp32(pi[static_cast<size_t>(t)]) * fp16_to_fp32(v[static_cast<size_t>(t) * v_stride + static_cast<size_t>(d)]);
                                };
                                float want = 0.0f;
                                if (L > 0) {  // the view from cell 0, padded with zero cells to whole slots
                                    const int64_t total = (cell0 + n + 4 * L - 1) / (4 * L) * (4 * L);
                                    want = ggml_order_sum(L, used, total, [&](int64_t e) {
                                        return e < cell0 || e >= cell0 + n ? 0.0f : term(e - cell0);
                                    });
                                } else {
                                    for (int64_t t = 0; t < n; ++t) want += term(t);
                                }
                                if (got != want) ++inexact;
                            }
                            for (size_t d = static_cast<size_t>(hd); d < ldo; ++d)  // the padding stays untouched
                                if (o[static_cast<size_t>(i) * ldo + d] != 123.0f) ++bad;
                        }
                        CHECK(bad == 0);
                        CHECK(inexact == 0);
                    }
                }
            }
    }
}

TEST_CASE("kernels: scores_f16 (attention's K·q) sums as ggml", "[kernels]") {
    // Head sizes with and without a partial vector and around the 4 L step, cell counts
    // around the 4-cell groups, query counts around the query tiles (32: a prefill block),
    // odd strides, both orders. Every set is close to a double sum; the x86 sets equal ggml's
    // order bit for bit (ggml_order_sum; tinyBLAS declines a head size that is not a multiple
    // of L, and ggml_vec_dot_f16 runs). A query's scores do not depend on where it sits in
    // its block: each equals its scores with the block's queries reversed and computed alone.
    std::mt19937 rng(29);
    std::uniform_real_distribution<float> value(-2.0f, 2.0f);
    for (const cpu::KernelSet* ks : cpu::available_kernel_sets()) {
        if (std::string(ks->isa) == "scalar") {  // attention_reference; the F16 gemm where a set lacks one
            CHECK(ks->scores_f16 == nullptr);
            continue;
        }
        REQUIRE(ks->scores_f16 != nullptr);
        const int L = x86_attn_lanes(ks->isa);
        for (cpu::AttnOrder order : {cpu::AttnOrder::Decode, cpu::AttnOrder::Batch})
            for (int64_t hd : {8, 16, 20, 64, 96, 128, 200, 512}) {
                for (int64_t n : {1, 3, 4, 7, 64, 301}) {
                    const size_t k_stride = static_cast<size_t>(hd) + 5, q_stride = static_cast<size_t>(hd) + 1, lds = static_cast<size_t>(n) + 3;
                    const auto k = f16_values(static_cast<size_t>(n) * k_stride, [&] { return value(rng); });
                    for (int64_t nq : {1, 2, 3, 4, 5, 10, 32}) {
                        CAPTURE(ks->isa, static_cast<int>(order), hd, n, nq);
                        const auto q = f16_values(static_cast<size_t>(nq) * q_stride, [&] { return value(rng); });
                        std::vector<float> out(static_cast<size_t>(nq) * lds, 123.0f);
                        ks->scores_f16(n, k.data(), k_stride, hd, q.data(), q_stride, nq, out.data(), lds, nq % 2 ? k.data() : nullptr, order);
                        const cpu::AttnOrder used = order == cpu::AttnOrder::Batch && L > 0 && hd % L != 0 ? cpu::AttnOrder::Decode : order;
                        int bad = 0, inexact = 0, alone_differs = 0, reversed_differs = 0;
                        std::vector<float> alone(static_cast<size_t>(n));
                        std::vector<uint16_t> q_rev(q.size());
                        for (int64_t i = 0; i < nq; ++i)
                            std::copy_n(q.data() + static_cast<size_t>(nq - 1 - i) * q_stride, q_stride, q_rev.data() + static_cast<size_t>(i) * q_stride);
                        std::vector<float> rev(static_cast<size_t>(nq) * lds, 123.0f);
                        ks->scores_f16(n, k.data(), k_stride, hd, q_rev.data(), q_stride, nq, rev.data(), lds, nullptr, order);
                        for (int64_t i = 0; i < nq; ++i) {
                            const uint16_t* qi = q.data() + static_cast<size_t>(i) * q_stride;
                            for (int64_t t = 0; t < n; ++t) {  // along key row t
                                const float got = out[static_cast<size_t>(i) * lds + static_cast<size_t>(t)];
                                if (rev[static_cast<size_t>(nq - 1 - i) * lds + static_cast<size_t>(t)] != got) ++reversed_differs;
                                const uint16_t* kt = k.data() + static_cast<size_t>(t) * k_stride;
                                if (!f16_dot_close(got, qi, 1, kt, 1, hd)) ++bad;
                                if (L > 0 && got != ggml_order_sum(L, used, hd, [&](int64_t e) {
                                        return fp16_to_fp32(qi[static_cast<size_t>(e)]) * fp16_to_fp32(kt[static_cast<size_t>(e)]);
                                    }))
                                    ++inexact;
                            }
                            for (size_t t = static_cast<size_t>(n); t < lds; ++t)
                                if (out[static_cast<size_t>(i) * lds + t] != 123.0f) ++bad;
                            if (L == 0 && nq > 2) continue;  // NEON's prompt path may sum a block's queries otherwise
                            ks->scores_f16(n, k.data(), k_stride, hd, qi, q_stride, 1, alone.data(), static_cast<size_t>(n), nullptr, order);
                            for (int64_t t = 0; t < n; ++t)
                                if (alone[static_cast<size_t>(t)] != out[static_cast<size_t>(i) * lds + static_cast<size_t>(t)]) ++alone_differs;
                        }
                        CHECK(bad == 0);
                        CHECK(inexact == 0);
                        CHECK(alone_differs == 0);
                        CHECK(reversed_differs == 0);
                    }
                }
            }
    }
}

TEST_CASE("kernels: ggml x86 Q8_0 activation quantizer", "[kernels]") {
    // 127/amax and round half to even: 0.5 * 127 / 127 -> 0 (the reference rounds it to 1).
    float x[32] = {};
    x[0] = 127.0f;
    x[1] = 0.5f;
    x[2] = 1.5f;
    x[3] = -2.5f;
    quant::BlockQ8_0 b{};
    cpu::quantize_q8_0_ggml_x86(x, &b, 32);
    CHECK(fp16_to_fp32(b.d) == 1.0f);
    CHECK(b.qs[0] == 127);
    CHECK(b.qs[1] == 0);
    CHECK(b.qs[2] == 2);
    CHECK(b.qs[3] == -2);
}

TEST_CASE("kernels: isa_description names the set in use", "[kernels]") {
    const std::string isa = cpu::isa_description();
    CHECK_FALSE(isa.empty());
    if (const char* want = std::getenv("GENIE_CPU_ISA"); !want || !*want) CHECK(isa == cpu::available_kernel_sets().back()->isa);
}

TEST_CASE("kernels: the variants this CPU supports are built in and the best one is used", "[kernels]") {
    std::vector<std::string> names;
    for (const cpu::KernelSet* ks : cpu::available_kernel_sets()) names.emplace_back(ks->isa);
    CAPTURE(names);
    REQUIRE(names.front() == "scalar");
    const auto has = [&](const char* n) { return std::find(names.begin(), names.end(), n) != names.end(); };
#if defined(__aarch64__) && defined(__linux__)
    // AdvSIMD is architectural on aarch64; dotprod is ARMv8.2's optional extension.
    CHECK(has("neon"));
    CHECK(has("neon+dotprod") == ((getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0));
    CHECK(names.back() == std::string(has("neon+dotprod") ? "neon+dotprod" : "neon"));
#elif defined(__x86_64__)
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
    CHECK(has("avx2") == avx2);
    if (has("avx512_amx")) CHECK(names.back() == "avx512_amx");
    else if (has("avx512_vnni")) CHECK(names.back() == "avx512_vnni");
    else if (avx2) CHECK(names.back() == "avx2");
#endif
    // Every SIMD set has its own kernel for each weight type (none inherited from scalar).
    const cpu::KernelSet& scalar = cpu::scalar_kernels();
    for (const cpu::KernelSet* ks : cpu::available_kernel_sets()) {
        if (ks == &scalar) continue;
        for (DType t : kWeightTypes) {
            CAPTURE(ks->isa, dtype_name(t));
            CHECK(ks->gemm[static_cast<int>(t)] != nullptr);
            CHECK(ks->gemm[static_cast<int>(t)] != scalar.gemm[static_cast<int>(t)]);
        }
    }
}

TEST_CASE("matmul: threaded kernels match the double-precision reference", "[kernels]") {
    ThreadPool pool(3);
    for (DType t : {DType::Q4_K, DType::Q6_K, DType::Q8_0, DType::Q4_0, DType::Q5_K, DType::F16, DType::F32, DType::Q3_K,
                    DType::IQ4_NL}) {
        CAPTURE(dtype_name(t));
        if (!quant::can_quantize(t)) continue;
        const int64_t k = 512, n_out = 37;
        const size_t wrow = quant::row_bytes(t, k);
        std::vector<uint8_t> wdata(wrow * n_out);
        const auto wf = random_floats(static_cast<size_t>(k * n_out), 3, 0.2f);
        for (int64_t j = 0; j < n_out; ++j) quant::quantize_row(t, wf.data() + j * k, wdata.data() + j * wrow, k);
        backend::Weight w{"w", t, k, n_out, wdata.data(), wrow};
        for (int64_t n : {1, 5, 70}) {
            auto xf = random_floats(static_cast<size_t>(n * k), 4, 1.0f);
            backend::Tensor x{xf.data(), n, k};
            std::vector<float> y1(static_cast<size_t>(n * n_out)), y2(y1.size());
            backend::Tensor ty1{y1.data(), n, n_out}, ty2{y2.data(), n, n_out};
            backend::cpu::matmul(pool, w, x, ty1);
            backend::cpu::matmul_reference(pool, w, x, ty2);
            for (size_t i = 0; i < y1.size(); ++i) {
                CAPTURE(n, i);
                CHECK(std::fabs(y1[i] - y2[i]) <= 1e-4f * (1.0f + std::fabs(y2[i])));
            }
        }
    }
}

TEST_CASE("matmul: shared-input (fused) matmuls equal one matmul per weight, bit for bit", "[kernels]") {
    ThreadPool pool(3);
    const int64_t k = 512;
    // Same activation format (Q4_K + Q6_K + Q5_K: Q8_K), two formats (Q4_K + Q8_0), three
    // formats (the unfused fallback), a weight without a SIMD kernel (IQ4_NL), odd row counts.
    const std::vector<std::vector<DType>> groups = {{DType::Q4_K, DType::Q6_K, DType::Q5_K},
                                                    {DType::Q4_K, DType::Q8_0},
                                                    {DType::Q4_K, DType::Q8_0, DType::F16},
                                                    {DType::Q4_K, DType::IQ4_NL},
                                                    {DType::F32, DType::F16}};
    for (const auto& types : groups) {
        std::vector<std::vector<uint8_t>> wdata;
        std::vector<backend::Weight> ws;
        for (size_t i = 0; i < types.size(); ++i) {
            const DType t = types[i];
            if (!quant::can_quantize(t)) continue;
            const int64_t n_out = 37 + 10 * static_cast<int64_t>(i);
            const size_t wrow = quant::row_bytes(t, k);
            wdata.emplace_back(wrow * n_out);
            const auto wf = random_floats(static_cast<size_t>(k * n_out), 7 + static_cast<uint32_t>(i), 0.2f);
            for (int64_t j = 0; j < n_out; ++j) quant::quantize_row(t, wf.data() + j * k, wdata.back().data() + j * wrow, k);
            ws.push_back(backend::Weight{"w", t, k, n_out, wdata.back().data(), wrow});
        }
        for (int64_t n : {1, 5, 70}) {
            CAPTURE(types.size(), n);
            auto xf = random_floats(static_cast<size_t>(n * k), 4, 1.0f);
            backend::Tensor x{xf.data(), n, k};
            std::vector<std::vector<float>> fused(ws.size()), single(ws.size());
            std::vector<backend::Tensor> ty(ws.size());
            std::vector<backend::Backend::MatmulOut> outs;
            for (size_t i = 0; i < ws.size(); ++i) {
                fused[i].assign(static_cast<size_t>(n * ws[i].n_out), -7.0f);
                single[i].assign(fused[i].size(), -9.0f);
                ty[i] = backend::Tensor{fused[i].data(), n, ws[i].n_out};
                outs.push_back({&ws[i], &ty[i]});
            }
            backend::cpu::matmul_shared_input(pool, x, outs);
            for (size_t i = 0; i < ws.size(); ++i) {
                backend::Tensor t1{single[i].data(), n, ws[i].n_out};
                backend::cpu::matmul(pool, ws[i], x, t1);
                CAPTURE(i, dtype_name(ws[i].type));
                CHECK(fused[i] == single[i]);
            }
        }
    }
}

TEST_CASE("ThreadPool: many short dispatches, uneven splits and exceptions", "[kernels]") {
    ThreadPool pool(4);
    // Every index exactly once per dispatch, for sizes that change from one dispatch to
    // the next (a worker late from the previous dispatch must not claim in the new one).
    std::vector<std::atomic<int>> hits(101'000);
    int64_t bad = 0, max_calls = 0;
    for (int round = 0; round < 3000; ++round) {
        const int64_t n = round % 7 == 6 ? 100'000 + round % 1000 : 1 + (round * 37) % 101;
        std::atomic<int64_t> calls{0};
        pool.parallel_for(n, [&](int64_t b, int64_t e) {
            calls.fetch_add(1, std::memory_order_relaxed);
            for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1, std::memory_order_relaxed);
        });
        for (int64_t i = 0; i < n; ++i) bad += hits[static_cast<size_t>(i)].exchange(0) != 1;
        if (n >= 100'000) max_calls = std::max(max_calls, calls.load());
    }
    CHECK(bad == 0);
    // Guided chunks: a large range is claimed in a few dozen pieces, not per index.
    CHECK(max_calls <= 64);
    CHECK_THROWS_AS(pool.parallel_for(8, [](int64_t b, int64_t) { if (b > 0) throw std::runtime_error("worker"); }),
                    std::runtime_error);
    CHECK_THROWS_AS(pool.parallel_for(8, [](int64_t b, int64_t) { if (b == 0) throw std::runtime_error("caller"); }),
                    std::runtime_error);
    int after = 0;
    pool.parallel_for(1, [&](int64_t, int64_t) { ++after; });
    CHECK(after == 1);
}
