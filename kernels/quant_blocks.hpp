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

// Activations quantized for k-quant dot products.
struct block_q8_k {
  float d;
  int8_t qs[qk_k];
  int16_t bsums[qk_k / 16];  // sums of each group of 16 qs
};
static_assert(sizeof(block_q8_k) == 292, "q8_k layout");

}  // namespace cortex
