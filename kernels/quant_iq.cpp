// Dequantizers of the non-linear 4-bit formats (iq4_nl, iq4_xs, mxfp4). As
// in quant.cpp, each mirrors llama.cpp's dequantize_row_* operation by
// operation, so the output is bit-identical to the reference (and to gguf-py).
#include <cstdint>

#include "kernels/fp16.hpp"
#include "kernels/quant_blocks.hpp"
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

}  // namespace

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
