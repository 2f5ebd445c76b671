// GELU (tanh approximation) as ggml's CPU backend computes it, shared by the CPU backend
// and cuda/ (GENIE_HD), so both run the rounding the CPU tests pin down.
//
// ggml-cpu is built with GGML_GELU_FP16: ggml_vec_gelu_f32 / ggml_vec_geglu_f32 return 0
// for x <= -10 and x for x >= 10, and otherwise look the value up in a table indexed by
// x rounded to F16, whose entries are gelu(that F16 value) rounded to F16. The GELU of a
// Gemma feed-forward therefore carries F16 precision in llama.cpp; matching it needs the
// same two roundings, not a more exact GELU.
#pragma once

#include "core/fp16.hpp"
#include "core/hd.hpp"

#include <cmath>

namespace genie {

/// 0.5 x (1 + tanh(sqrt(2 / pi) x (1 + 0.044715 x^2))) in float, in ggml_gelu_f32's
/// operation order.
GENIE_HD float gelu_tanh(float x) {
    const float coef_a = 0.044715f;
    const float sqrt_2_over_pi = 0.79788456080286535587989211986876f;
    return 0.5f * x * (1.0f + tanhf(sqrt_2_over_pi * x * (1.0f + coef_a * x * x)));
}

/// The table entry of ggml's GELU for the F16 value with bits h: gelu(h) rounded to F16.
GENIE_HD uint16_t gelu_f16_table_value(uint16_t h) { return fp32_to_fp16(gelu_tanh(fp16_to_fp32(h))); }

/// ggml-cpu's GELU of one float (GGML_GELU_FP16 build): see the file comment.
GENIE_HD float gelu_ggml(float x) {
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    return fp16_to_fp32(gelu_f16_table_value(fp32_to_fp16(x)));
}

/// One element of ggml_vec_geglu_f32: gelu_ggml(x) * u, except that x <= -10 gives +0
/// whatever the sign of u (ggml stores 0.0f there, not 0 * u).
GENIE_HD float geglu_ggml(float x, float u) { return x <= -10.0f ? 0.0f : gelu_ggml(x) * u; }

}  // namespace genie
