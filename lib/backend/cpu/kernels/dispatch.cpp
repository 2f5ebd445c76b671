// The scalar reference kernel set and the run-time choice of the best variant.
#include "backend/cpu/kernels/kernels.hpp"

#include "core/fp16.hpp"
#include "quant/blocks.hpp"
#include "quant/quant.hpp"
#include "quant/vec_dot.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <type_traits>
#include <cstring>

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#endif

namespace genie::cpu {

namespace {

template <DType kType>
void gemm_reference(int64_t k, const void* w, size_t w_stride, int64_t nw, const void* a, size_t a_stride, int64_t na,
                    float* y, size_t ldy) {
    for (int64_t r = 0; r < na; ++r)
        for (int64_t c = 0; c < nw; ++c)
            y[static_cast<size_t>(r) * ldy + static_cast<size_t>(c)] =
                quant::vec_dot(kType, k, static_cast<const uint8_t*>(w) + static_cast<size_t>(c) * w_stride,
                               static_cast<const uint8_t*>(a) + static_cast<size_t>(r) * a_stride);
}

template <class Block>
void quantize_q8_ggml_x86(const float* x, Block* y, int64_t k) {
    for (int64_t b = 0; b < k / quant::kBlockSize32; ++b, x += quant::kBlockSize32) {
        float amax = 0.0f;
        for (int i = 0; i < quant::kBlockSize32; ++i) amax = std::max(amax, std::fabs(x[i]));
        const float d = amax / 127.f;
        const float id = amax != 0.0f ? 127.f / amax : 0.0f;
        int sum = 0;
        for (int i = 0; i < quant::kBlockSize32; ++i) {
            y[b].qs[i] = static_cast<int8_t>(std::nearbyint(x[i] * id));
            sum += y[b].qs[i];
        }
        y[b].d = fp32_to_fp16(d);
        if constexpr (std::is_same_v<Block, quant::BlockQ8_1>) y[b].s = fp32_to_fp16(d * static_cast<float>(sum));
    }
}

void accumulate_f16_reference(int64_t n, int64_t /*cell0*/, const uint16_t* v, size_t v_stride, int64_t hd, const uint16_t* p,
                              size_t p_stride, int64_t nq, float* o, size_t ldo, AttnOrder /*order*/) {
    for (int64_t i = 0; i < nq; ++i) {
        float* oi = o + static_cast<size_t>(i) * ldo;
        std::fill(oi, oi + hd, 0.0f);
        for (int64_t t = 0; t < n; ++t) {
            const float pt = fp16_to_fp32(p[static_cast<size_t>(i) * p_stride + static_cast<size_t>(t)]);
            const uint16_t* vt = v + static_cast<size_t>(t) * v_stride;
            for (int64_t d = 0; d < hd; ++d) oi[d] += pt * fp16_to_fp32(vt[d]);
        }
    }
}

KernelSet make_scalar() {
    KernelSet s;
    s.isa = "scalar";
#define GENIE_REF(T) s.gemm[static_cast<int>(DType::T)] = gemm_reference<DType::T>
    GENIE_REF(F32); GENIE_REF(F16); GENIE_REF(BF16);
    GENIE_REF(Q4_0); GENIE_REF(Q4_1); GENIE_REF(Q5_0); GENIE_REF(Q5_1); GENIE_REF(Q8_0);
    GENIE_REF(Q2_K); GENIE_REF(Q3_K); GENIE_REF(Q4_K); GENIE_REF(Q5_K); GENIE_REF(Q6_K);
#undef GENIE_REF
    s.quantize[static_cast<int>(DType::Q8_0)] = quantize_q8_0_ggml_x86;
    s.quantize[static_cast<int>(DType::Q8_1)] = quantize_q8_1_ggml_x86;
    s.accumulate_f16 = accumulate_f16_reference;
    return s;
}

#if defined(__x86_64__) || defined(__i386__)
// F16C from CPUID leaf 1 (ECX bit 29): clang before 16 has no "f16c" for __builtin_cpu_supports.
bool cpu_has_f16c() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
}

// AMX-TILE and AMX-INT8 (CPUID leaf 7, EDX bits 24 and 25) with the tile state enabled
// in XCR0 (bits 17 and 18).
bool cpu_has_amx_int8() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
    if ((edx & (3u << 24)) != (3u << 24)) return false;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & (1u << 27))) return false;  // OSXSAVE
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & (3u << 17)) == (3u << 17);
}

// Linux hands out the AMX tile data state only on request (arch_prctl
// ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA); without it the first tile instruction is a
// SIGILL. The permission is per process, so one request at dispatch covers every thread.
bool os_grants_amx() {
#if defined(__linux__)
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
    return false;
#endif
}
#endif

bool cpu_has(const char* feature) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (!std::strcmp(feature, "avx2"))
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
    if (!std::strcmp(feature, "avx512"))
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
               __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
    if (!std::strcmp(feature, "amx")) return cpu_has("avx512") && cpu_has_amx_int8() && os_grants_amx();
    return false;
#elif defined(__aarch64__) && defined(__linux__)
    if (!std::strcmp(feature, "neon")) return (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0;
    if (!std::strcmp(feature, "neon_dotprod")) return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
    return false;
#else
    (void)feature;
    return false;
#endif
}

/// A set whose missing entries fall back to `base`.
KernelSet merged(const KernelSet& best, const KernelSet& base) {
    KernelSet s = best;
    for (int i = 0; i < kTypeSlots; ++i) {
        if (!s.gemm[i]) s.gemm[i] = base.gemm[i];
        if (!s.quantize[i]) s.quantize[i] = base.quantize[i];
    }
    return s;
}

std::vector<const KernelSet*> build_available() {
    static const KernelSet scalar = make_scalar();
    std::vector<const KernelSet*> sets{&scalar};
    static KernelSet avx2, avx512, amx, neon, neon_dotprod;
    if (const KernelSet* k = detail::avx2_kernels(); k && cpu_has("avx2")) {
        avx2 = merged(*k, scalar);
        sets.push_back(&avx2);
    }
    if (const KernelSet* k = detail::avx512_kernels(); k && cpu_has("avx512")) {
        avx512 = merged(*k, sets.back() == &avx2 ? avx2 : scalar);
        sets.push_back(&avx512);
        if (const KernelSet* x = detail::amx_kernels(); x && cpu_has("amx")) {
            amx = merged(*x, avx512);
            sets.push_back(&amx);
        }
    }
    if (const KernelSet* k = detail::neon_kernels(); k && cpu_has("neon")) {
        neon = merged(*k, scalar);
        sets.push_back(&neon);
    }
    if (const KernelSet* k = detail::neon_dotprod_kernels(); k && cpu_has("neon_dotprod")) {
        neon_dotprod = merged(*k, sets.back() == &neon ? neon : scalar);
        sets.push_back(&neon_dotprod);
    }
    return sets;
}

}  // namespace

void quantize_q8_0_ggml_x86(const float* x, void* y, int64_t k) {
    quantize_q8_ggml_x86(x, static_cast<quant::BlockQ8_0*>(y), k);
}
void quantize_q8_1_ggml_x86(const float* x, void* y, int64_t k) {
    quantize_q8_ggml_x86(x, static_cast<quant::BlockQ8_1*>(y), k);
}

const KernelSet& scalar_kernels() { return *available_kernel_sets().front(); }

std::vector<const KernelSet*> available_kernel_sets() {
    static const std::vector<const KernelSet*> sets = build_available();
    return sets;
}

const KernelSet& kernel_set() {
    static const KernelSet* chosen = [] {
        const auto sets = available_kernel_sets();
        if (const char* want = std::getenv("GENIE_CPU_ISA"); want && *want)
            for (const KernelSet* s : sets)
                if (!std::strcmp(s->isa, want)) return s;
        return sets.back();
    }();
    return *chosen;
}

std::string isa_description() { return kernel_set().isa; }

namespace {
bool detect_two_streams() {
    if (const char* want = std::getenv("GENIE_DECODE_STREAMS"); want && *want) return std::strcmp(want, "1") != 0;
#if defined(__x86_64__) || defined(__i386__)
    // Intel (Xeon VM, client cores) and AMD with AVX-512 (Zen 4 and later), where the two-stream
    // walk was measured faster (docs/kernels.md, docs/performance-history.md). AMD CPUs without
    // AVX-512 keep one stream: this walk was not measured on one.
    __builtin_cpu_init();
    return __builtin_cpu_is("intel") != 0 || (__builtin_cpu_is("amd") != 0 && __builtin_cpu_supports("avx512f") != 0);
#else
    return false;
#endif
}
std::atomic<bool>& two_streams_flag() {
    static std::atomic<bool> flag{detect_two_streams()};
    return flag;
}
}  // namespace

bool decode_two_streams() { return two_streams_flag().load(std::memory_order_relaxed); }

void set_decode_two_streams(bool on) { two_streams_flag().store(on, std::memory_order_relaxed); }

}  // namespace genie::cpu
