// Block layouts of the quantized formats, byte-compatible with llama.cpp's
// ggml-common.h (GGUF files store these structs back to back).
#pragma once

#include <cstdint>

namespace cortex {

using half_bits = uint16_t;  // IEEE binary16 stored as its bits

constexpr int qk4_0 = 32;
struct block_q4_0 {
  half_bits d;            // scale
  uint8_t qs[qk4_0 / 2];  // nibbles: element j in low nibble of qs[j], j+16 in high
};
static_assert(sizeof(block_q4_0) == 18, "q4_0 layout");

struct block_q4_1 {
  half_bits d, m;
  uint8_t qs[16];
};
static_assert(sizeof(block_q4_1) == 20, "q4_1 layout");

struct block_q5_0 {
  half_bits d;
  uint8_t qh[4];   // 5th bits
  uint8_t qs[16];  // low 4 bits
};
static_assert(sizeof(block_q5_0) == 22, "q5_0 layout");

struct block_q5_1 {
  half_bits d, m;
  uint8_t qh[4];
  uint8_t qs[16];
};
static_assert(sizeof(block_q5_1) == 24, "q5_1 layout");

constexpr int qk8_0 = 32;
struct block_q8_0 {
  half_bits d;
  int8_t qs[qk8_0];
};
static_assert(sizeof(block_q8_0) == 34, "q8_0 layout");

// Super-blocks of 256 elements (k-quants).
constexpr int qk_k = 256;
constexpr int k_scale_size = 12;

struct block_q2_k {
  uint8_t scales[qk_k / 16];  // 4-bit scales and mins
  uint8_t qs[qk_k / 4];       // 2-bit quants
  half_bits d, dmin;
};
static_assert(sizeof(block_q2_k) == 84, "q2_k layout");

struct block_q3_k {
  uint8_t hmask[qk_k / 8];
  uint8_t qs[qk_k / 4];
  uint8_t scales[12];
  half_bits d;
};
static_assert(sizeof(block_q3_k) == 110, "q3_k layout");

struct block_q4_k {
  half_bits d;     // super-block scale for scales
  half_bits dmin;  // super-block scale for mins
  uint8_t scales[k_scale_size];  // 8 sub-block scales and mins, 6 bits each
  uint8_t qs[qk_k / 2];
};
static_assert(sizeof(block_q4_k) == 144, "q4_k layout");

struct block_q5_k {
  half_bits d, dmin;
  uint8_t scales[k_scale_size];
  uint8_t qh[qk_k / 8];
  uint8_t qs[qk_k / 2];
};
static_assert(sizeof(block_q5_k) == 176, "q5_k layout");

struct block_q6_k {
  uint8_t ql[qk_k / 2];      // low 4 bits
  uint8_t qh[qk_k / 4];      // high 2 bits
  int8_t scales[qk_k / 16];  // 8-bit sub-block scales
  half_bits d;
};
static_assert(sizeof(block_q6_k) == 210, "q6_k layout");

// ---- non-linear codes (a 16-entry value table, kernels/quant_tables.hpp) ----

// iq4_nl: 32 elements, element j in the low nibble of qs[j], j + 16 in the
// high nibble; value d * kvalues_iq4nl[code].
struct block_iq4_nl {
  half_bits d;
  uint8_t qs[16];
};
static_assert(sizeof(block_iq4_nl) == 18, "iq4_nl layout");

// iq4_xs: 8 sub-blocks of 32 (codes as iq4_nl, sub-block s at qs[16 s]),
// each with a 6-bit scale: low 4 bits in nibble s % 2 of scales_l[s / 2],
// high 2 bits at bit 2 s of scales_h; value d * (scale - 32) * kvalues[code].
struct block_iq4_xs {
  half_bits d;
  uint16_t scales_h;
  uint8_t scales_l[qk_k / 64];
  uint8_t qs[qk_k / 2];
};
static_assert(sizeof(block_iq4_xs) == 136, "iq4_xs layout");

// mxfp4 (OCP microscaling): 32 elements, one E8M0 exponent byte e (no f16
// scale), codes as iq4_nl; value kvalues_mxfp4[code] * 2^(e - 128) (the
// table holds E2M1 values doubled).
struct block_mxfp4 {
  uint8_t e;
  uint8_t qs[16];
};
static_assert(sizeof(block_mxfp4) == 17, "mxfp4 layout");

// ---- lattice codebooks (kernels/quant_grids.hpp): super-blocks of 256 -------

struct block_iq2_xxs {
  half_bits d;
  uint16_t qs[qk_k / 8];  // per 32: 4 grid indices (bytes), then 4 x 7 sign bits and a 4-bit scale
};
static_assert(sizeof(block_iq2_xxs) == 66, "iq2_xxs layout");

struct block_iq2_xs {
  half_bits d;
  uint16_t qs[qk_k / 8];       // 9-bit grid index and 7 sign bits per 8
  uint8_t scales[qk_k / 32];   // two 4-bit scales per 32
};
static_assert(sizeof(block_iq2_xs) == 74, "iq2_xs layout");

struct block_iq2_s {
  half_bits d;
  uint8_t qs[qk_k / 4];       // low 8 bits of the grid indices, then the sign bytes
  uint8_t qh[qk_k / 32];      // high 2 bits of the 4 indices of each 32
  uint8_t scales[qk_k / 32];  // two 4-bit scales per 32
};
static_assert(sizeof(block_iq2_s) == 82, "iq2_s layout");

struct block_iq3_xxs {
  half_bits d;
  uint8_t qs[3 * qk_k / 8];  // 64 grid indices, then per 32 a word of 4 x 7 sign bits and a 4-bit scale
};
static_assert(sizeof(block_iq3_xxs) == 98, "iq3_xxs layout");

struct block_iq3_s {
  half_bits d;
  uint8_t qs[qk_k / 4];        // low 8 bits of the grid indices
  uint8_t qh[qk_k / 32];       // their 9th bits
  uint8_t signs[qk_k / 8];     // one sign bit per element
  uint8_t scales[qk_k / 64];   // two 4-bit scales per 64
};
static_assert(sizeof(block_iq3_s) == 110, "iq3_s layout");

struct block_iq1_s {
  half_bits d;
  uint8_t qs[qk_k / 8];     // low 8 bits of the grid indices
  uint16_t qh[qk_k / 32];   // per 32: 4 x 3 high index bits, a 3-bit scale, the delta's sign
};
static_assert(sizeof(block_iq1_s) == 50, "iq1_s layout");

// iq1_m has no field for its f16 scale: its 16 bits are the top nibbles of
// the four 16-bit words of scales.
struct block_iq1_m {
  uint8_t qs[qk_k / 8];      // low 8 bits of the grid indices
  uint8_t qh[qk_k / 16];     // per 2 x 8: 3 high index bits and the delta's sign, twice
  uint8_t scales[qk_k / 32]; // 3-bit scales, and the f16 scale's nibbles
};
static_assert(sizeof(block_iq1_m) == 56, "iq1_m layout");

// Activations quantized for k-quant dot products.
struct block_q8_k {
  float d;
  int8_t qs[qk_k];
  int16_t bsums[qk_k / 16];  // sums of each group of 16 qs
};
static_assert(sizeof(block_q8_k) == 292, "q8_k layout");

}  // namespace cortex
