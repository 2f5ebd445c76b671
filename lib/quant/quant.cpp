// Row API: validates the arguments and dispatches to the per-block reference code.
#include "quant/quant.hpp"

#include <genie/error.hpp>

#include "core/fp16.hpp"
#include "quant/dequantize.hpp"
#include "quant/quantize.hpp"

#include <fmt/format.h>

#include <string>

namespace genie::quant {
namespace {

/// Calls visitor(BlockTag<Block>{}) for a type quantize_row() handles; false otherwise.
template <typename Visitor>
bool visit_quantizable(DType type, Visitor&& visitor) {
    switch (type) {
        case DType::F32: visitor(BlockTag<ElementF32>{}); return true;
        case DType::F16: visitor(BlockTag<ElementF16>{}); return true;
        case DType::BF16: visitor(BlockTag<ElementBF16>{}); return true;
        case DType::Q4_0: visitor(BlockTag<BlockQ4_0>{}); return true;
        case DType::Q4_1: visitor(BlockTag<BlockQ4_1>{}); return true;
        case DType::Q5_0: visitor(BlockTag<BlockQ5_0>{}); return true;
        case DType::Q5_1: visitor(BlockTag<BlockQ5_1>{}); return true;
        case DType::Q8_0: visitor(BlockTag<BlockQ8_0>{}); return true;
        case DType::Q8_1: visitor(BlockTag<BlockQ8_1>{}); return true;
        case DType::Q2_K: visitor(BlockTag<BlockQ2_K>{}); return true;
        case DType::Q3_K: visitor(BlockTag<BlockQ3_K>{}); return true;
        case DType::Q4_K: visitor(BlockTag<BlockQ4_K>{}); return true;
        case DType::Q5_K: visitor(BlockTag<BlockQ5_K>{}); return true;
        case DType::Q6_K: visitor(BlockTag<BlockQ6_K>{}); return true;
        case DType::Q8_K: visitor(BlockTag<BlockQ8_K>{}); return true;
        default: return false;
    }
}

// The plain types "quantize" by conversion.
void quantize_block(const float* src, ElementF32& dst) { dst.value = *src; }
void quantize_block(const float* src, ElementF16& dst) { dst.bits = fp32_to_fp16(*src); }
void quantize_block(const float* src, ElementBF16& dst) { dst.bits = fp32_to_bf16(*src); }

std::string type_label(DType type) {
    const auto info = dtype_info(static_cast<uint32_t>(type));
    return info ? std::string(info->name) : fmt::format("type id {}", static_cast<uint32_t>(type));
}

// Returns the number of blocks in a row of n elements, or throws.
int64_t checked_block_count(DType type, int64_t n, const char* operation) {
    const auto info = dtype_info(static_cast<uint32_t>(type));
    if (!info || info->block_bytes == 0)
        throw Error(ErrorCode::Unsupported, fmt::format("{}: unknown tensor type {}", operation, type_label(type)));
    if (n < 0 || n % info->block_size != 0)
        throw Error(ErrorCode::InvalidArgument,
                    fmt::format("{}: row length {} is not a non-negative multiple of the {} block size {}",
                                operation, n, info->name, info->block_size));
    return n / info->block_size;
}

}  // namespace

bool can_dequantize(DType type) noexcept {
    return visit_dequantizable(type, [](auto) {});
}

bool can_quantize(DType type) noexcept {
    return visit_quantizable(type, [](auto) {});
}

size_t row_bytes(DType type, int64_t n) {
    const int64_t blocks = checked_block_count(type, n, "row_bytes");
    return static_cast<size_t>(blocks) * dtype_info(type).block_bytes;
}

void dequantize_row(DType type, const void* src, float* dst, int64_t n) {
    if (!can_dequantize(type))
        throw Error(ErrorCode::Unsupported, fmt::format("dequantize_row: {} cannot be dequantized", type_label(type)));
    const int64_t n_blocks = checked_block_count(type, n, "dequantize_row");
    visit_dequantizable(type, [&](auto tag) {
        using Block = typename decltype(tag)::type;
        dequantize_blocks(static_cast<const Block*>(src), dst, n_blocks);
    });
}

void quantize_row(DType type, const float* src, void* dst, int64_t n) {
    if (!can_quantize(type))
        throw Error(ErrorCode::Unsupported, fmt::format("quantize_row: {} cannot be quantized", type_label(type)));
    const int64_t n_blocks = checked_block_count(type, n, "quantize_row");
    visit_quantizable(type, [&](auto tag) {
        using Block = typename decltype(tag)::type;
        constexpr int elements = BlockTraits<Block>::elements;
        Block* blocks = static_cast<Block*>(dst);
        for (int64_t b = 0; b < n_blocks; ++b) quantize_block(src + b * elements, blocks[b]);
    });
}

}  // namespace genie::quant
