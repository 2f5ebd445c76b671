// Random tensor rows for the quant tests (unit and GPU): random bytes with the
// scale fields replaced by finite, moderate values so that comparisons compare
// numbers rather than NaN/inf, plus a few blocks with extreme scales.
#pragma once

#include <genie/types.hpp>

#include "core/fp16.hpp"

#include <cstdint>
#include <cstring>
#include <iterator>
#include <random>
#include <vector>

namespace genie::test {

/// Byte offsets of the fp16 scale fields inside one block of `type` (ggml layouts).
inline std::vector<size_t> half_scale_offsets(DType type) {
    switch (type) {
        case DType::Q4_0:
        case DType::Q5_0:
        case DType::Q8_0: return {0};
        case DType::Q4_1:
        case DType::Q5_1:
        case DType::Q8_1:
        case DType::Q4_K:
        case DType::Q5_K: return {0, 2};
        case DType::Q2_K: return {80, 82};
        case DType::Q3_K: return {108};
        case DType::Q6_K: return {208};
        default: return {};
    }
}

/// A random finite half: sign random, magnitude 2^-12 .. 2^4, or, with
/// `extreme`, one of zero, the smallest subnormal, a subnormal, or the largest finite.
inline uint16_t random_scale_half(std::mt19937& rng, bool extreme) {
    if (extreme) {
        static constexpr uint16_t kExtremes[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x7bff, 0xfbff, 0x0400};
        return kExtremes[std::uniform_int_distribution<size_t>(0, std::size(kExtremes) - 1)(rng)];
    }
    const uint16_t sign = std::uniform_int_distribution<int>(0, 1)(rng) ? 0x8000 : 0;
    const uint16_t exponent = static_cast<uint16_t>(std::uniform_int_distribution<int>(15 - 12, 15 + 4)(rng));
    const uint16_t mantissa = static_cast<uint16_t>(std::uniform_int_distribution<int>(0, 0x3ff)(rng));
    return static_cast<uint16_t>(sign | (exponent << 10) | mantissa);
}

/// `n_blocks` random blocks of a block-quantized `type` (or n_blocks random
/// elements of F32/F16/BF16, finite except for a sprinkling of inf and NaN in
/// F16/BF16). Every 16th block gets extreme scales.
inline std::vector<uint8_t> random_blocks(DType type, size_t n_blocks, std::mt19937& rng) {
    const DTypeInfo info = dtype_info(type);
    std::vector<uint8_t> bytes(n_blocks * info.block_bytes);
    std::uniform_int_distribution<int> byte(0, 255);
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(byte(rng));

    if (type == DType::F32) {
        std::normal_distribution<float> normal(0.0f, 10.0f);
        for (size_t i = 0; i < n_blocks; ++i) {
            const float v = normal(rng);
            std::memcpy(&bytes[4 * i], &v, 4);
        }
        return bytes;
    }
    if (type == DType::F16 || type == DType::BF16) return bytes;  // every bit pattern is a valid input

    for (size_t b = 0; b < n_blocks; ++b) {
        uint8_t* block = &bytes[b * info.block_bytes];
        const bool extreme = b % 16 == 15;
        for (size_t offset : half_scale_offsets(type)) {
            const uint16_t h = random_scale_half(rng, extreme);
            std::memcpy(block + offset, &h, 2);
        }
        if (type == DType::Q8_K) {  // float scale
            const float d = fp16_to_fp32(random_scale_half(rng, extreme));
            std::memcpy(block, &d, 4);
        }
    }
    return bytes;
}

/// Float bits, for exact comparison (two NaNs compare equal via is_same_float).
inline bool is_same_float(float a, float b) {
    return f32_bits(a) == f32_bits(b) || (a != a && b != b);
}

}  // namespace genie::test
