// The INT8 (Q8_0) KV cache of the CPU backend.
//
// A cell (one token of one layer) holds n_head_kv * head_dim keys and as many values,
// each head split into Q8_0 blocks of 32: a binary16 scale d and 32 int8 q, x = q * d,
// exactly ggml's block_q8_0 (34 bytes). Blocks never straddle two heads (head_dim is a
// multiple of 32), so a head's keys are head_dim / 32 consecutive blocks. In memory the
// cells of one head follow each other (head_cell_offset), so attention streams them.
//
// Keys and values are quantized as ggml-cpu's x86 quantize_row_q8_0 does (the kernel
// set's Q8_0 quantizer, also used for activations): d = fp16(amax / 127), q = round-half-
// even(x * 127 / amax). K·q quantizes q to Q8_0 too and runs the kernel set's Q8_0 x Q8_0
// dot product (integer block sums, AVX2 / AVX-512 VNNI / scalar reference), which is what
// llama.cpp does for a q8_0 K cache. The softmax is the F16 path's (math_fns().softmax_exp:
// ggml's vectorised exp in float, the sum in double); the probabilities stay float, and V
// is dequantized block by block (d q, exact in float) and accumulated in float (llama.cpp's
// flash-attention path for a quantized V).
//
// The V accumulation has an AVX2 + FMA form (function target attribute, chosen with the x86
// SIMD kernel sets, so the library itself stays baseline x86-64), for a prompt's blocks a
// register-tiled form (256-bit, or 512-bit with the avx512* sets), and a portable loop the
// compiler vectorises (scalar set, aarch64). A prompt goes in blocks of query rows per KV
// head, as the F16 path (attention below).
#include "backend/cpu/attention_q8.hpp"

#include "backend/cpu/kernels/kernels.hpp"
#include "backend/cpu/simd_math.hpp"
#include "core/fp16.hpp"
#include "core/thread_pool.hpp"
#include "quant/blocks.hpp"
#include "quant/quant.hpp"

#include <genie/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#define GENIE_Q8_AVX2 __attribute__((target("avx2,fma")))
#define GENIE_Q8_AVX512 __attribute__((target("avx512f,avx2,fma")))
#endif

namespace genie::backend::cpu_q8 {

namespace {

using quant::BlockQ8_0;
constexpr int kBlock = quant::kBlockSize32;

cpu::QuantizeFn quantizer(const cpu::KernelSet& ks) {
    const cpu::QuantizeFn fn = ks.quantize[static_cast<int>(DType::Q8_0)];
    return fn ? fn : cpu::quantize_q8_0_ggml_x86;
}

/// Cells [t0, n_kv) of accumulate_values one at a time (the tail of the four-cell loops).
void accumulate_values_tail(const uint8_t* V, size_t row_bytes, int32_t t0, int32_t n_kv, int32_t blocks_per_head,
                            const float* p, size_t p_stride, int32_t group, float* o, int32_t head_dim) {
    float x[kBlock];
    for (int32_t t = t0; t < n_kv; ++t) {
        const auto* blocks = reinterpret_cast<const BlockQ8_0*>(V + static_cast<size_t>(t) * row_bytes);
        for (int32_t b = 0; b < blocks_per_head; ++b) {
            const float d = fp16_to_fp32(blocks[b].d);
            const int8_t* q = blocks[b].qs;
            for (int i = 0; i < kBlock; ++i) x[i] = d * static_cast<float>(q[i]);
            for (int32_t g = 0; g < group; ++g) {
                const float c = p[static_cast<size_t>(g) * p_stride + static_cast<size_t>(t)];
                float* og = o + static_cast<size_t>(g) * head_dim + static_cast<size_t>(b) * kBlock;
                for (int i = 0; i < kBlock; ++i) og[i] += c * x[i];
            }
        }
    }
}

#if defined(__x86_64__)
/// accumulate_values with AVX2 + FMA. Per 8 elements of a block: the four cells' int8
/// widened, converted and multiplied by their scale d once (d q is exact in float), then
/// for each query head of the group og = fma(p_t, d q_t, og) over the four cells, p_t
/// broadcast from memory. Before it, the only loop (c = p d rounded first, then c q added
/// without FMA, compiled twice by target_clones) went through a float copy of the block on
/// the stack and cost ~2.5x the F16 path's V·p per cell.
GENIE_Q8_AVX2
void accumulate_values_avx2(const uint8_t* V, size_t row_bytes, int32_t n_kv, int32_t blocks_per_head, const float* p,
                            size_t p_stride, int32_t group, float* o, int32_t head_dim) {
    int32_t t0 = 0;
    for (; t0 + 4 <= n_kv; t0 += 4) {
        const BlockQ8_0* blocks[4];
        for (int j = 0; j < 4; ++j)
            blocks[j] = reinterpret_cast<const BlockQ8_0*>(V + static_cast<size_t>(t0 + j) * row_bytes);
        for (int32_t b = 0; b < blocks_per_head; ++b) {
            __m256 d[4];
            for (int j = 0; j < 4; ++j) d[j] = _mm256_set1_ps(fp16_to_fp32(blocks[j][b].d));
            for (int v = 0; v < kBlock / 8; ++v) {
                __m256 x[4];
                for (int j = 0; j < 4; ++j)
                    x[j] = _mm256_mul_ps(d[j], _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                                                   _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blocks[j][b].qs + 8 * v)))));
                for (int32_t g = 0; g < group; ++g) {
                    const float* pg = p + static_cast<size_t>(g) * p_stride + static_cast<size_t>(t0);
                    float* og = o + static_cast<size_t>(g) * head_dim + static_cast<size_t>(b) * kBlock + 8 * v;
                    __m256 acc = _mm256_loadu_ps(og);
                    for (int j = 0; j < 4; ++j) acc = _mm256_fmadd_ps(_mm256_broadcast_ss(pg + j), x[j], acc);
                    _mm256_storeu_ps(og, acc);
                }
            }
        }
    }
    accumulate_values_tail(V, row_bytes, t0, n_kv, blocks_per_head, p, p_stride, group, o, head_dim);
}

// GCC 12 warns (-Wmaybe-uninitialized) inside the AVX-512 intrinsics that start from
// _mm512_undefined_* (GCC bug 105593, fixed in 13); those warnings are false.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
/// accumulate_values_avx2 with 512-bit vectors (the avx512* sets): a block's 32 values of
/// each of the four cells in two vectors, each output vector loaded and stored once per
/// four cells; the same FMAs in the same order per output (the same numbers); faster than the
/// 256-bit loop in the same build (docs/performance-history.md).
GENIE_Q8_AVX512
void accumulate_values_avx512(const uint8_t* V, size_t row_bytes, int32_t n_kv, int32_t blocks_per_head, const float* p,
                              size_t p_stride, int32_t group, float* o, int32_t head_dim) {
    int32_t t0 = 0;
    for (; t0 + 4 <= n_kv; t0 += 4) {
        const BlockQ8_0* blocks[4];
        for (int j = 0; j < 4; ++j)
            blocks[j] = reinterpret_cast<const BlockQ8_0*>(V + static_cast<size_t>(t0 + j) * row_bytes);
        for (int32_t b = 0; b < blocks_per_head; ++b) {
            __m512 x[4][2];
            for (int j = 0; j < 4; ++j) {
                const __m512 d = _mm512_set1_ps(fp16_to_fp32(blocks[j][b].d));
                for (int h = 0; h < 2; ++h)
                    x[j][h] = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                                                   _mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks[j][b].qs + 16 * h)))));
            }
            for (int32_t g = 0; g < group; ++g) {
                const float* pg = p + static_cast<size_t>(g) * p_stride + static_cast<size_t>(t0);
                float* og = o + static_cast<size_t>(g) * head_dim + static_cast<size_t>(b) * kBlock;
                __m512 acc0 = _mm512_loadu_ps(og), acc1 = _mm512_loadu_ps(og + 16);
                for (int j = 0; j < 4; ++j) {
                    const __m512 c = _mm512_set1_ps(pg[j]);
                    acc0 = _mm512_fmadd_ps(c, x[j][0], acc0);
                    acc1 = _mm512_fmadd_ps(c, x[j][1], acc1);
                }
                _mm512_storeu_ps(og, acc0);
                _mm512_storeu_ps(og + 16, acc1);
            }
        }
    }
    accumulate_values_tail(V, row_bytes, t0, n_kv, blocks_per_head, p, p_stride, group, o, head_dim);
}

/// Queries g0.. (kQ of them) x dimensions i0..i0 + 32 of o over the len cells of a chunk
/// of V rows converted to float (vf: [len][head_dim], cells t0..).
template <int kQ>
GENIE_Q8_AVX2 inline void accumulate_tile_avx2(const float* vf, int32_t len, int32_t head_dim, const float* p, size_t p_stride,
                                               int32_t t0, int32_t g0, int32_t i0, float* o) {
    __m256 acc[kQ][4];
    for (int q = 0; q < kQ; ++q)
        for (int j = 0; j < 4; ++j) acc[q][j] = _mm256_loadu_ps(o + static_cast<size_t>(g0 + q) * head_dim + i0 + 8 * j);
    const float* pg = p + static_cast<size_t>(g0) * p_stride + static_cast<size_t>(t0);
    const float* row = vf + i0;
    for (int32_t t = 0; t < len; ++t, row += head_dim) {
        __m256 x[4];
        for (int j = 0; j < 4; ++j) x[j] = _mm256_loadu_ps(row + 8 * j);
        for (int q = 0; q < kQ; ++q) {
            const __m256 c = _mm256_broadcast_ss(pg + static_cast<size_t>(q) * p_stride + static_cast<size_t>(t));
            for (int j = 0; j < 4; ++j) acc[q][j] = _mm256_fmadd_ps(c, x[j], acc[q][j]);
        }
    }
    for (int q = 0; q < kQ; ++q)
        for (int j = 0; j < 4; ++j) _mm256_storeu_ps(o + static_cast<size_t>(g0 + q) * head_dim + i0 + 8 * j, acc[q][j]);
}

/// The same tile with 512-bit vectors (the avx512* kernel sets): 4 queries x 32 dimensions
/// in 8 accumulators, half the instructions per product (the 256-bit tile took about a
/// third of a 0.6B pp64's time at depth 2048 with an INT8 cache, perf). The same FMAs in
/// the same order per output: the same numbers.
template <int kQ>
GENIE_Q8_AVX512 inline void accumulate_tile_avx512(const float* vf, int32_t len, int32_t head_dim, const float* p, size_t p_stride,
                                                   int32_t t0, int32_t g0, int32_t i0, float* o) {
    __m512 acc[kQ][2];
    for (int q = 0; q < kQ; ++q)
        for (int j = 0; j < 2; ++j) acc[q][j] = _mm512_loadu_ps(o + static_cast<size_t>(g0 + q) * head_dim + i0 + 16 * j);
    const float* pg = p + static_cast<size_t>(g0) * p_stride + static_cast<size_t>(t0);
    const float* row = vf + i0;
    for (int32_t t = 0; t < len; ++t, row += head_dim) {
        const __m512 x0 = _mm512_loadu_ps(row), x1 = _mm512_loadu_ps(row + 16);
        for (int q = 0; q < kQ; ++q) {
            const __m512 c = _mm512_set1_ps(pg[static_cast<size_t>(q) * p_stride + static_cast<size_t>(t)]);
            acc[q][0] = _mm512_fmadd_ps(c, x0, acc[q][0]);
            acc[q][1] = _mm512_fmadd_ps(c, x1, acc[q][1]);
        }
    }
    for (int q = 0; q < kQ; ++q)
        for (int j = 0; j < 2; ++j) _mm512_storeu_ps(o + static_cast<size_t>(g0 + q) * head_dim + i0 + 16 * j, acc[q][j]);
}

/// The tiles of accumulate_values_tiled over one converted chunk: 512-bit tiles of 4
/// queries (avx512* sets).
GENIE_Q8_AVX512 void accumulate_chunk_avx512(const float* vf, int32_t len, int32_t head_dim, const float* p, size_t p_stride,
                                             int32_t t0, int32_t nq, float* o) {
    int32_t g0 = 0;
    for (; g0 + 4 <= nq; g0 += 4)
        for (int32_t i0 = 0; i0 < head_dim; i0 += kBlock) accumulate_tile_avx512<4>(vf, len, head_dim, p, p_stride, t0, g0, i0, o);
    for (; g0 < nq; ++g0)
        for (int32_t i0 = 0; i0 < head_dim; i0 += kBlock) accumulate_tile_avx512<1>(vf, len, head_dim, p, p_stride, t0, g0, i0, o);
}

/// The same with 256-bit tiles of 2 queries (avx2).
GENIE_Q8_AVX2 void accumulate_chunk_avx2(const float* vf, int32_t len, int32_t head_dim, const float* p, size_t p_stride,
                                         int32_t t0, int32_t nq, float* o) {
    int32_t g0 = 0;
    for (; g0 + 2 <= nq; g0 += 2)
        for (int32_t i0 = 0; i0 < head_dim; i0 += kBlock) accumulate_tile_avx2<2>(vf, len, head_dim, p, p_stride, t0, g0, i0, o);
    if (g0 < nq)
        for (int32_t i0 = 0; i0 < head_dim; i0 += kBlock) accumulate_tile_avx2<1>(vf, len, head_dim, p, p_stride, t0, g0, i0, o);
}

using ChunkFn = void (*)(const float*, int32_t, int32_t, const float*, size_t, int32_t, int32_t, float*);

/// accumulate_values_avx2 for many queries (a prompt's block): the outputs of a tile of
/// queries x 32 dimensions stay in registers over a chunk of 64 cells, each chunk of V
/// converted to d q once (exact in float) for all the tiles (`chunk`: the 512- or 256-bit
/// tiles above). The four-cell loop above loads and
/// stores every output vector per four cells and query (2.5 instructions per FMA with 32
/// queries; here 0.75). Each output is still o = fma(p_t, d q_t, o) over the cells in
/// order, from o's value: the same numbers (a 0.6B prompt's logits over an INT8 cache were
/// equal bit for bit with both tile widths). 0.6B pp64 at depth 2048, INT8 cache, against
/// the four-cell loop in the same build, 5 interleaved pairs: median 1.32x.
template <ChunkFn chunk>
GENIE_Q8_AVX2 void accumulate_values_tiled(const uint8_t* V, size_t row_bytes, int32_t n_kv, int32_t blocks_per_head, const float* p,
                                           size_t p_stride, int32_t nq, float* o, int32_t head_dim) {
    constexpr int32_t kChunk = 64;
    thread_local std::vector<float> vf_buffer;
    vf_buffer.resize(static_cast<size_t>(kChunk) * head_dim + 8);
    float* vf = vf_buffer.data();  // [kChunk][head_dim]
    for (int32_t t0 = 0; t0 < n_kv; t0 += kChunk) {
        const int32_t len = std::min(kChunk, n_kv - t0);
        for (int32_t t = 0; t < len; ++t) {
            const auto* blocks = reinterpret_cast<const BlockQ8_0*>(V + static_cast<size_t>(t0 + t) * row_bytes);
            for (int32_t b = 0; b < blocks_per_head; ++b) {
                const __m256 d = _mm256_set1_ps(fp16_to_fp32(blocks[b].d));
                for (int v = 0; v < kBlock / 8; ++v)
                    _mm256_storeu_ps(vf + static_cast<size_t>(t) * head_dim + b * kBlock + 8 * v,
                                     _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                                                          _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blocks[b].qs + 8 * v))))));
            }
        }
        chunk(vf, len, head_dim, p, p_stride, t0, nq, o);
    }
}
#pragma GCC diagnostic pop
#endif

/// o[g * head_dim + i] += p[g * p_stride + t] * V[t][i] for g < group, t < n_kv, i < head_dim,
/// where V[t] is the head's Q8_0 blocks in cell t (`row_bytes` apart: consecutive cells).
/// Four cells at a time: each output block is read and written once per four cells (the
/// output traffic, not the int8 loads, bounded the one-cell loop); each cell's block is
/// converted to d q (exact in float) once and shared by the group's query heads.
void accumulate_values(const uint8_t* V, size_t row_bytes, int32_t n_kv, int32_t blocks_per_head, const float* p,
                       size_t p_stride, int32_t group, float* o, int32_t head_dim) {
    float x4[4][kBlock];
    int32_t t0 = 0;
    for (; t0 + 4 <= n_kv; t0 += 4) {
        const BlockQ8_0* blocks[4];
        for (int j = 0; j < 4; ++j)
            blocks[j] = reinterpret_cast<const BlockQ8_0*>(V + static_cast<size_t>(t0 + j) * row_bytes);
        for (int32_t b = 0; b < blocks_per_head; ++b) {
            for (int j = 0; j < 4; ++j) {
                const float d = fp16_to_fp32(blocks[j][b].d);
                const int8_t* q = blocks[j][b].qs;
                for (int i = 0; i < kBlock; ++i) x4[j][i] = d * static_cast<float>(q[i]);
            }
            for (int32_t g = 0; g < group; ++g) {
                const float* pg = p + static_cast<size_t>(g) * p_stride + static_cast<size_t>(t0);
                const float c0 = pg[0], c1 = pg[1], c2 = pg[2], c3 = pg[3];
                float* og = o + static_cast<size_t>(g) * head_dim + static_cast<size_t>(b) * kBlock;
                for (int i = 0; i < kBlock; ++i) og[i] = (((og[i] + c0 * x4[0][i]) + c1 * x4[1][i]) + c2 * x4[2][i]) + c3 * x4[3][i];
            }
        }
    }
    accumulate_values_tail(V, row_bytes, t0, n_kv, blocks_per_head, p, p_stride, group, o, head_dim);
}

using AccumulateFn = void (*)(const uint8_t*, size_t, int32_t, int32_t, const float*, size_t, int32_t, float*, int32_t);

/// The 512-bit loops with the avx512* kernel sets, the AVX2 ones with avx2, the portable
/// one otherwise (GENIE_CPU_ISA=scalar included); the register-tiled form for many queries.
AccumulateFn pick_accumulate(const cpu::KernelSet& ks, bool many_queries) {
#if defined(__x86_64__)
    if (std::strncmp(ks.isa, "avx512", 6) == 0)
        return many_queries ? accumulate_values_tiled<accumulate_chunk_avx512> : accumulate_values_avx512;
    if (std::strcmp(ks.isa, "avx2") == 0)
        return many_queries ? accumulate_values_tiled<accumulate_chunk_avx2> : accumulate_values_avx2;
#endif
    (void)ks;
    (void)many_queries;
    return accumulate_values;
}

}  // namespace

void check_head_dim(int32_t head_dim) {
    if (head_dim <= 0 || head_dim % kBlock != 0)
        throw Error(ErrorCode::Unsupported,
                    fmt::format("an INT8 (Q8_0) KV cache needs a head size that is a multiple of {}; this model's is {} "
                                "(use an F16 or F32 KV cache)",
                                kBlock, head_dim));
}

void store(ThreadPool& pool, const Tensor& k, const Tensor& v, uint8_t* K, uint8_t* V, int32_t n_ctx, int32_t head_dim,
           int32_t first_pos) {
    const cpu::QuantizeFn quantize = quantizer(cpu::kernel_set());
    const auto n_head_kv = static_cast<int32_t>(k.cols / head_dim);
    const size_t head_bytes = static_cast<size_t>(head_dim / kBlock) * sizeof(BlockQ8_0);
    auto one = [&](int64_t r) {
        for (int32_t h = 0; h < n_head_kv; ++h) {  // blocks never straddle heads: same bytes as one call per row
            const size_t at = head_cell_offset(h, first_pos + static_cast<int32_t>(r), n_ctx, head_bytes);
            quantize(k.row(r) + static_cast<int64_t>(h) * head_dim, K + at, head_dim);
            quantize(v.row(r) + static_cast<int64_t>(h) * head_dim, V + at, head_dim);
        }
    };
    if (k.rows < 16) {
        for (int64_t r = 0; r < k.rows; ++r) one(r);
        return;
    }
    pool.parallel_for(k.rows, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) one(r);
    });
}

void attention(ThreadPool& pool, const Tensor& q, const uint8_t* K, const uint8_t* V, int32_t n_ctx, int32_t n_head_kv,
               int32_t head_dim, int32_t first_pos, int32_t n_head, float scale, int32_t window, Tensor& out) {
    const cpu::KernelSet& ks = cpu::kernel_set();
    const cpu::GemmFn dot = ks.gemm[static_cast<int>(DType::Q8_0)];
    const cpu::QuantizeFn quantize = quantizer(ks);
    const AccumulateFn accumulate = pick_accumulate(ks, false), accumulate_many = pick_accumulate(ks, true);
    const cpu::MathFns& math = cpu::math_fns();
    const int32_t group = n_head / n_head_kv;
    const int32_t blocks_per_head = head_dim / kBlock;
    const size_t head_bytes = static_cast<size_t>(blocks_per_head) * sizeof(BlockQ8_0);
    // Work items: a block of consecutive query rows x one KV head, covering the query heads
    // that share it (as the F16 path: about 32 queries, fewer when the block's scores would
    // pass 512 KiB), head-major with the longest block first. K·q of the block's queries is
    // one Q8_0 gemm (the kernel set's prefill kernels from 5 queries on), softmax per query
    // over its causal range (cells past a row's own position get probability 0), then one
    // V accumulation for all of them: each K and V row of the head is read once per block,
    // where one item per query row read them again for every row of a prompt.
    const int64_t n = q.rows;
    const int64_t n_kv_all = first_pos + n;
    const int64_t rows_per_block = attention_block_rows(group, n_kv_all);
    const int64_t blocks = (n + rows_per_block - 1) / rows_per_block;
    pool.parallel_for(blocks * n_head_kv, [&](int64_t begin, int64_t end) {
        thread_local std::vector<BlockQ8_0> q8;
        thread_local std::vector<float> scores, o;
        for (int64_t item = begin; item < end; ++item) {
            const int64_t block = blocks - 1 - item % blocks;  // longest first
            const int32_t hk = static_cast<int32_t>(item / blocks), h0 = hk * group;
            const int64_t r0 = block * rows_per_block, r1 = std::min(n, r0 + rows_per_block);
            const int32_t nq = static_cast<int32_t>((r1 - r0) * group);
            // cells [lo, lo + n_kv_max): from the block's first row's window start to its last row
            const int32_t lo = visible_cells(first_pos + static_cast<int32_t>(r0), window).first;
            const int32_t n_kv_max = first_pos + static_cast<int32_t>(r1) - lo;
            q8.resize(static_cast<size_t>(nq) * blocks_per_head);
            // A row's query heads of this group are adjacent: one quantize call per row.
            for (int64_t r = r0; r < r1; ++r)
                quantize(q.row(r) + static_cast<int64_t>(h0) * head_dim, q8.data() + static_cast<size_t>((r - r0) * group) * blocks_per_head,
                         static_cast<int64_t>(group) * head_dim);
            scores.resize(static_cast<size_t>(nq) * n_kv_max);
            // scores[i][t] = K[t] · q[i]
            dot(head_dim, K + head_cell_offset(hk, lo, n_ctx, head_bytes), head_bytes, n_kv_max, q8.data(), head_bytes, nq,
                scores.data(), static_cast<size_t>(n_kv_max));
            for (int32_t i = 0; i < nq; ++i) {
                // visible: cells [a, b) of the block's range (causal, and the window)
                const auto [cell0, cell_end] = visible_cells(first_pos + static_cast<int32_t>(r0) + i / group, window);
                const int32_t a = cell0 - lo, b = cell_end - lo, n_kv = b - a;
                float* row = scores.data() + static_cast<size_t>(i) * n_kv_max;
                float* sg = row + a;
                const float max = cpu::scaled_max(sg, n_kv, scale);
                const double sum = math.softmax_exp(n_kv, sg, sg, scale, max);  // as the F16 path
                const float inv = static_cast<float>(1.0 / sum);
                for (int32_t t = 0; t < n_kv; ++t) sg[t] *= inv;
                std::fill(row, row + a, 0.0f);
                std::fill(row + b, row + n_kv_max, 0.0f);
            }
            // o[i][d] = sum over cells t of p[i][t] V[t][d]; one row's group is contiguous in out
            float* dst = out.row(r0) + static_cast<int64_t>(h0) * head_dim;
            const bool direct = r1 - r0 == 1;
            if (!direct) o.resize(static_cast<size_t>(nq) * head_dim);
            float* oo = direct ? dst : o.data();
            std::fill(oo, oo + static_cast<size_t>(nq) * head_dim, 0.0f);
            (nq > 4 ? accumulate_many : accumulate)(V + head_cell_offset(hk, lo, n_ctx, head_bytes), head_bytes, n_kv_max,
                                                    blocks_per_head, scores.data(), static_cast<size_t>(n_kv_max), nq, oo, head_dim);
            if (!direct)
                for (int64_t r = r0; r < r1; ++r)
                    std::memcpy(out.row(r) + static_cast<int64_t>(h0) * head_dim, o.data() + static_cast<size_t>((r - r0) * group) * head_dim,
                                static_cast<size_t>(group) * head_dim * sizeof(float));
        }
    });
}

}  // namespace genie::backend::cpu_q8
