// Dequantizers. Each mirrors llama.cpp's dequantize_row_* operation by
// operation (same float products in the same order, no fused multiply-add),
// so the output is bit-identical to the reference. dequantize_row_<type> are
// named by their type's row in kernels/quant_traits.cpp.
#include "kernels/quant.hpp"

#include <cstring>

#include "kernels/fp16.hpp"
#include "kernels/quant_blocks.hpp"
#include "kernels/quant_k_scales.hpp"
#include "kernels/quant_traits.hpp"

namespace cortex {

void dequantize_row_f32(const void* src, float* y, int64_t n) {
  std::memcpy(y, src, static_cast<size_t>(n) * sizeof(float));
}

void dequantize_row_f16(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(x[i]);
}

void dequantize_row_bf16(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) y[i] = bf16_to_fp32(x[i]);
}

void dequantize_row_q4_0(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const block_q4_0*>(src);
  const int64_t nb = n / qk4_0;
  for (int64_t i = 0; i < nb; ++i, y += qk4_0) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < qk4_0 / 2; ++j) {
      y[j] = static_cast<float>((x[i].qs[j] & 0x0f) - 8) * d;
      y[j + qk4_0 / 2] = static_cast<float>((x[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void dequantize_row_q4_1(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const block_q4_1*>(src);
  const int64_t nb = n / 32;
  for (int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = fp16_to_fp32(x[i].d);
    const float m = fp16_to_fp32(x[i].m);
    for (int j = 0; j < 16; ++j) {
      y[j] = static_cast<float>(x[i].qs[j] & 0x0f) * d + m;
      y[j + 16] = static_cast<float>(x[i].qs[j] >> 4) * d + m;
    }
  }
}

// The 5-bit value of element j (0..31) of a q5_0 / q5_1 block.
inline int q5_value(const uint8_t* qs, uint32_t qh, int j) {
  const int low = j < 16 ? (qs[j] & 0x0f) : (qs[j - 16] >> 4);
  return low | static_cast<int>(((qh >> j) & 1u) << 4);
}

void dequantize_row_q5_0(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const block_q5_0*>(src);
  const int64_t nb = n / 32;
  for (int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = fp16_to_fp32(x[i].d);
    uint32_t qh;
    std::memcpy(&qh, x[i].qh, sizeof(qh));
    for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(q5_value(x[i].qs, qh, j) - 16) * d;
  }
}

void dequantize_row_q5_1(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const block_q5_1*>(src);
  const int64_t nb = n / 32;
  for (int64_t i = 0; i < nb; ++i, y += 32) {
    const float d = fp16_to_fp32(x[i].d);
    const float m = fp16_to_fp32(x[i].m);
    uint32_t qh;
    std::memcpy(&qh, x[i].qh, sizeof(qh));
    for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(q5_value(x[i].qs, qh, j)) * d + m;
  }
}

void dequantize_row_q8_0(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const block_q8_0*>(src);
  const int64_t nb = n / qk8_0;
  for (int64_t i = 0; i < nb; ++i, y += qk8_0) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < qk8_0; ++j) y[j] = static_cast<float>(x[i].qs[j]) * d;
  }
}

// q2_K: 16 sub-blocks of 16. Byte qs[32*h + l] holds, in bit pair p, element
// 128*h + 32*p + l (l < 32); sub-block s has scale scales[s] & 15, min >> 4.
void dequantize_row_q2_k(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const block_q2_k*>(src);
  const int64_t nb = n / qk_k;
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    const float dmin = fp16_to_fp32(x[i].dmin);
    for (int e = 0; e < qk_k; ++e, ++y) {
      const int h = e / 128, p = (e % 128) / 32, l = e % 32;
      const uint8_t sc = x[i].scales[e / 16];
      const float dl = d * static_cast<float>(sc & 0x0f);
      const float ml = dmin * static_cast<float>(sc >> 4);
      const int q = (x[i].qs[32 * h + l] >> (2 * p)) & 3;
      *y = dl * static_cast<float>(q) - ml;
    }
  }
}

// Signed 6-bit scale s (0..15) of a q3_K block, already offset by -32.
inline int q3_k_scale(const uint8_t* scales, int s) {
  const int low = s < 8 ? (scales[s] & 0x0f) : (scales[s - 8] >> 4);
  const int high = (scales[8 + s % 4] >> (2 * (s / 4))) & 3;
  return (low | (high << 4)) - 32;
}

// q3_K: low 2 bits packed like q2_K; the third bit of element 128*h + 32*p + l
// is bit (4*h + p) of hmask[l], and a clear bit means "subtract 4".
void dequantize_row_q3_k(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const block_q3_k*>(src);
  const int64_t nb = n / qk_k;
  for (int64_t i = 0; i < nb; ++i) {
    const float d_all = fp16_to_fp32(x[i].d);
    float dl[qk_k / 16];
    for (int s = 0; s < qk_k / 16; ++s) dl[s] = d_all * static_cast<float>(q3_k_scale(x[i].scales, s));
    for (int e = 0; e < qk_k; ++e, ++y) {
      const int h = e / 128, p = (e % 128) / 32, l = e % 32;
      const int low = (x[i].qs[32 * h + l] >> (2 * p)) & 3;
      const bool high = (x[i].hmask[l] >> (4 * h + p)) & 1;
      *y = dl[e / 16] * static_cast<float>(low - (high ? 0 : 4));
    }
  }
}

// q4_K / q5_K super-block: 8 sub-blocks of 32. Byte qs[32*c + l] holds
// element 64*c + l in its low nibble and 64*c + 32 + l in its high nibble;
// q5_K (qh != nullptr) adds a fifth bit: bit s of qh[l] for element l of
// sub-block s.
template <class block>
void dequantize_k_nibbles(const block& b, const uint8_t* qh, float* y) {
  const float d = fp16_to_fp32(b.d);
  const float dmin = fp16_to_fp32(b.dmin);
  for (int s = 0; s < qk_k / 32; ++s) {
    uint8_t sc, m;
    get_scale_min_k4(s, b.scales, &sc, &m);
    const float ds = d * static_cast<float>(sc);
    const float ms = dmin * static_cast<float>(m);
    const uint8_t* q = b.qs + 32 * (s / 2);
    const int shift = 4 * (s % 2);
    for (int l = 0; l < 32; ++l) {
      const int high = qh ? ((qh[l] >> s) & 1) << 4 : 0;
      *y++ = ds * static_cast<float>(((q[l] >> shift) & 0x0f) | high) - ms;
    }
  }
}

void dequantize_row_q4_k(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const block_q4_k*>(src);
  const int64_t nb = n / qk_k;
  for (int64_t i = 0; i < nb; ++i) dequantize_k_nibbles(x[i], nullptr, y + i * qk_k);
}

void dequantize_row_q5_k(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const block_q5_k*>(src);
  const int64_t nb = n / qk_k;
  for (int64_t i = 0; i < nb; ++i) dequantize_k_nibbles(x[i], x[i].qh, y + i * qk_k);
}

// q6_K: 16 sub-blocks of 16 with int8 scales. For element 128*h + 32*p + l:
// low nibble from ql[64*h + 32*(p % 2) + l] (high nibble if p >= 2), top two
// bits from bit pair p of qh[32*h + l].
void dequantize_row_q6_k(const void* src, float* y, int64_t n) {
  const auto* x = static_cast<const block_q6_k*>(src);
  const int64_t nb = n / qk_k;
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int e = 0; e < qk_k; ++e, ++y) {
      const int h = e / 128, p = (e % 128) / 32, l = e % 32;
      const int low = (x[i].ql[64 * h + 32 * (p % 2) + l] >> (4 * (p / 2))) & 0x0f;
      const int high = (x[i].qh[32 * h + l] >> (2 * p)) & 3;
      const int q = (low | (high << 4)) - 32;
      *y = d * static_cast<float>(x[i].scales[e / 16]) * static_cast<float>(q);
    }
  }
}

bool dequantize_supported(ggml_type t) {
  const quant_traits* r = find_quant_traits(static_cast<uint32_t>(t));
  return r != nullptr && r->dequantize != nullptr;
}

void dequantize_row(ggml_type t, const void* src, float* dst, int64_t n) {
  if (dequantize_supported(t)) quant_traits_of(t).dequantize(src, dst, n);
}

}  // namespace cortex
