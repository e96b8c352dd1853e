// Dequantizers of the non-linear 4-bit formats (iq4_nl, iq4_xs, mxfp4) and
// the lattice-codebook ones (iq1_s .. iq3_s). As in quant.cpp, each mirrors
// llama.cpp's dequantize_row_* operation by operation, so the output is
// bit-identical to the reference (and to gguf-py).
#include <cstdint>

#include "kernels/fp16.hpp"
#include "kernels/quant_blocks.hpp"
#include "kernels/quant_grids.hpp"
#include "kernels/quant_tables.hpp"

namespace cortex {

namespace {

// 32 values of a block whose codes are nibbles (element j low, j + 16 high
// nibble of qs[j]): scale * table[code].
void dequantize_nibbles(const uint8_t* qs, const int8_t* table, float scale, float* y) {
  for (int j = 0; j < 16; ++j) {
    y[j] = scale * static_cast<float>(table[qs[j] & 0x0f]);
    y[j + 16] = scale * static_cast<float>(table[qs[j] >> 4]);
  }
}

// A grid format's super-blocks (kernels/quant_grids.hpp): element e is
// sub_scale(d, ls[e / 16]) * code[e], or * (code[e] / 8) for iq1 (its grid
// value plus the +-1/8 delta, exact), each product as llama.cpp rounds it.
template <class Block, class SubScale>
void dequantize_grid(const void* src, float* y, int64_t n, SubScale sub_scale, bool eighths) {
  const auto* x = static_cast<const Block*>(src);
  grid_superblock g;
  for (int64_t i = 0; i < n / qk_k; ++i) {
    decode_grid(x[i], g);
    for (int s = 0; s < qk_k / 16; ++s) {
      const float dl = sub_scale(g.d, g.ls[s]);
      for (int j = 0; j < 16; ++j, ++y) {
        const float code = static_cast<float>(g.code[16 * s + j]);
        *y = dl * (eighths ? code * 0.125f : code);
      }
    }
  }
}

// The sub-block scales as llama.cpp computes them from the stored s (ls = 2s + 1).
float iq2_sub_scale(float d, int ls) { return d * (0.5f + static_cast<float>(ls >> 1)) * 0.25f; }
float iq3_xxs_sub_scale(float d, int ls) { return d * (0.5f + static_cast<float>(ls >> 1)) * 0.5f; }
float odd_sub_scale(float d, int ls) { return d * static_cast<float>(ls); }

}  // namespace

void dequantize_row_iq2_xxs(const void* src, float* y, int64_t n) {
  dequantize_grid<block_iq2_xxs>(src, y, n, iq2_sub_scale, false);
}
void dequantize_row_iq2_xs(const void* src, float* y, int64_t n) {
  dequantize_grid<block_iq2_xs>(src, y, n, iq2_sub_scale, false);
}
void dequantize_row_iq2_s(const void* src, float* y, int64_t n) {
  dequantize_grid<block_iq2_s>(src, y, n, iq2_sub_scale, false);
}
void dequantize_row_iq3_xxs(const void* src, float* y, int64_t n) {
  dequantize_grid<block_iq3_xxs>(src, y, n, iq3_xxs_sub_scale, false);
}
void dequantize_row_iq3_s(const void* src, float* y, int64_t n) {
  dequantize_grid<block_iq3_s>(src, y, n, odd_sub_scale, false);
}
void dequantize_row_iq1_s(const void* src, float* y, int64_t n) {
  dequantize_grid<block_iq1_s>(src, y, n, odd_sub_scale, true);
}
void dequantize_row_iq1_m(const void* src, float* y, int64_t n) {
  dequantize_grid<block_iq1_m>(src, y, n, odd_sub_scale, true);
}

void dequantize_row_iq4_nl(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const block_iq4_nl*>(src);
  for (int64_t i = 0; i < n / 32; ++i) dequantize_nibbles(x[i].qs, kvalues_iq4nl, fp16_to_fp32(x[i].d), y + 32 * i);
}

void dequantize_row_iq4_xs(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const block_iq4_xs*>(src);
  for (int64_t i = 0; i < n / qk_k; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int s = 0; s < qk_k / 32; ++s, y += 32) {
      dequantize_nibbles(x[i].qs + 16 * s, kvalues_iq4nl, d * static_cast<float>(iq4_xs_scale(x[i], s)), y);
    }
  }
}

void dequantize_row_mxfp4(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const block_mxfp4*>(src);
  for (int64_t i = 0; i < n / 32; ++i) {
    dequantize_nibbles(x[i].qs, kvalues_mxfp4, e8m0_half_to_fp32(x[i].e), y + 32 * i);
  }
}

}  // namespace cortex
