// quantize_row_fast: the k-quants without their scale searches. The blocks
// must decode (by the reference dequantizer) to the input within what a
// uniform grid of that many levels allows, and close to what the searched
// reference quantizer achieves; other types must be quantize_row's bytes.
#include "kernels/quant.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace cortex {
namespace {

// Root mean square of (dequantize(quantize(x)) - x) / rms(x) over rows of x.
template <class Quantize>
double relative_rms_error(ggml_type t, const std::vector<float>& x, int64_t cols, Quantize quantize) {
  std::vector<uint8_t> q(row_size(t, cols));
  std::vector<float> y(static_cast<size_t>(cols));
  double err = 0, norm = 0;
  for (size_t r = 0; r * cols < x.size(); ++r) {
    const float* xr = x.data() + r * cols;
    quantize(t, xr, q.data(), cols);
    dequantize_row(t, q.data(), y.data(), cols);
    for (int64_t i = 0; i < cols; ++i) {
      err += (y[i] - xr[i]) * (y[i] - xr[i]);
      norm += xr[i] * xr[i];
    }
  }
  return std::sqrt(err / norm);
}

std::vector<float> gaussian_rows(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 0.05f);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = d(gen);
  return x;
}

TEST(quantize_row_fast, k_quants_decode_within_their_grid) {
  const int64_t cols = 1024;
  const auto x = gaussian_rows(64 * cols, 11);
  // A uniform grid of L levels over a 32-value sub-block of a gaussian
  // (range about 4.5 sigma) rounds with rms step / sqrt(12): 4.5 / (L - 1) /
  // 3.46 sigma, i.e. 0.087 (q4_K), 0.042 (q5_K); q6_K's symmetric grid of
  // 64 levels over 16 values (range about 2 * 2 sigma): 0.018. Bounds leave
  // room for the 6/8-bit rounding of the sub-block scales.
  for (auto [t, bound] : {std::pair<ggml_type, double>{ggml_type::q4_k, 0.12}, {ggml_type::q5_k, 0.06}, {ggml_type::q6_k, 0.03}}) {
    const double fast = relative_rms_error(t, x, cols, quantize_row_fast);
    const double searched = relative_rms_error(t, x, cols, quantize_row);
    EXPECT_LT(fast, bound) << type_traits(t).name;
    EXPECT_GT(fast, 0.0) << type_traits(t).name;
    EXPECT_LT(fast, 1.5 * searched) << type_traits(t).name << ": searched " << searched;
  }
}

TEST(quantize_row_fast, other_types_are_quantize_row) {
  const int64_t cols = 256;
  const auto x = gaussian_rows(cols, 5);
  for (auto t : {ggml_type::q4_0, ggml_type::q8_0, ggml_type::f16}) {
    std::vector<uint8_t> a(row_size(t, cols)), b(row_size(t, cols));
    EXPECT_EQ(quantize_row_fast(t, x.data(), a.data(), cols), a.size());
    quantize_row(t, x.data(), b.data(), cols);
    EXPECT_EQ(a, b) << type_traits(t).name;
  }
}

}  // namespace
}  // namespace cortex
