// Reference quantizers of the 32-element formats, following ggml's
// quantize_row_q{4_0,4_1,5_0,5_1,8_0,8_1}_ref operation for operation.
#include "quant/quantize.hpp"

#include "core/fp16.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>

namespace genie::quant {
namespace {

constexpr int kHalf = kBlockSize32 / 2;

// The value of largest magnitude, keeping its sign; the first one wins a tie.
float signed_absmax(const float* x) {
    float amax = 0.0f;
    float max = 0.0f;
    for (int j = 0; j < kBlockSize32; ++j) {
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    return max;
}

void min_max(const float* x, float& min, float& max) {
    min = FLT_MAX;
    max = -FLT_MAX;
    for (int j = 0; j < kBlockSize32; ++j) {
        if (x[j] < min) min = x[j];
        if (x[j] > max) max = x[j];
    }
}

// Packs 32 quants (< 16 after masking) as nibbles: byte j = q[j] | q[j + 16] << 4.
void pack_nibbles(const uint8_t* q, uint8_t* qs) {
    for (int j = 0; j < kHalf; ++j) qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | ((q[j + kHalf] & 0x0F) << 4));
}

// Collects bit 4 of each of the 32 quants into a little-endian uint32.
void pack_high_bits(const uint8_t* q, uint8_t* qh) {
    uint32_t bits = 0;
    for (int j = 0; j < kBlockSize32; ++j) bits |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
    for (int b = 0; b < 4; ++b) qh[b] = static_cast<uint8_t>(bits >> (8 * b));
}

// ggml converts with a C cast to int8_t (truncation toward zero), then clamps.
uint8_t truncate_clamped(float value, int max_q) {
    return static_cast<uint8_t>(std::min(max_q, static_cast<int>(static_cast<int8_t>(value))));
}

// Q4_0/Q5_0: d = max / -(2^(bits-1)), q = trunc(x/d + 2^(bits-1) + 0.5) clamped.
void quantize_symmetric(const float* x, int bits, uint16_t& d_bits, uint8_t* q) {
    const int offset = 1 << (bits - 1);
    const int max_q = (1 << bits) - 1;
    const float d = signed_absmax(x) / static_cast<float>(-offset);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    d_bits = fp32_to_fp16(d);
    const float bias = static_cast<float>(offset) + 0.5f;  // 8.5f or 16.5f, both exact
    for (int j = 0; j < kBlockSize32; ++j) q[j] = truncate_clamped(x[j] * id + bias, max_q);
}

// Q4_1/Q5_1: d = (max - min) / (2^bits - 1), m = min, q = trunc((x - min)/d + 0.5).
void quantize_affine(const float* x, int bits, uint16_t& d_bits, uint16_t& m_bits, uint8_t* q, bool clamp) {
    float min, max;
    min_max(x, min, max);
    const float d = (max - min) / static_cast<float>((1 << bits) - 1);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    d_bits = fp32_to_fp16(d);
    m_bits = fp32_to_fp16(min);
    for (int j = 0; j < kBlockSize32; ++j) {
        const float v = (x[j] - min) * id + 0.5f;
        // ggml clamps Q4_1 (int8 cast, MIN 15) but not Q5_1 (plain uint8 cast).
        q[j] = clamp ? truncate_clamped(v, 15) : static_cast<uint8_t>(v);
    }
}

// Q8_0/Q8_1 quants: d = amax / 127, q = round half away from zero (roundf).
float quantize_q8(const float* x, int8_t* qs) {
    float amax = 0.0f;
    for (int j = 0; j < kBlockSize32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < kBlockSize32; ++j) qs[j] = static_cast<int8_t>(std::round(x[j] * id));
    return d;
}

}  // namespace

void quantize_block(const float* src, BlockQ4_0& dst) {
    uint8_t q[kBlockSize32];
    quantize_symmetric(src, 4, dst.d, q);
    pack_nibbles(q, dst.qs);
}

void quantize_block(const float* src, BlockQ4_1& dst) {
    uint8_t q[kBlockSize32];
    quantize_affine(src, 4, dst.d, dst.m, q, /*clamp=*/true);
    pack_nibbles(q, dst.qs);
}

void quantize_block(const float* src, BlockQ5_0& dst) {
    uint8_t q[kBlockSize32];
    quantize_symmetric(src, 5, dst.d, q);
    pack_nibbles(q, dst.qs);
    pack_high_bits(q, dst.qh);
}

void quantize_block(const float* src, BlockQ5_1& dst) {
    uint8_t q[kBlockSize32];
    quantize_affine(src, 5, dst.d, dst.m, q, /*clamp=*/false);
    pack_nibbles(q, dst.qs);
    pack_high_bits(q, dst.qh);
}

void quantize_block(const float* src, BlockQ8_0& dst) { dst.d = fp32_to_fp16(quantize_q8(src, dst.qs)); }

void quantize_block(const float* src, BlockQ8_1& dst) {
    const float d = quantize_q8(src, dst.qs);
    int sum = 0;
    for (int j = 0; j < kBlockSize32; ++j) sum += dst.qs[j];
    dst.d = fp32_to_fp16(d);
    dst.s = fp32_to_fp16(static_cast<float>(sum) * d);
}

}  // namespace genie::quant
