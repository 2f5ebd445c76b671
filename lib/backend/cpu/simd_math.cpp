#include "backend/cpu/simd_math.hpp"

#include "backend/cpu/kernels/kernels.hpp"
#include "core/fp16.hpp"
#include "core/gelu.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#define GENIE_AVX2 __attribute__((target("avx2,fma,f16c")))
#define GENIE_AVX512 __attribute__((target("avx512f,avx2,fma,f16c")))
#elif defined(__aarch64__)
#include <arm_neon.h>  // AdvSIMD is part of every aarch64 CPU: no target attribute needed
#endif

namespace genie::cpu {

namespace {

// ---- reference ------------------------------------------------------------------------

double softmax_exp_ref(int64_t n, float* y, const float* x, float scale, float max) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        y[i] = std::exp(x[i] * scale - max);
        sum += static_cast<double>(y[i]);
    }
    return sum;
}

void rotate_pairs_ref(int64_t n, float* a, float* b, size_t stride, const float* cs, const float* sn) {
    for (int64_t i = 0; i < n; ++i) {
        const size_t at = static_cast<size_t>(i) * stride;
        const float x0 = a[at], x1 = b[at];
        a[at] = std::fma(x0, cs[i], -(x1 * sn[i]));
        b[at] = std::fma(x0, sn[i], x1 * cs[i]);
    }
}

void scale_to_f16_ref(int64_t n, const float* x, float s, uint16_t* out) {
    for (int64_t i = 0; i < n; ++i) out[i] = fp32_to_fp16(x[i] * s);
}

void swiglu_ref(int64_t n, const float* g, const float* u, float* out) {
    for (int64_t i = 0; i < n; ++i) out[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

/// The oracle: ggml's GELU computed per element (core/gelu.hpp), no table.
void geglu_ref(int64_t n, const float* g, const float* u, float* out) {
    for (int64_t i = 0; i < n; ++i) out[i] = geglu_ggml(g[i], u[i]);
}

/// ggml's F16 GELU table: entry h = gelu(F16 value h) rounded to F16 (built on first use).
const uint16_t* gelu_table() {
    static const std::vector<uint16_t> table = [] {
        std::vector<uint16_t> t(1 << 16);
        for (uint32_t h = 0; h < (1u << 16); ++h) t[h] = gelu_f16_table_value(static_cast<uint16_t>(h));
        return t;
    }();
    return table.data();
}

/// geglu by table lookup, as ggml_vec_geglu_f32 (the SIMD sets' variant where the
/// conversion to F16 has no vector form here).
[[maybe_unused]] void geglu_table(int64_t n, const float* g, const float* u, float* out) {
    const uint16_t* table = gelu_table();
    for (int64_t i = 0; i < n; ++i) {
        const float x = g[i];
        out[i] = x <= -10.0f ? 0.0f : (x >= 10.0f ? x : fp16_to_fp32(table[fp32_to_fp16(x)])) * u[i];
    }
}

double sum_squares_ref(int64_t n, const float* x) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
    return sum;
}

#if defined(__x86_64__)

// ---- AVX2 + FMA -----------------------------------------------------------------------

/// exp(x) for 8 floats: ARM optimized-routines' expf as ggml_v_expf has it (x = n ln2 + b,
/// 2^n from the exponent bits, a degree-5 polynomial for e^b - 1; special paths for
/// |n| > 126 so that the result under/overflows like expf). Max error 1.45 ulp + 0.5.
GENIE_AVX2 inline __m256 exp8(__m256 x) {
    const __m256 r = _mm256_set1_ps(0x1.8p23f);
    const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
    const __m256 n = _mm256_sub_ps(z, r);
    const __m256 b =
        _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f), _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
    const __m256i e = _mm256_slli_epi32(_mm256_castps_si256(z), 23);
    const __m256 k = _mm256_castsi256_ps(_mm256_add_epi32(e, _mm256_castps_si256(_mm256_set1_ps(1))));
    const __m256 abs_n = _mm256_andnot_ps(_mm256_set1_ps(-0.f), n);
    const __m256 c = _mm256_cmp_ps(abs_n, _mm256_set1_ps(126), _CMP_GT_OQ);
    const __m256 u = _mm256_mul_ps(b, b);
    const __m256 j = _mm256_fmadd_ps(
        _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
                        _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
        u, _mm256_mul_ps(_mm256_set1_ps(0x1.ffffecp-1f), b));
    if (!_mm256_movemask_ps(c)) return _mm256_fmadd_ps(j, k, k);
    // |n| > 126: scale in two steps (s1 * s2) so that 2^n neither overflows nor
    // flushes early; |n| > 192: the result is 0 or inf.
    const __m256i g =
        _mm256_and_si256(_mm256_castps_si256(_mm256_cmp_ps(n, _mm256_setzero_ps(), _CMP_LE_OQ)), _mm256_set1_epi32(0x82000000u));
    const __m256 s1 = _mm256_castsi256_ps(_mm256_add_epi32(g, _mm256_set1_epi32(0x7f000000u)));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_sub_epi32(e, g));
    const __m256 d = _mm256_cmp_ps(abs_n, _mm256_set1_ps(192), _CMP_GT_OQ);
    const __m256 scaled = _mm256_mul_ps(_mm256_fmadd_ps(s2, j, s2), s1);
    const __m256 normal = _mm256_fmadd_ps(k, j, k);
    return _mm256_blendv_ps(_mm256_blendv_ps(normal, scaled, c), _mm256_mul_ps(s1, s1), d);
}

GENIE_AVX2 inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

GENIE_AVX2 double softmax_exp_avx2(int64_t n, float* y, const float* x, float scale, float max) {
    double sum = 0.0;
    int64_t i = 0;
    const __m256 vmax = _mm256_set1_ps(max), vscale = _mm256_set1_ps(scale);
    for (; i + 8 <= n; i += 8) {
        const __m256 v = exp8(_mm256_sub_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vscale), vmax));
        _mm256_storeu_ps(y + i, v);
        sum += static_cast<double>(hsum8(v));
    }
    if (i < n) {  // the last lanes as one vector whose other lanes are 0, as ggml's masked cells
        const int m = static_cast<int>(n - i);
        alignas(32) float t[8] = {};
        std::memcpy(t, x + i, static_cast<size_t>(m) * sizeof(float));
        const __m256 live = _mm256_cmp_ps(_mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_ps(static_cast<float>(m)), _CMP_LT_OQ);
        const __m256 v = _mm256_and_ps(live, exp8(_mm256_sub_ps(_mm256_mul_ps(_mm256_load_ps(t), vscale), vmax)));
        _mm256_store_ps(t, v);
        std::memcpy(y + i, t, static_cast<size_t>(m) * sizeof(float));
        sum += static_cast<double>(hsum8(v));
    }
    return sum;
}

GENIE_AVX2 void rotate_pairs_avx2(int64_t n, float* a, float* b, size_t stride, const float* cs, const float* sn) {
    int64_t i = 0;
    if (stride == 1)
        for (; i + 8 <= n; i += 8) {
            const __m256 x0 = _mm256_loadu_ps(a + i), x1 = _mm256_loadu_ps(b + i);
            const __m256 c = _mm256_loadu_ps(cs + i), s = _mm256_loadu_ps(sn + i);
            _mm256_storeu_ps(a + i, _mm256_fmsub_ps(x0, c, _mm256_mul_ps(x1, s)));
            _mm256_storeu_ps(b + i, _mm256_fmadd_ps(x0, s, _mm256_mul_ps(x1, c)));
        }
    for (; i < n; ++i) {
        const size_t at = static_cast<size_t>(i) * stride;
        const float x0 = a[at], x1 = b[at];
        a[at] = std::fma(x0, cs[i], -(x1 * sn[i]));
        b[at] = std::fma(x0, sn[i], x1 * cs[i]);
    }
}

GENIE_AVX2 void scale_to_f16_avx2(int64_t n, const float* x, float s, uint16_t* out) {
    const __m256 vs = _mm256_set1_ps(s);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_cvtps_ph(_mm256_mul_ps(_mm256_loadu_ps(x + i), vs), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; ++i) out[i] = fp32_to_fp16(x[i] * s);
}

GENIE_AVX2 void swiglu_avx2(int64_t n, const float* g, const float* u, float* out) {
    int64_t i = 0;
    const __m256 one = _mm256_set1_ps(1.0f);
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(g + i);
        const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), x));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_div_ps(x, _mm256_add_ps(one, e)), _mm256_loadu_ps(u + i)));
    }
    for (; i < n; ++i) out[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

/// geglu with F16C conversions, 8 lanes; the table lookups stay scalar (ggml's loop is
/// scalar throughout).
GENIE_AVX2 void geglu_avx2(int64_t n, const float* g, const float* u, float* out) {
    const uint16_t* table = gelu_table();
    int64_t i = 0;
    alignas(32) uint16_t h[8];
    alignas(32) uint16_t t[8];
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(g + i);
        _mm_store_si128(reinterpret_cast<__m128i*>(h), _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
        for (int j = 0; j < 8; ++j) t[j] = table[h[j]];
        __m256 y = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(t)));
        // x >= 10: x * u; x <= -10: +0 (not 0 * u)
        y = _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, _mm256_set1_ps(10.0f), _CMP_GE_OQ));
        y = _mm256_mul_ps(y, _mm256_loadu_ps(u + i));
        y = _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(x, _mm256_set1_ps(-10.0f), _CMP_LE_OQ));
        _mm256_storeu_ps(out + i, y);
    }
    geglu_table(n - i, g + i, u + i, out + i);
}

GENIE_AVX2 double sum_squares_avx2(int64_t n, const float* x) {
    __m256d acc[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int h = 0; h < 2; ++h) {
            const __m256 v = _mm256_loadu_ps(x + i + 8 * h);
            const __m256 sq = _mm256_mul_ps(v, v);
            acc[2 * h] = _mm256_add_pd(acc[2 * h], _mm256_cvtps_pd(_mm256_castps256_ps128(sq)));
            acc[2 * h + 1] = _mm256_add_pd(acc[2 * h + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(sq, 1)));
        }
    const __m256d s4 = _mm256_add_pd(_mm256_add_pd(acc[0], acc[1]), _mm256_add_pd(acc[2], acc[3]));
    const __m128d s2 = _mm_add_pd(_mm256_castpd256_pd128(s4), _mm256_extractf128_pd(s4, 1));
    double sum = _mm_cvtsd_f64(_mm_add_sd(s2, _mm_unpackhi_pd(s2, s2)));
    for (; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
    return sum;
}

// ---- AVX-512 (the avx512* kernel sets) ---------------------------------------------------

/// exp8 in 16 lanes, operation for operation (the same results per element).
GENIE_AVX512 inline __m512 exp16(__m512 x) {
    const __m512 r = _mm512_set1_ps(0x1.8p23f);
    const __m512 z = _mm512_fmadd_ps(x, _mm512_set1_ps(0x1.715476p+0f), r);
    const __m512 n = _mm512_sub_ps(z, r);
    const __m512 b =
        _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.7f7d1cp-20f), _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.62e4p-1f), x));
    const __m512i e = _mm512_slli_epi32(_mm512_castps_si512(z), 23);
    const __m512 k = _mm512_castsi512_ps(_mm512_add_epi32(e, _mm512_castps_si512(_mm512_set1_ps(1))));
    const __m512 abs_n = _mm512_abs_ps(n);
    const __mmask16 c = _mm512_cmp_ps_mask(abs_n, _mm512_set1_ps(126), _CMP_GT_OQ);
    const __m512 u = _mm512_mul_ps(b, b);
    const __m512 j = _mm512_fmadd_ps(
        _mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_set1_ps(0x1.0e4020p-7f), b, _mm512_set1_ps(0x1.573e2ep-5f)), u,
                        _mm512_fmadd_ps(_mm512_set1_ps(0x1.555e66p-3f), b, _mm512_set1_ps(0x1.fffdb6p-2f))),
        u, _mm512_mul_ps(_mm512_set1_ps(0x1.ffffecp-1f), b));
    if (!c) return _mm512_fmadd_ps(j, k, k);
    const __m512i g = _mm512_maskz_mov_epi32(_mm512_cmp_ps_mask(n, _mm512_setzero_ps(), _CMP_LE_OQ), _mm512_set1_epi32(static_cast<int>(0x82000000u)));
    const __m512 s1 = _mm512_castsi512_ps(_mm512_add_epi32(g, _mm512_set1_epi32(0x7f000000)));
    const __m512 s2 = _mm512_castsi512_ps(_mm512_sub_epi32(e, g));
    const __mmask16 d = _mm512_cmp_ps_mask(abs_n, _mm512_set1_ps(192), _CMP_GT_OQ);
    const __m512 scaled = _mm512_mul_ps(_mm512_fmadd_ps(s2, j, s2), s1);
    const __m512 normal = _mm512_fmadd_ps(k, j, k);
    return _mm512_mask_blend_ps(d, _mm512_mask_blend_ps(c, normal, scaled), _mm512_mul_ps(s1, s1));
}

/// As ggml_vec_soft_max_f32 in an AVX-512 build (llama.cpp built for this CPU): 16 lanes
/// summed in float (_mm512_reduce_add_ps), then in double; the last n % 16 by expf. Half
/// the instructions of the 8-lane variant per element (its exponentials are the same).
GENIE_AVX512 double softmax_exp_avx512(int64_t n, float* y, const float* x, float scale, float max) {
    double sum = 0.0;
    int64_t i = 0;
    const __m512 vmax = _mm512_set1_ps(max), vscale = _mm512_set1_ps(scale);
    for (; i + 16 <= n; i += 16) {
        const __m512 v = exp16(_mm512_sub_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i), vscale), vmax));
        _mm512_storeu_ps(y + i, v);
        sum += static_cast<double>(_mm512_reduce_add_ps(v));
    }
    if (i < n) {  // the last lanes as one vector whose other lanes are 0, as ggml's masked cells
        const __mmask16 live = static_cast<__mmask16>((1u << (n - i)) - 1u);
        const __m512 v = _mm512_maskz_mov_ps(live, exp16(_mm512_sub_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(live, x + i), vscale), vmax)));
        _mm512_mask_storeu_ps(y + i, live, v);
        sum += static_cast<double>(_mm512_reduce_add_ps(v));
    }
    return sum;
}

#elif defined(__aarch64__)

// ---- NEON -----------------------------------------------------------------------------

/// exp(x) for 4 floats: exp8 above, operation for operation (the same fused multiply-adds
/// in the same order), which is also what ggml_v_expf computes on ARM.
inline float32x4_t exp4(float32x4_t x) {
    const float32x4_t r = vdupq_n_f32(0x1.8p23f);
    const float32x4_t z = vfmaq_f32(r, x, vdupq_n_f32(0x1.715476p+0f));
    const float32x4_t n = vsubq_f32(z, r);
    const float32x4_t b = vfmsq_f32(vfmsq_f32(x, n, vdupq_n_f32(0x1.62e4p-1f)), n, vdupq_n_f32(0x1.7f7d1cp-20f));
    const uint32x4_t e = vshlq_n_u32(vreinterpretq_u32_f32(z), 23);
    const float32x4_t k = vreinterpretq_f32_u32(vaddq_u32(e, vreinterpretq_u32_f32(vdupq_n_f32(1))));
    const uint32x4_t c = vcagtq_f32(n, vdupq_n_f32(126));
    const float32x4_t u = vmulq_f32(b, b);
    const float32x4_t j = vfmaq_f32(vmulq_f32(vdupq_n_f32(0x1.ffffecp-1f), b),
                                    vfmaq_f32(vfmaq_f32(vdupq_n_f32(0x1.fffdb6p-2f), vdupq_n_f32(0x1.555e66p-3f), b),
                                              vfmaq_f32(vdupq_n_f32(0x1.573e2ep-5f), vdupq_n_f32(0x1.0e4020p-7f), b), u),
                                    u);
    const float32x4_t normal = vfmaq_f32(k, j, k);
    if (vmaxvq_u32(c) == 0) return normal;
    // |n| > 126: 2^n in two factors (see exp8); |n| > 192: 0 or inf.
    const uint32x4_t g = vandq_u32(vclezq_f32(n), vdupq_n_u32(0x82000000u));
    const float32x4_t s1 = vreinterpretq_f32_u32(vaddq_u32(g, vdupq_n_u32(0x7f000000u)));
    const float32x4_t s2 = vreinterpretq_f32_u32(vsubq_u32(e, g));
    const float32x4_t scaled = vmulq_f32(vfmaq_f32(s2, s2, j), s1);
    return vbslq_f32(vcagtq_f32(n, vdupq_n_f32(192)), vmulq_f32(s1, s1), vbslq_f32(c, scaled, normal));
}

/// As ggml_vec_soft_max_f32 on ARM: 4 lanes summed in float (vaddvq_f32), then in double.
double softmax_exp_neon(int64_t n, float* y, const float* x, float scale, float max) {
    double sum = 0.0;
    int64_t i = 0;
    const float32x4_t vmax = vdupq_n_f32(max), vscale = vdupq_n_f32(scale);
    for (; i + 4 <= n; i += 4) {
        const float32x4_t v = exp4(vsubq_f32(vmulq_f32(vld1q_f32(x + i), vscale), vmax));
        vst1q_f32(y + i, v);
        sum += static_cast<double>(vaddvq_f32(v));
    }
    if (i < n) {  // the last lanes as one vector whose other lanes are 0, as ggml's masked cells
        const int m = static_cast<int>(n - i);
        float t[4] = {};
        std::memcpy(t, x + i, static_cast<size_t>(m) * sizeof(float));
        const uint32_t lanes[4] = {0, 1, 2, 3};
        const uint32x4_t live = vcltq_u32(vld1q_u32(lanes), vdupq_n_u32(static_cast<uint32_t>(m)));
        const float32x4_t e = exp4(vsubq_f32(vmulq_f32(vld1q_f32(t), vscale), vmax));
        const float32x4_t v = vreinterpretq_f32_u32(vandq_u32(live, vreinterpretq_u32_f32(e)));
        vst1q_f32(t, v);
        std::memcpy(y + i, t, static_cast<size_t>(m) * sizeof(float));
        sum += static_cast<double>(vaddvq_f32(v));
    }
    return sum;
}

void scale_to_f16_neon(int64_t n, const float* x, float s, uint16_t* out) {
    const float32x4_t vs = vdupq_n_f32(s);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1_u16(out + i, vreinterpret_u16_f16(vcvt_f16_f32(vmulq_f32(vld1q_f32(x + i), vs))));
    for (; i < n; ++i) out[i] = fp32_to_fp16(x[i] * s);
}

void swiglu_neon(int64_t n, const float* g, const float* u, float* out) {
    int64_t i = 0;
    const float32x4_t one = vdupq_n_f32(1.0f);
    for (; i + 4 <= n; i += 4) {
        const float32x4_t x = vld1q_f32(g + i);
        const float32x4_t e = exp4(vsubq_f32(vdupq_n_f32(0.0f), x));
        vst1q_f32(out + i, vmulq_f32(vdivq_f32(x, vaddq_f32(one, e)), vld1q_f32(u + i)));
    }
    for (; i < n; ++i) out[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

double sum_squares_neon(int64_t n, const float* x) {
    float64x2_t acc[4] = {vdupq_n_f64(0.0), vdupq_n_f64(0.0), vdupq_n_f64(0.0), vdupq_n_f64(0.0)};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int h = 0; h < 2; ++h) {
            const float32x4_t v = vld1q_f32(x + i + 4 * h);
            const float32x4_t sq = vmulq_f32(v, v);
            acc[2 * h] = vaddq_f64(acc[2 * h], vcvt_f64_f32(vget_low_f32(sq)));
            acc[2 * h + 1] = vaddq_f64(acc[2 * h + 1], vcvt_high_f64_f32(sq));
        }
    double sum = vaddvq_f64(vaddq_f64(vaddq_f64(acc[0], acc[1]), vaddq_f64(acc[2], acc[3])));
    for (; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
    return sum;
}

#endif  // __x86_64__ / __aarch64__

MathFns make_reference() {
    MathFns m;
    m.isa = "scalar";
    m.softmax_exp = softmax_exp_ref;
    m.scale_to_f16 = scale_to_f16_ref;
    m.swiglu = swiglu_ref;
    m.geglu = geglu_ref;
    m.sum_squares = sum_squares_ref;
    m.rotate_pairs = rotate_pairs_ref;
    return m;
}

}  // namespace

namespace {

/// The largest f(s[t]) (NaNs passed over) in eight running maxima.
template <class F>
inline float running_max(const float* s, int64_t n, F f) {
    float m[8];
    std::fill(m, m + 8, -INFINITY);
    int64_t t = 0;
    for (; t + 8 <= n; t += 8)
        for (int j = 0; j < 8; ++j) {
            const float v = f(s[t + j]);
            m[j] = m[j] < v ? v : m[j];
        }
    for (; t < n; ++t) m[0] = std::max(m[0], f(s[t]));
    return *std::max_element(m, m + 8);
}

}  // namespace

float scaled_max(const float* s, int64_t n, float scale) {
    if (scale > 0.0f) return running_max(s, n, [](float v) { return v; }) * scale;
    return running_max(s, n, [scale](float v) { return v * scale; });  // never in a model
}

const MathFns& reference_math() {
    static const MathFns m = make_reference();
    return m;
}

namespace {

/// The variant for kernel set `isa`: SIMD where this build has one for it.
MathFns math_for(const char* isa) {
    MathFns m = reference_math();
#if defined(__x86_64__)
    // The AVX2 variants need what every x86 kernel set above scalar has (AVX2, FMA, F16C).
    if (std::strcmp(isa, "avx2") == 0 || std::strncmp(isa, "avx512", 6) == 0) {
        m.isa = "avx2";
        m.softmax_exp = softmax_exp_avx2;
        m.scale_to_f16 = scale_to_f16_avx2;
        m.swiglu = swiglu_avx2;
        m.geglu = geglu_avx2;
        m.sum_squares = sum_squares_avx2;
        m.rotate_pairs = rotate_pairs_avx2;
    }
    if (std::strncmp(isa, "avx512", 6) == 0) {  // every avx512* set has AVX-512 F
        m.isa = "avx512";
        m.softmax_exp = softmax_exp_avx512;
    }
#elif defined(__aarch64__)
    // Both NEON kernel sets (AdvSIMD is baseline); GENIE_CPU_ISA=scalar keeps the reference.
    if (std::strncmp(isa, "neon", 4) == 0) {
        m.isa = "neon";
        m.softmax_exp = softmax_exp_neon;
        m.scale_to_f16 = scale_to_f16_neon;
        m.swiglu = swiglu_neon;
        m.geglu = geglu_table;
        m.sum_squares = sum_squares_neon;
    }
#else
    (void)isa;
#endif
    return m;
}

}  // namespace

const MathFns& math_fns() {
    static const MathFns chosen = math_for(kernel_set().isa);
    return chosen;
}

std::vector<const MathFns*> available_math() {
    static const std::vector<MathFns> all = [] {
        std::vector<MathFns> v;
        for (const KernelSet* ks : available_kernel_sets()) {
            const MathFns m = math_for(ks->isa);
            bool seen = false;
            for (const MathFns& o : v) seen = seen || std::strcmp(o.isa, m.isa) == 0;
            if (!seen) v.push_back(m);
        }
        return v;
    }();
    std::vector<const MathFns*> out;
    for (const MathFns& m : all) out.push_back(&m);
    return out;
}

}  // namespace genie::cpu
