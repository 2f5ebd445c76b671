#include "quant/vec_dot.hpp"

#include <genie/error.hpp>

#include <fmt/format.h>

namespace genie::quant {

bool can_vec_dot(DType type) noexcept {
    switch (type) {
        case DType::F32: case DType::F16: case DType::BF16:
        case DType::Q4_0: case DType::Q4_1: case DType::Q5_0: case DType::Q5_1: case DType::Q8_0:
        case DType::Q2_K: case DType::Q3_K: case DType::Q4_K: case DType::Q5_K: case DType::Q6_K:
            return true;
        default: return false;
    }
}

float vec_dot(DType type, int64_t n, const void* x, const void* y) {
    switch (type) {
        case DType::F32: return vec_dot_f32(n, static_cast<const float*>(x), static_cast<const float*>(y));
        case DType::F16: return vec_dot_f16(n, static_cast<const uint16_t*>(x), static_cast<const uint16_t*>(y));
        case DType::BF16: return vec_dot_bf16(n, static_cast<const uint16_t*>(x), static_cast<const uint16_t*>(y));
        case DType::Q4_0: return vec_dot_q4_0_q8_0(n, static_cast<const BlockQ4_0*>(x), static_cast<const BlockQ8_0*>(y));
        case DType::Q4_1: return vec_dot_q4_1_q8_1(n, static_cast<const BlockQ4_1*>(x), static_cast<const BlockQ8_1*>(y));
        case DType::Q5_0: return vec_dot_q5_0_q8_0(n, static_cast<const BlockQ5_0*>(x), static_cast<const BlockQ8_0*>(y));
        case DType::Q5_1: return vec_dot_q5_1_q8_1(n, static_cast<const BlockQ5_1*>(x), static_cast<const BlockQ8_1*>(y));
        case DType::Q8_0: return vec_dot_q8_0_q8_0(n, static_cast<const BlockQ8_0*>(x), static_cast<const BlockQ8_0*>(y));
        case DType::Q2_K: return vec_dot_q2_k_q8_k(n, static_cast<const BlockQ2_K*>(x), static_cast<const BlockQ8_K*>(y));
        case DType::Q3_K: return vec_dot_q3_k_q8_k(n, static_cast<const BlockQ3_K*>(x), static_cast<const BlockQ8_K*>(y));
        case DType::Q4_K: return vec_dot_q4_k_q8_k(n, static_cast<const BlockQ4_K*>(x), static_cast<const BlockQ8_K*>(y));
        case DType::Q5_K: return vec_dot_q5_k_q8_k(n, static_cast<const BlockQ5_K*>(x), static_cast<const BlockQ8_K*>(y));
        case DType::Q6_K: return vec_dot_q6_k_q8_k(n, static_cast<const BlockQ6_K*>(x), static_cast<const BlockQ8_K*>(y));
        default:
            throw Error(ErrorCode::Unsupported,
                        fmt::format("no reference dot product for weights of type {}", dtype_name(type)));
    }
}

}  // namespace genie::quant
