// Scalar matmul kernels: the reference the SIMD kernels are tested against.
// Integer parts are exact; floats accumulate in block order.
#include <cstring>

#include "kernels/fp16.hpp"
#include "kernels/matmul_kernels.hpp"
#include "kernels/quant_tables.hpp"

namespace cortex::kernels {

namespace {

const uint8_t* weight_row(const weight_view& w, int64_t r) {
  return static_cast<const uint8_t*>(w.data) + static_cast<size_t>(r) * w.row_bytes;
}

// 6-bit scale and min of sub-block j (0..7) of a q4_k / q5_k super-block.
void k4_scale_min(const uint8_t* s, int j, int* scale, int* min) {
  if (j < 4) {
    *scale = s[j] & 63;
    *min = s[j + 4] & 63;
  } else {
    *scale = (s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4);
    *min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

template <class Load>
void float_rows(const weight_view& w, const quantized_x& x, int n_tokens, float* y, int64_t r0, int64_t r1,
                Load load) {
  for (int t = 0; t < n_tokens; ++t) {
    const float* xt = reinterpret_cast<const float*>(x.data + static_cast<size_t>(t) * x.stride);
    for (int64_t r = r0; r < r1; ++r) {
      const uint8_t* row = weight_row(w, r);
      float sum = 0.f;
      for (int64_t k = 0; k < w.cols; ++k) sum += load(row, k) * xt[k];
      y[t * w.rows + r] = sum;
    }
  }
}

void rows_f32(const weight_view& w, const quantized_x& x, int n, float* y, int64_t r0, int64_t r1) {
  float_rows(w, x, n, y, r0, r1, [](const uint8_t* row, int64_t k) {
    float v;
    std::memcpy(&v, row + k * 4, 4);
    return v;
  });
}

void rows_f16(const weight_view& w, const quantized_x& x, int n, float* y, int64_t r0, int64_t r1) {
  float_rows(w, x, n, y, r0, r1, [](const uint8_t* row, int64_t k) {
    uint16_t h;
    std::memcpy(&h, row + k * 2, 2);
    return fp16_to_fp32(h);
  });
}

void rows_bf16(const weight_view& w, const quantized_x& x, int n, float* y, int64_t r0, int64_t r1) {
  float_rows(w, x, n, y, r0, r1, [](const uint8_t* row, int64_t k) {
    uint16_t h;
    std::memcpy(&h, row + k * 2, 2);
    return bf16_to_fp32(h);
  });
}

// The scale of a q8_32-style weight block: its f16 d, or mxfp4's E8M0 (as
// 2^(e - 128), its table being doubled).
template <class Block>
float block_scale(const Block& b) {
  return fp16_to_fp32(b.d);
}
float block_scale(const block_mxfp4& b) { return e8m0_half_to_fp32(b.e); }

// q8_32 weights: Decode(block, j) gives the signed weight code of element j.
template <class Block, class Decode>
void q8_32_rows(const weight_view& w, const quantized_x& x, int n_tokens, float* y, int64_t r0, int64_t r1,
                Decode decode) {
  const int64_t nb = w.cols / 32;
  for (int t = 0; t < n_tokens; ++t) {
    const uint8_t* xt = x.data + static_cast<size_t>(t) * x.stride;
    const auto* qs = reinterpret_cast<const int8_t*>(xt);
    const auto* dxv = reinterpret_cast<const float*>(xt + x.d_offset);
    for (int64_t r = r0; r < r1; ++r) {
      const auto* blocks = reinterpret_cast<const Block*>(weight_row(w, r));
      float sum = 0.f;
      for (int64_t b = 0; b < nb; ++b) {
        int isum = 0;
        for (int j = 0; j < 32; ++j) isum += decode(blocks[b], j) * qs[b * 32 + j];
        sum += static_cast<float>(isum) * (block_scale(blocks[b]) * dxv[b * 8]);
      }
      y[t * w.rows + r] = sum;
    }
  }
}

void rows_q4_0(const weight_view& w, const quantized_x& x, int n, float* y, int64_t r0, int64_t r1) {
  q8_32_rows<block_q4_0>(w, x, n, y, r0, r1, [](const block_q4_0& b, int j) {
    return (j < 16 ? (b.qs[j] & 0xf) : (b.qs[j - 16] >> 4)) - 8;
  });
}

void rows_q5_0(const weight_view& w, const quantized_x& x, int n, float* y, int64_t r0, int64_t r1) {
  q8_32_rows<block_q5_0>(w, x, n, y, r0, r1, [](const block_q5_0& b, int j) {
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    const int lo = j < 16 ? (b.qs[j] & 0xf) : (b.qs[j - 16] >> 4);
    return (lo | static_cast<int>(((qh >> j) & 1) << 4)) - 16;
  });
}

void rows_q8_0(const weight_view& w, const quantized_x& x, int n, float* y, int64_t r0, int64_t r1) {
  q8_32_rows<block_q8_0>(w, x, n, y, r0, r1, [](const block_q8_0& b, int j) { return static_cast<int>(b.qs[j]); });
}

// iq4_nl / mxfp4: element j's code is nibble j (low, j < 16) or j - 16
// (high) of qs, its value a table entry.
template <class Block>
int table_code(const Block& b, const int8_t* table, int j) {
  return table[j < 16 ? (b.qs[j] & 0xf) : (b.qs[j - 16] >> 4)];
}

void rows_iq4_nl(const weight_view& w, const quantized_x& x, int n, float* y, int64_t r0, int64_t r1) {
  q8_32_rows<block_iq4_nl>(w, x, n, y, r0, r1,
                           [](const block_iq4_nl& b, int j) { return table_code(b, kvalues_iq4nl, j); });
}

void rows_mxfp4(const weight_view& w, const quantized_x& x, int n, float* y, int64_t r0, int64_t r1) {
  q8_32_rows<block_mxfp4>(w, x, n, y, r0, r1,
                          [](const block_mxfp4& b, int j) { return table_code(b, kvalues_mxfp4, j); });
}

// q4_1 / q5_1 weights against q8_1 activations: Decode(block, j) gives the
// unsigned code of element j. Per block d_w * d_x * sum(code * q), and the
// min apart as m_w * s_x (llama.cpp's vec_dot_q4_1_q8_1 sums it separately).
template <class Block, class Decode>
void q8_1_rows(const weight_view& w, const quantized_x& x, int n_tokens, float* y, int64_t r0, int64_t r1,
               Decode decode) {
  const int64_t nb = w.cols / 32;
  for (int t = 0; t < n_tokens; ++t) {
    const uint8_t* xt = x.data + static_cast<size_t>(t) * x.stride;
    const auto* qs = reinterpret_cast<const int8_t*>(xt);
    const auto* dxv = reinterpret_cast<const float*>(xt + x.d_offset);
    const auto* sxv = reinterpret_cast<const float*>(xt + x.aux_offset);
    for (int64_t r = r0; r < r1; ++r) {
      const auto* blocks = reinterpret_cast<const Block*>(weight_row(w, r));
      float sum = 0.f, sum_min = 0.f;
      for (int64_t b = 0; b < nb; ++b) {
        int isum = 0;
        for (int j = 0; j < 32; ++j) isum += decode(blocks[b], j) * qs[b * 32 + j];
        sum += static_cast<float>(isum) * (fp16_to_fp32(blocks[b].d) * dxv[b * 8]);
        sum_min += fp16_to_fp32(blocks[b].m) * sxv[b * 8];
      }
      y[t * w.rows + r] = sum + sum_min;
    }
  }
}

void rows_q4_1(const weight_view& w, const quantized_x& x, int n, float* y, int64_t r0, int64_t r1) {
  q8_1_rows<block_q4_1>(w, x, n, y, r0, r1, [](const block_q4_1& b, int j) {
    return j < 16 ? (b.qs[j] & 0xf) : (b.qs[j - 16] >> 4);
  });
}

void rows_q5_1(const weight_view& w, const quantized_x& x, int n, float* y, int64_t r0, int64_t r1) {
  q8_1_rows<block_q5_1>(w, x, n, y, r0, r1, [](const block_q5_1& b, int j) {
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    const int lo = j < 16 ? (b.qs[j] & 0xf) : (b.qs[j - 16] >> 4);
    return lo | static_cast<int>(((qh >> j) & 1) << 4);
  });
}

// The 2-bit code of element e of a q2_k / q3_k super-block: bit pair p of
// qs[32h + l] for e = 128h + 32p + l.
int k_low2(const uint8_t* qs, int e) { return (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3; }

// q2_k: 16 sub-blocks of 16, 4-bit scale (low nibble) and min (high nibble).
void rows_q2_k(const weight_view& w, const quantized_x& x, int n_tokens, float* y, int64_t r0, int64_t r1) {
  const int64_t nb = w.cols / 256;
  for (int t = 0; t < n_tokens; ++t) {
    const uint8_t* xt = x.data + static_cast<size_t>(t) * x.stride;
    const auto* qs = reinterpret_cast<const int8_t*>(xt);
    const auto* dx = reinterpret_cast<const float*>(xt + x.d_offset);
    const auto* bsums = reinterpret_cast<const int16_t*>(xt + x.aux_offset);
    for (int64_t r = r0; r < r1; ++r) {
      const auto* blocks = reinterpret_cast<const block_q2_k*>(weight_row(w, r));
      float sum = 0.f;
      for (int64_t b = 0; b < nb; ++b) {
        const block_q2_k& blk = blocks[b];
        int isum = 0, msum = 0;
        for (int j = 0; j < 16; ++j) {
          int dot = 0;
          for (int e = 16 * j; e < 16 * j + 16; ++e) dot += k_low2(blk.qs, e) * qs[b * 256 + e];
          isum += (blk.scales[j] & 0xf) * dot;
          msum += (blk.scales[j] >> 4) * bsums[b * 16 + j];
        }
        sum += dx[b] * fp16_to_fp32(blk.d) * static_cast<float>(isum) -
               dx[b] * fp16_to_fp32(blk.dmin) * static_cast<float>(msum);
      }
      y[t * w.rows + r] = sum;
    }
  }
}

// Signed 6-bit scale (-32..31) of sub-block j (0..15) of a q3_k super-block:
// low nibble from scales[j % 8] (high nibble for j >= 8), top two bits from
// bit pair j / 4 of scales[8 + j % 4].
int q3_k_scale(const uint8_t* scales, int j) {
  const int low = (scales[j % 8] >> (4 * (j / 8))) & 0xf;
  const int high = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | (high << 4)) - 32;
}

// q3_k / q6_k: 16 sub-blocks of 16 with signed scales; Code(block, e) is the
// signed code of element e, Scale(block, j) the scale of sub-block j.
template <class Block, class Code, class Scale>
void k16_signed_rows(const weight_view& w, const quantized_x& x, int n_tokens, float* y, int64_t r0, int64_t r1,
                     Code code, Scale scale) {
  const int64_t nb = w.cols / 256;
  for (int t = 0; t < n_tokens; ++t) {
    const uint8_t* xt = x.data + static_cast<size_t>(t) * x.stride;
    const auto* qs = reinterpret_cast<const int8_t*>(xt);
    const auto* dx = reinterpret_cast<const float*>(xt + x.d_offset);
    for (int64_t r = r0; r < r1; ++r) {
      const auto* blocks = reinterpret_cast<const Block*>(weight_row(w, r));
      float sum = 0.f;
      for (int64_t b = 0; b < nb; ++b) {
        const Block& blk = blocks[b];
        int isum = 0;
        for (int j = 0; j < 16; ++j) {
          int dot = 0;
          for (int e = 16 * j; e < 16 * j + 16; ++e) dot += code(blk, e) * qs[b * 256 + e];
          isum += scale(blk, j) * dot;
        }
        sum += dx[b] * fp16_to_fp32(blk.d) * static_cast<float>(isum);
      }
      y[t * w.rows + r] = sum;
    }
  }
}

// q3_k: signed 6-bit scales; code = low 2 bits + 4 * (bit e / 32 of
// hmask[e % 32]) - 4.
void rows_q3_k(const weight_view& w, const quantized_x& x, int n_tokens, float* y, int64_t r0, int64_t r1) {
  k16_signed_rows<block_q3_k>(
      w, x, n_tokens, y, r0, r1,
      [](const block_q3_k& blk, int e) { return k_low2(blk.qs, e) + 4 * ((blk.hmask[e % 32] >> (e / 32)) & 1) - 4; },
      [](const block_q3_k& blk, int j) { return q3_k_scale(blk.scales, j); });
}

// q4_k / q5_k: Decode(block, e) gives the unsigned code (0..15 / 0..31) of element e.
template <class Block, class Decode>
void k4_rows(const weight_view& w, const quantized_x& x, int n_tokens, float* y, int64_t r0, int64_t r1,
             Decode decode) {
  const int64_t nb = w.cols / 256;
  for (int t = 0; t < n_tokens; ++t) {
    const uint8_t* xt = x.data + static_cast<size_t>(t) * x.stride;
    const auto* qs = reinterpret_cast<const int8_t*>(xt);
    const auto* dx = reinterpret_cast<const float*>(xt + x.d_offset);
    const auto* bsums = reinterpret_cast<const int16_t*>(xt + x.aux_offset);
    for (int64_t r = r0; r < r1; ++r) {
      const auto* blocks = reinterpret_cast<const Block*>(weight_row(w, r));
      float sum = 0.f;
      for (int64_t b = 0; b < nb; ++b) {
        const Block& blk = blocks[b];
        int isum = 0, msum = 0;
        for (int j = 0; j < 8; ++j) {
          int sc, m;
          k4_scale_min(blk.scales, j, &sc, &m);
          int dot = 0;
          for (int e = 32 * j; e < 32 * j + 32; ++e) dot += decode(blk, e) * qs[b * 256 + e];
          isum += sc * dot;
          msum += m * (bsums[b * 16 + 2 * j] + bsums[b * 16 + 2 * j + 1]);
        }
        sum += dx[b] * fp16_to_fp32(blk.d) * static_cast<float>(isum) -
               dx[b] * fp16_to_fp32(blk.dmin) * static_cast<float>(msum);
      }
      y[t * w.rows + r] = sum;
    }
  }
}

void rows_q4_k(const weight_view& w, const quantized_x& x, int n, float* y, int64_t r0, int64_t r1) {
  k4_rows<block_q4_k>(w, x, n, y, r0, r1, [](const block_q4_k& b, int e) {
    const int chunk = e / 64, l = e % 64;
    const uint8_t q = b.qs[chunk * 32 + (l & 31)];
    return l < 32 ? (q & 0xf) : (q >> 4);
  });
}

void rows_q5_k(const weight_view& w, const quantized_x& x, int n, float* y, int64_t r0, int64_t r1) {
  k4_rows<block_q5_k>(w, x, n, y, r0, r1, [](const block_q5_k& b, int e) {
    const int chunk = e / 64, l = e % 64;
    const uint8_t q = b.qs[chunk * 32 + (l & 31)];
    const int lo = l < 32 ? (q & 0xf) : (q >> 4);
    const int bit = (b.qh[l & 31] >> (2 * chunk + (l < 32 ? 0 : 1))) & 1;
    return lo | (bit << 4);
  });
}

// Signed code (-32..31) of element e of a q6_k super-block.
int q6_k_code(const block_q6_k& b, int e) {
  const int half = e / 128, l = e % 128;
  const int quarter = l / 32, i = l % 32;
  const uint8_t ql = b.ql[half * 64 + (quarter & 1) * 32 + i];
  const int lo = quarter < 2 ? (ql & 0xf) : (ql >> 4);
  const int hi = (b.qh[half * 32 + i] >> (2 * quarter)) & 3;
  return (lo | (hi << 4)) - 32;
}

void rows_q6_k(const weight_view& w, const quantized_x& x, int n_tokens, float* y, int64_t r0, int64_t r1) {
  k16_signed_rows<block_q6_k>(
      w, x, n_tokens, y, r0, r1, [](const block_q6_k& blk, int e) { return q6_k_code(blk, e); },
      [](const block_q6_k& blk, int j) { return static_cast<int>(blk.scales[j]); });
}

// iq4_xs: 8 sub-blocks of 32 with signed 6-bit scales, codes as iq4_nl's.
void rows_iq4_xs(const weight_view& w, const quantized_x& x, int n_tokens, float* y, int64_t r0, int64_t r1) {
  const int64_t nb = w.cols / 256;
  for (int t = 0; t < n_tokens; ++t) {
    const uint8_t* xt = x.data + static_cast<size_t>(t) * x.stride;
    const auto* qs = reinterpret_cast<const int8_t*>(xt);
    const auto* dx = reinterpret_cast<const float*>(xt + x.d_offset);
    for (int64_t r = r0; r < r1; ++r) {
      const auto* blocks = reinterpret_cast<const block_iq4_xs*>(weight_row(w, r));
      float sum = 0.f;
      for (int64_t b = 0; b < nb; ++b) {
        const block_iq4_xs& blk = blocks[b];
        int isum = 0;
        for (int s = 0; s < 8; ++s) {
          int dot = 0;
          const int8_t* xs = qs + b * 256 + 32 * s;
          for (int l = 0; l < 16; ++l) {
            const uint8_t q = blk.qs[16 * s + l];
            dot += kvalues_iq4nl[q & 0xf] * xs[l] + kvalues_iq4nl[q >> 4] * xs[16 + l];
          }
          isum += iq4_xs_scale(blk, s) * dot;
        }
        sum += dx[b] * fp16_to_fp32(blk.d) * static_cast<float>(isum);
      }
      y[t * w.rows + r] = sum;
    }
  }
}

}  // namespace

// Named by the rows of kernels/quant_traits.cpp.
extern const matmul_rows_fn matmul_scalar_f32 = rows_f32, matmul_scalar_f16 = rows_f16, matmul_scalar_bf16 = rows_bf16,
                            matmul_scalar_q4_0 = rows_q4_0, matmul_scalar_q8_0 = rows_q8_0,
                            matmul_scalar_q5_0 = rows_q5_0, matmul_scalar_q4_1 = rows_q4_1,
                            matmul_scalar_q5_1 = rows_q5_1, matmul_scalar_q2_k = rows_q2_k,
                            matmul_scalar_q3_k = rows_q3_k, matmul_scalar_q4_k = rows_q4_k,
                            matmul_scalar_q5_k = rows_q5_k, matmul_scalar_q6_k = rows_q6_k,
                            matmul_scalar_iq4_nl = rows_iq4_nl, matmul_scalar_iq4_xs = rows_iq4_xs,
                            matmul_scalar_mxfp4 = rows_mxfp4;

}  // namespace cortex::kernels
