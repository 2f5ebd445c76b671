// The INT8 (Q8_0) KV cache of the CPU backend: storing keys/values and attention over them.
// Layout and arithmetic: docs/kv-cache.md.
#pragma once

#include "backend/backend.hpp"

#include <cstddef>
#include <cstdint>
#include <utility>

namespace genie {
class ThreadPool;
}

namespace genie::backend::cpu_q8 {

/// Query rows per work item of a prompt's attention (both cache types): a block of rows x
/// one KV head covers about 32 queries (rows x the GQA group), fewer when its scores
/// ([queries, n_kv] floats, n_kv the causal range of the last row) would pass 512 KiB.
inline int64_t attention_block_rows(int32_t group, int64_t n_kv) {
    int64_t rows = 32 / group > 1 ? 32 / group : 1;
    while (rows > 1 && rows * group * n_kv * 4 > (512 << 10)) rows /= 2;
    return rows;
}

/// The cells a query at position `pos` attends to, [first, end): causal, and with
/// window > 0 (a sliding-window layer) only the last `window` positions (llama.cpp's
/// standard SWA mask hides a key at p0 from a query at p1 when p1 - p0 >= window).
inline std::pair<int32_t, int32_t> visible_cells(int32_t pos, int32_t window) {
    return {window > 0 && pos >= window ? pos - window + 1 : 0, pos + 1};
}

/// Throws Unsupported unless a head of `head_dim` elements splits into whole Q8_0 blocks.
void check_head_dim(int32_t head_dim);

/// One layer's keys (or values) in memory: per KV head, n_ctx cells of head_dim / 32
/// Q8_0 blocks (head-major, so that attention reads a head's cells sequentially; a cell
/// row of every head, the KV file's form, is gathered by the cache's read_cells).
/// Byte offset of cell `cell` of head `head` from the layer's start:
inline size_t head_cell_offset(int32_t head, int32_t cell, int32_t n_ctx, size_t head_bytes) {
    return (static_cast<size_t>(head) * static_cast<size_t>(n_ctx) + static_cast<size_t>(cell)) * head_bytes;
}

/// Quantizes the n rows of k and v ([n, n_head_kv * head_dim] floats) to Q8_0 cells
/// first_pos.. of one layer (K, V: the layer's start; layout above).
void store(ThreadPool& pool, const Tensor& k, const Tensor& v, uint8_t* K, uint8_t* V, int32_t n_ctx, int32_t head_dim,
           int32_t first_pos);

/// Causal grouped-query attention of q's rows (positions first_pos..) over the Q8_0
/// cells of one layer (K, V: the layer's start; layout above), as Backend::attention. q is quantized to Q8_0 per
/// 32 elements and K·q runs on the kernel set's Q8_0 x Q8_0 dot product (llama.cpp's
/// arithmetic for a q8_0 K cache); softmax as the F16 path (vectorised exp in float, the
/// sum in double); V is dequantized block by block and accumulated in float. window: as
/// Backend::attention.
void attention(ThreadPool& pool, const Tensor& q, const uint8_t* K, const uint8_t* V, int32_t n_ctx, int32_t n_head_kv,
               int32_t head_dim, int32_t first_pos, int32_t n_head, float scale, int32_t window, Tensor& out);

}  // namespace genie::backend::cpu_q8
