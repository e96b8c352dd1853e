// Scalar decoders of the lattice-codebook formats (kernels/quant_grids.hpp):
// where each format keeps its grid indices, signs and scales, as llama.cpp's
// block_iq* define them (ggml-common.h) and its dequantize_row_iq* read them.
#include <cstring>

#include "kernels/fp16.hpp"
#include "kernels/quant_grids.hpp"

namespace cortex {

namespace {

// 8 codes +-grid value: sign bit j of `signs` negates value j.
void signed_group(uint64_t entry, uint8_t signs, int8_t* code) {
  for (int j = 0; j < 8; ++j) {
    const int v = static_cast<int>((entry >> (8 * j)) & 0xff);
    code[j] = static_cast<int8_t>((signs >> j) & 1 ? -v : v);
  }
}

uint32_t load_u32(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// 8 iq1 codes 8 * g +- 1 from a grid entry of int8 values g in {-1, 0, 1}.
void iq1_group(int index, bool negative_delta, int8_t* code) {
  for (int j = 0; j < 8; ++j) {
    const int g = static_cast<int8_t>((iq1s_grid[index] >> (8 * j)) & 0xff);
    code[j] = static_cast<int8_t>(8 * g + (negative_delta ? -1 : 1));
  }
}

}  // namespace

// Per 32 elements: 4 index bytes, then a uint32 of four 7-bit sign groups
// and the 4-bit scale in its top bits.
void decode_grid(const block_iq2_xxs& b, grid_superblock& out) {
  out.d = fp16_to_fp32(b.d);
  const auto* q = reinterpret_cast<const uint8_t*>(b.qs);
  for (int ib = 0; ib < 8; ++ib) {
    const uint32_t aux = load_u32(q + 8 * ib + 4);
    out.ls[2 * ib] = out.ls[2 * ib + 1] = static_cast<uint8_t>(2 * (aux >> 28) + 1);
    for (int l = 0; l < 4; ++l) {
      signed_group(iq2xxs_grid[q[8 * ib + l]], signs_from_7_bits(aux >> (7 * l)), out.code + 32 * ib + 8 * l);
    }
  }
}

// Per 8 elements a uint16: 9-bit index, 7 sign bits; per 16 a 4-bit scale.
void decode_grid(const block_iq2_xs& b, grid_superblock& out) {
  out.d = fp16_to_fp32(b.d);
  for (int ib = 0; ib < 8; ++ib) {
    out.ls[2 * ib] = static_cast<uint8_t>(2 * (b.scales[ib] & 0xf) + 1);
    out.ls[2 * ib + 1] = static_cast<uint8_t>(2 * (b.scales[ib] >> 4) + 1);
    for (int l = 0; l < 4; ++l) {
      const uint16_t q = b.qs[4 * ib + l];
      signed_group(iq2xs_grid[q & 511], signs_from_7_bits(q >> 9), out.code + 32 * ib + 8 * l);
    }
  }
}

// Per 8 elements: the index's low 8 bits in qs[0..31], its top 2 bits in a
// bit pair of qh, a whole sign byte in qs[32..63]; per 16 a 4-bit scale.
void decode_grid(const block_iq2_s& b, grid_superblock& out) {
  out.d = fp16_to_fp32(b.d);
  for (int ib = 0; ib < 8; ++ib) {
    out.ls[2 * ib] = static_cast<uint8_t>(2 * (b.scales[ib] & 0xf) + 1);
    out.ls[2 * ib + 1] = static_cast<uint8_t>(2 * (b.scales[ib] >> 4) + 1);
    for (int l = 0; l < 4; ++l) {
      const int index = b.qs[4 * ib + l] | (((b.qh[ib] >> (2 * l)) & 3) << 8);
      signed_group(iq2s_grid[index], b.qs[32 + 4 * ib + l], out.code + 32 * ib + 8 * l);
    }
  }
}

// Per 32 elements: 8 index bytes (4 values each) in qs[0..63], then in
// qs[64..95] a uint32 of four 7-bit sign groups and the 4-bit scale.
void decode_grid(const block_iq3_xxs& b, grid_superblock& out) {
  out.d = fp16_to_fp32(b.d);
  for (int ib = 0; ib < 8; ++ib) {
    const uint32_t aux = load_u32(b.qs + 64 + 4 * ib);
    out.ls[2 * ib] = out.ls[2 * ib + 1] = static_cast<uint8_t>(2 * (aux >> 28) + 1);
    for (int l = 0; l < 4; ++l) {
      const uint64_t entry = iq3xxs_grid[b.qs[8 * ib + 2 * l]] |
                             static_cast<uint64_t>(iq3xxs_grid[b.qs[8 * ib + 2 * l + 1]]) << 32;
      signed_group(entry, signs_from_7_bits(aux >> (7 * l)), out.code + 32 * ib + 8 * l);
    }
  }
}

// Per 32 elements: 8 index bytes, their 9th bits in one qh byte (bit k for
// index k), 4 sign bytes; a 4-bit scale per 32.
void decode_grid(const block_iq3_s& b, grid_superblock& out) {
  out.d = fp16_to_fp32(b.d);
  for (int ib = 0; ib < 8; ++ib) {
    out.ls[2 * ib] = out.ls[2 * ib + 1] = static_cast<uint8_t>(2 * ((b.scales[ib / 2] >> (4 * (ib % 2))) & 0xf) + 1);
    for (int l = 0; l < 4; ++l) {
      const int i0 = b.qs[8 * ib + 2 * l] | (((b.qh[ib] >> (2 * l)) & 1) << 8);
      const int i1 = b.qs[8 * ib + 2 * l + 1] | (((b.qh[ib] >> (2 * l + 1)) & 1) << 8);
      const uint64_t entry = iq3s_grid[i0] | static_cast<uint64_t>(iq3s_grid[i1]) << 32;
      signed_group(entry, b.signs[4 * ib + l], out.code + 32 * ib + 8 * l);
    }
  }
}

// Per 32 elements: 4 index bytes and a uint16 qh of four 3-bit index tops
// (bits 3l..3l+2), the 3-bit scale (bits 12-14) and the delta's sign (15).
void decode_grid(const block_iq1_s& b, grid_superblock& out) {
  out.d = fp16_to_fp32(b.d);
  for (int ib = 0; ib < 8; ++ib) {
    const int qh = b.qh[ib];
    out.ls[2 * ib] = out.ls[2 * ib + 1] = static_cast<uint8_t>(2 * ((qh >> 12) & 7) + 1);
    for (int l = 0; l < 4; ++l) {
      iq1_group(b.qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8), (qh & 0x8000) != 0, out.code + 32 * ib + 8 * l);
    }
  }
}

// Per 8 elements: an index byte and a qh nibble (3 index top bits, the
// delta's sign in bit 3); per 16 a 3-bit scale in the 16-bit words of scales
// (6 bits per 32, the words' top nibbles hold the f16 super-block scale).
void decode_grid(const block_iq1_m& b, grid_superblock& out) {
  out.d = fp16_to_fp32(iq1_m_scale(b));
  for (int ib = 0; ib < 8; ++ib) {
    const int sc = b.scales[2 * (ib / 2)] | (b.scales[2 * (ib / 2) + 1] << 8);
    out.ls[2 * ib] = static_cast<uint8_t>(2 * ((sc >> (6 * (ib % 2))) & 7) + 1);
    out.ls[2 * ib + 1] = static_cast<uint8_t>(2 * ((sc >> (6 * (ib % 2) + 3)) & 7) + 1);
    for (int l = 0; l < 4; ++l) {
      const int nibble = (b.qh[2 * ib + l / 2] >> (4 * (l % 2))) & 0xf;
      iq1_group(b.qs[4 * ib + l] | ((nibble & 7) << 8), (nibble & 8) != 0, out.code + 32 * ib + 8 * l);
    }
  }
}

}  // namespace cortex
