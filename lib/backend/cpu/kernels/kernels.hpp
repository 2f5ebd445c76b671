// Fast CPU kernels with run-time ISA dispatch. Every instruction-set variant lives in
// its own translation unit compiled with that ISA's flags (lib/CMakeLists.txt), so the
// library itself stays baseline x86-64 / armv8-a; kernel_set() picks the best variant
// the running CPU supports once, at first use.
//
// A variant computes the same integer block sums as the reference dot products in
// quant/vec_dot.hpp; only the float summation order differs (tested in
// test/unit/test_kernels.cpp against the reference within a tight relative tolerance).
#pragma once

#include <genie/types.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace genie::cpu {

/// y[r * ldy + c] = dot(weight row c, activation row r) for c < nw, r < na, where
/// weight row c starts at w + c * w_stride (bytes) and activation row r (already
/// quantized to quant::vec_dot_type of the weight type) at a + r * a_stride; k elements.
using GemmFn = void (*)(int64_t k, const void* w, size_t w_stride, int64_t nw, const void* a, size_t a_stride,
                        int64_t na, float* y, size_t ldy);

/// Converts k floats to the activation format `dot_type`: bit-identical to
/// quant::quantize_row for Q8_K/F16/BF16, to quantize_q8_0/1_ggml_x86 for Q8_0/Q8_1.
using QuantizeFn = void (*)(const float* x, void* y, int64_t k);

/// Which of ggml's summation orders attention's F16 dot products follow: llama.cpp (flash
/// attention off) sums them with ggml_vec_dot_f16 in a one-token batch (Decode) and with
/// llamafile's tinyBLAS in a longer one (Batch); kernels/x86/attention_f16.inc spells both out.
/// The NEON set and the scalar reference sum in their own orders and ignore it.
enum class AttnOrder : uint8_t { Decode, Batch };

/// Attention's V·p over an F16 KV cache that keeps values cell-major:
///   o[i * ldo + d] = sum over t < n of p[i * p_stride + t] * v[t * v_stride + d]
/// for i < nq, d < hd, where v (one KV head's values, cell rows v_stride elements apart)
/// and p (nq rows of probabilities) hold F16; products and sums in float, in `order`
/// (ggml's F16 mul_mat of the transposed V); cell0 is the cache cell of v's first row (the
/// x86 sets place cell t's term in the partial sum of cache cell cell0 + t, as ggml's view
/// from cell 0 does).
using AccumulateF16Fn = void (*)(int64_t n, int64_t cell0, const uint16_t* v, size_t v_stride, int64_t hd, const uint16_t* p,
                                 size_t p_stride, int64_t nq, float* o, size_t ldo, AttnOrder order);

/// Attention's K·q over an F16 KV cache:
///   s[i * lds + t] = sum over d < hd of q[i * q_stride + d] * k[t * k_stride + d]
/// for i < nq, t < n, hd <= 512; F16 keys and queries, products and sums in float, in
/// `order` (ggml's F16 mul_mat). A query's scores do not depend on the other queries. When
/// `companion` is not null it is a second cell array with the same stride (the head's
/// values): its rows of the same cells are asked into L2 as the keys are read, so that
/// each core streams two arrays at once and V·p then finds them there.
using ScoresF16Fn = void (*)(int64_t n, const uint16_t* k, size_t k_stride, int64_t hd, const uint16_t* q, size_t q_stride,
                             int64_t nq, float* s, size_t lds, const uint16_t* companion, AttnOrder order);

/// Number of DType ids a table covers (ids are < 64).
inline constexpr int kTypeSlots = 64;

struct KernelSet {
    const char* isa = "scalar";         ///< "scalar", "avx2", "avx512_vnni", "avx512_amx", "neon" or "neon+dotprod"
    GemmFn gemm[kTypeSlots] = {};        ///< by weight DType id; nullptr: no kernel
    QuantizeFn quantize[kTypeSlots] = {};  ///< by activation DType id; nullptr: use quant::quantize_row
    size_t panel_bytes = 0;              ///< prefill: activation bytes per gemm call; 0: matmul's 64-row panels
    AccumulateF16Fn accumulate_f16 = nullptr;  ///< every set has one
    ScoresF16Fn scores_f16 = nullptr;  ///< nullptr (the scalar set): use gemm[F16]
    /// scores_f16 and accumulate_f16 prefetch K and V ahead of their reads themselves and
    /// one query row (decode) runs faster without the companion stream (the x86 sets);
    /// false: decode passes the companion as a prompt does (NEON: not measured on ARM).
    bool attn_prefetches = false;
};

/// Q8_0 / Q8_1 activations exactly as ggml-cpu quantizes them on x86 (arch/x86/quants.c:
/// id = 127 / amax, round half to even, d = fp16(amax / 127); Q8_1 adds s = fp16(d * sum q)).
/// llama.cpp runs these on every AVX machine, so every kernel set here uses them for
/// activations; they differ from quant::quantize_row (1 / d, round half away) in the
/// last bit now and then.
void quantize_q8_0_ggml_x86(const float* x, void* y, int64_t k);
void quantize_q8_1_ggml_x86(const float* x, void* y, int64_t k);

/// The scalar reference set (quant/vec_dot.hpp per output, quant::quantize_row).
const KernelSet& scalar_kernels();
/// Every set this build has and the running CPU supports, best last (scalar first).
std::vector<const KernelSet*> available_kernel_sets();
/// The set in use: the best available one, or the one named by the environment
/// variable GENIE_CPU_ISA (e.g. GENIE_CPU_ISA=scalar) when that is available.
const KernelSet& kernel_set();
/// The ISA in use, e.g. "avx512_vnni" (for genie-cli info --system).
std::string isa_description();
/// Whether the 512-bit Q4_K / Q5_K single-row (decode) kernel walks two rows half its
/// range apart at once, two weight streams per core: on Intel CPUs and on AMD CPUs with
/// AVX-512 (Zen 4 on), where it was measured (x86_kernels.inc, gemv_k45); elsewhere one
/// stream. GENIE_DECODE_STREAMS=1 or 2 in the
/// environment overrides the choice (to measure it on another CPU).
bool decode_two_streams();
/// Overrides decode_two_streams() for the whole process (tests run both walks on any CPU).
void set_decode_two_streams(bool on);

namespace detail {
// Per-ISA tables, filled by each variant's translation unit (nullptr where the build or
// the platform lacks it).
const KernelSet* avx2_kernels();
const KernelSet* avx512_kernels();
const KernelSet* amx_kernels();  ///< avx512_vnni plus AMX prefill tiles
const KernelSet* neon_kernels();
const KernelSet* neon_dotprod_kernels();
}  // namespace detail

}  // namespace genie::cpu
