// Reference dequantization of every format libgenie reads, as GENIE_HD functions
// shared by the CPU row API (quant/quant.hpp) and the CUDA kernels (cuda/).
//
// Generic code sees each format as a "block" type with BlockTraits<Block>
// (elements per block, DType) and an overload dequantize_value(block, i) giving
// element i as a float. Plain F32/F16/BF16 are one-element blocks. The per-format
// math lives in dequantize_legacy.hpp and dequantize_kquants.hpp.
#pragma once

#include <genie/types.hpp>

#include "core/fp16.hpp"
#include "core/hd.hpp"
#include "quant/blocks.hpp"
#include "quant/dequantize_kquants.hpp"
#include "quant/dequantize_legacy.hpp"

#include <cstdint>

namespace genie::quant {

/// One element of an F32 tensor, seen as a block of one.
struct ElementF32 {
    float value;
};
/// One element of an F16 tensor: IEEE binary16 bits.
struct ElementF16 {
    uint16_t bits;
};
/// One element of a BF16 tensor: bfloat16 bits.
struct ElementBF16 {
    uint16_t bits;
};
static_assert(sizeof(ElementF32) == 4 && sizeof(ElementF16) == 2 && sizeof(ElementBF16) == 2);

GENIE_HD float dequantize_value(const ElementF32& e, int) { return e.value; }
GENIE_HD float dequantize_value(const ElementF16& e, int) { return fp16_to_fp32(e.bits); }
GENIE_HD float dequantize_value(const ElementBF16& e, int) { return bf16_to_fp32(e.bits); }
GENIE_HD float dequantize_value(const BlockQ4_0& b, int i) { return dequantize_q4_0_value(b, i); }
GENIE_HD float dequantize_value(const BlockQ4_1& b, int i) { return dequantize_q4_1_value(b, i); }
GENIE_HD float dequantize_value(const BlockQ5_0& b, int i) { return dequantize_q5_0_value(b, i); }
GENIE_HD float dequantize_value(const BlockQ5_1& b, int i) { return dequantize_q5_1_value(b, i); }
GENIE_HD float dequantize_value(const BlockQ8_0& b, int i) { return dequantize_q8_0_value(b, i); }
GENIE_HD float dequantize_value(const BlockQ2_K& b, int i) { return dequantize_q2_k_value(b, i); }
GENIE_HD float dequantize_value(const BlockQ3_K& b, int i) { return dequantize_q3_k_value(b, i); }
GENIE_HD float dequantize_value(const BlockQ4_K& b, int i) { return dequantize_q4_k_value(b, i); }
GENIE_HD float dequantize_value(const BlockQ5_K& b, int i) { return dequantize_q5_k_value(b, i); }
GENIE_HD float dequantize_value(const BlockQ6_K& b, int i) { return dequantize_q6_k_value(b, i); }
GENIE_HD float dequantize_value(const BlockQ8_K& b, int i) { return dequantize_q8_k_value(b, i); }

/// Compile-time facts of a block type: elements per block and its DType.
template <typename Block>
struct BlockTraits;

#define GENIE_QUANT_BLOCK_TRAITS(Block, n, type)          \
    template <>                                           \
    struct BlockTraits<Block> {                           \
        static constexpr int elements = n;                \
        static constexpr DType dtype = DType::type;       \
    }
GENIE_QUANT_BLOCK_TRAITS(ElementF32, 1, F32);
GENIE_QUANT_BLOCK_TRAITS(ElementF16, 1, F16);
GENIE_QUANT_BLOCK_TRAITS(ElementBF16, 1, BF16);
GENIE_QUANT_BLOCK_TRAITS(BlockQ4_0, kBlockSize32, Q4_0);
GENIE_QUANT_BLOCK_TRAITS(BlockQ4_1, kBlockSize32, Q4_1);
GENIE_QUANT_BLOCK_TRAITS(BlockQ5_0, kBlockSize32, Q5_0);
GENIE_QUANT_BLOCK_TRAITS(BlockQ5_1, kBlockSize32, Q5_1);
GENIE_QUANT_BLOCK_TRAITS(BlockQ8_0, kBlockSize32, Q8_0);
GENIE_QUANT_BLOCK_TRAITS(BlockQ8_1, kBlockSize32, Q8_1);
GENIE_QUANT_BLOCK_TRAITS(BlockQ2_K, kQK_K, Q2_K);
GENIE_QUANT_BLOCK_TRAITS(BlockQ3_K, kQK_K, Q3_K);
GENIE_QUANT_BLOCK_TRAITS(BlockQ4_K, kQK_K, Q4_K);
GENIE_QUANT_BLOCK_TRAITS(BlockQ5_K, kQK_K, Q5_K);
GENIE_QUANT_BLOCK_TRAITS(BlockQ6_K, kQK_K, Q6_K);
GENIE_QUANT_BLOCK_TRAITS(BlockQ8_K, kQK_K, Q8_K);
#undef GENIE_QUANT_BLOCK_TRAITS

/// Dequantizes `n_blocks` consecutive blocks to n_blocks * elements floats.
template <typename Block>
GENIE_HD void dequantize_blocks(const Block* blocks, float* out, int64_t n_blocks) {
    constexpr int n = BlockTraits<Block>::elements;
    for (int64_t b = 0; b < n_blocks; ++b)
        for (int i = 0; i < n; ++i) out[b * n + i] = dequantize_value(blocks[b], i);
}

/// A type tag carrying a block type through visit_dequantizable().
template <typename Block>
struct BlockTag {
    using type = Block;
};

/// Calls visitor(BlockTag<Block>{}) with the block type of `type` and returns
/// true, or returns false (without calling) if `type` has no dequantizer.
/// Host-side dispatch for the CPU row API and the CUDA kernel launchers.
template <typename Visitor>
bool visit_dequantizable(DType type, Visitor&& visitor) {
    switch (type) {
        case DType::F32: visitor(BlockTag<ElementF32>{}); return true;
        case DType::F16: visitor(BlockTag<ElementF16>{}); return true;
        case DType::BF16: visitor(BlockTag<ElementBF16>{}); return true;
        case DType::Q4_0: visitor(BlockTag<BlockQ4_0>{}); return true;
        case DType::Q4_1: visitor(BlockTag<BlockQ4_1>{}); return true;
        case DType::Q5_0: visitor(BlockTag<BlockQ5_0>{}); return true;
        case DType::Q5_1: visitor(BlockTag<BlockQ5_1>{}); return true;
        case DType::Q8_0: visitor(BlockTag<BlockQ8_0>{}); return true;
        case DType::Q2_K: visitor(BlockTag<BlockQ2_K>{}); return true;
        case DType::Q3_K: visitor(BlockTag<BlockQ3_K>{}); return true;
        case DType::Q4_K: visitor(BlockTag<BlockQ4_K>{}); return true;
        case DType::Q5_K: visitor(BlockTag<BlockQ5_K>{}); return true;
        case DType::Q6_K: visitor(BlockTag<BlockQ6_K>{}); return true;
        case DType::Q8_K: visitor(BlockTag<BlockQ8_K>{}); return true;
        default: return false;
    }
}

}  // namespace genie::quant
