// Block layouts of the quantized tensor formats, byte for byte as ggml defines
// them (ggml-common.h), so a tensor's bytes from a GGUF file can be read in place.
//
// Every half-precision field is stored as its raw IEEE binary16 bits (uint16_t)
// and converted with core/fp16.hpp. Offsets are little-endian, as in GGUF.
// Apart from BlockQ8_K (a float scale, 4-byte alignment) every block has 2-byte
// alignment, so a row of blocks needs a 2-byte (BlockQ8_K: 4-byte) aligned base.
#pragma once

#include <cstddef>
#include <cstdint>

namespace genie::quant {

/// Elements in one block of the "legacy" formats (Q4_0 ... Q8_1).
inline constexpr int kBlockSize32 = 32;
/// Elements in one super-block of the k-quant formats (ggml's QK_K).
inline constexpr int kQK_K = 256;
/// Bytes of packed 6-bit scales/mins in Q4_K and Q5_K (ggml's K_SCALE_SIZE).
inline constexpr int kKScaleSize = 12;

// ---- legacy formats: 32 elements per block ------------------------------------

/// Q4_0: x = (q - 8) * d.  [d:2][qs:16] = 18 bytes.
/// qs[j] holds element j in its low nibble and element j + 16 in its high nibble.
struct BlockQ4_0 {
    uint16_t d;
    uint8_t qs[kBlockSize32 / 2];
};

/// Q4_1: x = q * d + m.  [d:2][m:2][qs:16] = 20 bytes; nibbles as in Q4_0.
struct BlockQ4_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qs[kBlockSize32 / 2];
};

/// Q5_0: x = (q - 16) * d, q = nibble | (bit i of qh) << 4.  [d:2][qh:4][qs:16] = 22 bytes.
/// qh is a little-endian uint32 kept as bytes so the block stays 2-byte aligned.
struct BlockQ5_0 {
    uint16_t d;
    uint8_t qh[4];
    uint8_t qs[kBlockSize32 / 2];
};

/// Q5_1: x = q * d + m, q as in Q5_0.  [d:2][m:2][qh:4][qs:16] = 24 bytes.
struct BlockQ5_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qh[4];
    uint8_t qs[kBlockSize32 / 2];
};

/// Q8_0: x = q * d.  [d:2][qs:32] = 34 bytes.
struct BlockQ8_0 {
    uint16_t d;
    int8_t qs[kBlockSize32];
};

/// Q8_1: x = q * d; s = d * sum(q) (an activation format for dot products).
/// [d:2][s:2][qs:32] = 36 bytes.
struct BlockQ8_1 {
    uint16_t d;
    uint16_t s;
    int8_t qs[kBlockSize32];
};

// ---- k-quants: 256-element super-blocks -------------------------------------------

/// Q2_K: 16 groups of 16; x = d*(sc & 15) * q - dmin*(sc >> 4), q in 0..3.
/// [scales:16][qs:64][d:2][dmin:2] = 84 bytes. Element i uses scales[i/16];
/// its 2 bits are qs[32*(i/128) + i%32] >> (2*((i%128)/32)).
struct BlockQ2_K {
    uint8_t scales[kQK_K / 16];
    uint8_t qs[kQK_K / 4];
    uint16_t d;
    uint16_t dmin;
};

/// Q3_K: 16 groups of 16; x = d*(scale - 32) * (q - (high bit set ? 0 : 4)), q in 0..3.
/// [hmask:32][qs:64][scales:12][d:2] = 110 bytes. 16 six-bit scales: the low
/// nibbles in scales[0..7] (scale k < 8 low, k >= 8 high nibble of scales[k-8]),
/// the top 2 bits in scales[8 + k%4] >> (2*(k/4)). qs packed as in Q2_K; the
/// high bit of element i is hmask[i%32] bit (i/32).
struct BlockQ3_K {
    uint8_t hmask[kQK_K / 8];
    uint8_t qs[kQK_K / 4];
    uint8_t scales[12];
    uint16_t d;
};

/// Q4_K: 8 groups of 32; x = d*sc * q - dmin*m, q in 0..15, sc/m 6-bit.
/// [d:2][dmin:2][scales:12][qs:128] = 144 bytes. scales packs 8 (sc, m) pairs,
/// see get_scale_min_k4(). Group g's 32 nibbles are qs[32*(g/2) .. +32], low
/// nibbles for even g, high nibbles for odd g.
struct BlockQ4_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[kKScaleSize];
    uint8_t qs[kQK_K / 2];
};

/// Q5_K: Q4_K plus a fifth bit: element i's high bit is qh[i%32] bit (i/32).
/// [d:2][dmin:2][scales:12][qh:32][qs:128] = 176 bytes.
struct BlockQ5_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[kKScaleSize];
    uint8_t qh[kQK_K / 8];
    uint8_t qs[kQK_K / 2];
};

/// Q6_K: 16 groups of 16; x = d * scales[i/16] * (q - 32), q 6-bit.
/// [ql:128][qh:64][scales:16 (int8)][d:2] = 210 bytes. Low 4 bits in ql, top 2
/// bits in qh; see dequantize_q6_k_value() for the exact interleave.
struct BlockQ6_K {
    uint8_t ql[kQK_K / 2];
    uint8_t qh[kQK_K / 4];
    int8_t scales[kQK_K / 16];
    uint16_t d;
};

/// Q8_K: x = d * q (activation format for k-quant dot products); d is a float.
/// bsums[g] = sum of qs[16g .. 16g+15]. [d:4][qs:256][bsums:32] = 292 bytes.
struct BlockQ8_K {
    float d;
    int8_t qs[kQK_K];
    int16_t bsums[kQK_K / 16];
};

static_assert(sizeof(BlockQ4_0) == 18 && offsetof(BlockQ4_0, qs) == 2);
static_assert(sizeof(BlockQ4_1) == 20 && offsetof(BlockQ4_1, qs) == 4);
static_assert(sizeof(BlockQ5_0) == 22 && offsetof(BlockQ5_0, qh) == 2 && offsetof(BlockQ5_0, qs) == 6);
static_assert(sizeof(BlockQ5_1) == 24 && offsetof(BlockQ5_1, qh) == 4 && offsetof(BlockQ5_1, qs) == 8);
static_assert(sizeof(BlockQ8_0) == 34 && offsetof(BlockQ8_0, qs) == 2);
static_assert(sizeof(BlockQ8_1) == 36 && offsetof(BlockQ8_1, qs) == 4);
static_assert(sizeof(BlockQ2_K) == 84 && offsetof(BlockQ2_K, d) == 80);
static_assert(sizeof(BlockQ3_K) == 110 && offsetof(BlockQ3_K, scales) == 96 && offsetof(BlockQ3_K, d) == 108);
static_assert(sizeof(BlockQ4_K) == 144 && offsetof(BlockQ4_K, qs) == 16);
static_assert(sizeof(BlockQ5_K) == 176 && offsetof(BlockQ5_K, qh) == 16 && offsetof(BlockQ5_K, qs) == 48);
static_assert(sizeof(BlockQ6_K) == 210 && offsetof(BlockQ6_K, scales) == 192 && offsetof(BlockQ6_K, d) == 208);
static_assert(sizeof(BlockQ8_K) == 292 && offsetof(BlockQ8_K, bsums) == 260);

}  // namespace genie::quant
