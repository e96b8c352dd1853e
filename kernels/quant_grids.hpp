// The lattice-codebook formats of llama.cpp (iq1_s, iq1_m, iq2_xxs, iq2_xs,
// iq2_s, iq3_xxs, iq3_s): their codebooks, and a scalar decoder per format
// that turns a 256-element super-block into integers, for the dequantizers
// and the scalar matmul reference (the SIMD kernels decode for themselves).
//
// Every one of these formats stores, per group of 8 (iq3: two groups of 4)
// elements, a grid index and sign bits (iq1: a shared offset instead), and
// odd sub-block scales 2s + 1 per 16 or 32 elements. So each element's value
// is d * factor * ls * code with an int8 code and factor a power of two:
//   iq2_xxs, iq2_xs, iq2_s: code = +-grid value (8, 25, 43), factor 1/8
//   iq3_xxs: code = +-grid value (4..62), factor 1/4
//   iq3_s:   code = +-grid value (1..15), factor 1
//   iq1_s, iq1_m: code = 8 * grid value (-1, 0, 1) +- 1 (llama.cpp's
//            offset of +-1/8, IQ1S_DELTA), factor 1/8
#pragma once

#include <cstdint>

#include "kernels/quant_blocks.hpp"

namespace cortex {

// The codebooks (quant_grids.cpp, quant_grid_iq1.cpp): entry i holds its
// values as bytes, value j in byte j.
extern const uint64_t iq2xxs_grid[256];
extern const uint64_t iq2xs_grid[512];
extern const uint64_t iq2s_grid[1024];
extern const uint32_t iq3xxs_grid[256];
extern const uint32_t iq3s_grid[512];
extern const uint64_t iq1s_grid[2048];

// One super-block decoded: element e is d * factor * ls[e / 16] * code[e].
struct grid_superblock {
  int8_t code[qk_k];
  uint8_t ls[qk_k / 16];  // 2s + 1 (1..31), per 16 elements
  float d;                // the super-block's f16 scale
};

// Anonymous namespace on purpose (see x86/matmul_tile_loop.hpp): isa
// translation units include this too.
namespace {

// The 8 sign bits of a group from their 7 stored bits: the eighth makes the
// number of negatives even (llama.cpp's ksigns_iq2xs table).
// Only the low 7 bits of `bits` are read.
inline uint8_t signs_from_7_bits(uint32_t bits) {
  const uint32_t bits7 = bits & 0x7f;
  uint32_t parity = bits7 ^ (bits7 >> 4);
  parity ^= parity >> 2;
  parity ^= parity >> 1;
  return static_cast<uint8_t>(bits7 | ((parity & 1) << 7));
}

// The super-block scale of an iq1_m block: an f16 whose four nibbles are the
// top nibbles of the four 16-bit words of its scales.
inline half_bits iq1_m_scale(const block_iq1_m& b) {
  uint16_t sc[4];
  for (int i = 0; i < 4; ++i) sc[i] = static_cast<uint16_t>(b.scales[2 * i] | (b.scales[2 * i + 1] << 8));
  return static_cast<half_bits>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
}

}  // namespace

// The decoders (quant_grid_decode.cpp).
void decode_grid(const block_iq2_xxs& b, grid_superblock& out);
void decode_grid(const block_iq2_xs& b, grid_superblock& out);
void decode_grid(const block_iq2_s& b, grid_superblock& out);
void decode_grid(const block_iq3_xxs& b, grid_superblock& out);
void decode_grid(const block_iq3_s& b, grid_superblock& out);
void decode_grid(const block_iq1_s& b, grid_superblock& out);
void decode_grid(const block_iq1_m& b, grid_superblock& out);

}  // namespace cortex
