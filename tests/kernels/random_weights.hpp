// Test helper: random weight matrices of every matmul type (every code
// pattern, sane f16 scales), random activations, and dequantization of a
// whole matrix, for the matmul tests.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/fp16.hpp"
#include "kernels/matmul.hpp"
#include "kernels/quant.hpp"
#include "kernels/quant_blocks.hpp"

namespace cortex::kernels {

inline void put_half(uint8_t* p, float v) {
  const uint16_t h = fp32_to_fp16(v);
  std::memcpy(p, &h, 2);
}

// Random weight bytes: every code pattern, with sane f16 scales.
inline std::vector<uint8_t> random_weights(ggml_type t, int64_t rows, int64_t cols, std::mt19937& rng) {
  const size_t row_bytes = matmul_row_bytes(t, cols);
  std::vector<uint8_t> out(row_bytes * static_cast<size_t>(rows));
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.02f, 0.02f);
  std::normal_distribution<float> normal(0.f, 1.f);
  if (t == ggml_type::f32 || t == ggml_type::f16 || t == ggml_type::bf16) {
    for (int64_t i = 0; i < rows * cols; ++i) {
      const float v = normal(rng);
      if (t == ggml_type::f32) std::memcpy(out.data() + i * 4, &v, 4);
      if (t == ggml_type::f16) put_half(out.data() + i * 2, v);
      if (t == ggml_type::bf16) {
        const uint16_t h = fp32_to_bf16(v);
        std::memcpy(out.data() + i * 2, &h, 2);
      }
    }
    return out;
  }
  for (auto& b : out) b = static_cast<uint8_t>(byte(rng));
  size_t block_bytes = 0, d_at = 0, dmin_at = 0;
  bool has_min = false, signed_min = false;
  switch (t) {
    case ggml_type::q4_0: block_bytes = sizeof(block_q4_0); break;
    case ggml_type::q8_0: block_bytes = sizeof(block_q8_0); break;
    case ggml_type::q5_0: block_bytes = sizeof(block_q5_0); break;
    // q4_1 / q5_1: the min m is added, either sign.
    case ggml_type::q4_1: block_bytes = sizeof(block_q4_1); dmin_at = 2; has_min = signed_min = true; break;
    case ggml_type::q5_1: block_bytes = sizeof(block_q5_1); dmin_at = 2; has_min = signed_min = true; break;
    case ggml_type::q2_k:
      block_bytes = sizeof(block_q2_k); d_at = offsetof(block_q2_k, d); dmin_at = offsetof(block_q2_k, dmin);
      has_min = true;
      break;
    case ggml_type::q3_k: block_bytes = sizeof(block_q3_k); d_at = offsetof(block_q3_k, d); break;
    case ggml_type::q4_k: block_bytes = sizeof(block_q4_k); dmin_at = 2; has_min = true; break;
    case ggml_type::q5_k: block_bytes = sizeof(block_q5_k); dmin_at = 2; has_min = true; break;
    case ggml_type::q6_k: block_bytes = sizeof(block_q6_k); d_at = offsetof(block_q6_k, d); break;
    case ggml_type::iq4_nl: block_bytes = sizeof(block_iq4_nl); break;
    case ggml_type::iq4_xs: block_bytes = sizeof(block_iq4_xs); break;
    case ggml_type::iq2_xxs: block_bytes = sizeof(block_iq2_xxs); break;
    case ggml_type::iq2_xs: block_bytes = sizeof(block_iq2_xs); break;
    case ggml_type::iq2_s: block_bytes = sizeof(block_iq2_s); break;
    case ggml_type::iq3_xxs: block_bytes = sizeof(block_iq3_xxs); break;
    case ggml_type::iq3_s: block_bytes = sizeof(block_iq3_s); break;
    case ggml_type::iq1_s: block_bytes = sizeof(block_iq1_s); break;
    case ggml_type::iq1_m: {
      // The f16 scale's four nibbles are the top nibbles of the 16-bit
      // words of scales (bytes 1, 3, 5, 7).
      for (size_t off = 0; off < out.size(); off += sizeof(block_iq1_m)) {
        const uint16_t h = fp32_to_fp16(scale(rng));
        uint8_t* sc = out.data() + off + offsetof(block_iq1_m, scales);
        for (int k = 0; k < 4; ++k) {
          sc[2 * k + 1] = static_cast<uint8_t>((sc[2 * k + 1] & 0x0f) | (((h >> (4 * k)) & 0xf) << 4));
        }
      }
      return out;
    }
    case ggml_type::mxfp4: {
      // An E8M0 exponent for a scale: 2^-12 .. 2^-5 (values up to 12 * 2^-6).
      std::uniform_int_distribution<int> e(115, 122);
      for (size_t off = 0; off < out.size(); off += sizeof(block_mxfp4)) out[off] = static_cast<uint8_t>(e(rng));
      return out;
    }
    default: break;
  }
  for (size_t off = 0; off + block_bytes <= out.size(); off += block_bytes) {
    put_half(out.data() + off + d_at, scale(rng));
    if (has_min) put_half(out.data() + off + dmin_at, signed_min ? scale(rng) : std::fabs(scale(rng)));
  }
  return out;
}

inline std::vector<float> random_x(int n_tokens, int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(n_tokens * cols));
  for (auto& v : x) v = normal(rng);
  if (!x.empty()) x[x.size() / 2] = 0.f;
  return x;
}

inline std::vector<float> dequantized(const weight_view& w) {
  std::vector<float> out(static_cast<size_t>(w.rows * w.cols));
  for (int64_t r = 0; r < w.rows; ++r) {
    dequantize_row(w.type, static_cast<const uint8_t*>(w.data) + r * w.row_bytes, out.data() + r * w.cols, w.cols);
  }
  return out;
}

}  // namespace cortex::kernels
