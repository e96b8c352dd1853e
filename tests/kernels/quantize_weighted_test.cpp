// quantize_row_weighted: importance weights must steer the error toward the
// columns that matter. (Its bytes against llama-quantize --imatrix are
// checked in tests/model/quantize_imatrix_test.cpp.)
#include "kernels/quant.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace cortex {
namespace {

const ggml_type k_weighted_types[] = {ggml_type::q4_0,   ggml_type::q4_1,    ggml_type::q5_0,  ggml_type::q5_1,
                                      ggml_type::q2_k,   ggml_type::q3_k,    ggml_type::q4_k,  ggml_type::q5_k,
                                      ggml_type::q6_k,   ggml_type::iq4_nl,  ggml_type::iq4_xs, ggml_type::iq2_xxs,
                                      ggml_type::iq2_xs, ggml_type::iq2_s,   ggml_type::iq3_xxs, ggml_type::iq3_s,
                                      ggml_type::iq1_s,  ggml_type::iq1_m};

constexpr int64_t k_cols = 512, k_rows = 64;

std::vector<float> gaussian(size_t n, float sigma, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> x(n);
  for (auto& v : x) v = d(gen);
  return x;
}

// Column weights as an imatrix has them: a few columns carry most of the
// activation energy.
std::vector<float> skewed_weights(uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<float> w(k_cols);
  for (auto& v : w) v = (gen() % 8 == 0) ? 50.0f + static_cast<float>(gen() % 100) : 0.01f * static_cast<float>(1 + gen() % 10);
  return w;
}

// sum over rows and columns of w[c] * (dequantize(quantize(x)) - x)^2:
// the output error the weights stand for.
double weighted_error(ggml_type t, const std::vector<float>& x, const std::vector<float>& w, const float* qw) {
  std::vector<uint8_t> q(row_size(t, k_cols));
  std::vector<float> y(k_cols);
  double err = 0;
  for (int64_t r = 0; r < k_rows; ++r) {
    const float* xr = x.data() + r * k_cols;
    EXPECT_EQ(quantize_row_weighted(t, xr, q.data(), k_cols, qw), q.size());
    dequantize_row(t, q.data(), y.data(), k_cols);
    for (int64_t c = 0; c < k_cols; ++c) err += w[c] * (y[c] - xr[c]) * (y[c] - xr[c]);
  }
  return err;
}

class quantize_weighted : public ::testing::TestWithParam<ggml_type> {};

TEST_P(quantize_weighted, uses_the_weights) { EXPECT_TRUE(quantize_uses_weights(GetParam())); }

// The weights buy accuracy where they are large: the weighted error of the
// quantization with those weights is well below that with uniform ones.
TEST_P(quantize_weighted, lowers_the_error_the_weights_measure) {
  const ggml_type t = GetParam();
  const auto x = gaussian(k_cols * k_rows, 0.05f, 11);
  const auto w = skewed_weights(5);
  const std::vector<float> uniform(k_cols, 1.0f);
  const double plain = weighted_error(t, x, w, uniform.data());
  const double weighted = weighted_error(t, x, w, w.data());
  EXPECT_LT(weighted, 0.9 * plain) << type_traits(t).name;
}

// iq2_xxs, iq2_xs, iq1_s and iq1_m have no quantizer without weights (nor
// has llama-quantize).
TEST(quantize_weighted, the_lowest_bit_grid_types_quantize_only_with_weights) {
  for (ggml_type t : {ggml_type::iq2_xxs, ggml_type::iq2_xs, ggml_type::iq1_s, ggml_type::iq1_m}) {
    EXPECT_FALSE(quantize_supported(t)) << type_traits(t).name;
    const auto x = gaussian(k_cols, 0.05f, 8);
    std::vector<uint8_t> q(row_size(t, k_cols));
    EXPECT_EQ(quantize_row_weighted(t, x.data(), q.data(), k_cols, nullptr), 0u) << type_traits(t).name;
  }
}

TEST_P(quantize_weighted, other_weights_give_other_bytes_and_none_gives_quantize_row) {
  const ggml_type t = GetParam();
  const auto x = gaussian(k_cols, 0.05f, 3);
  const auto w1 = skewed_weights(1), w2 = skewed_weights(2);
  const size_t n = row_size(t, k_cols);
  std::vector<uint8_t> a(n), b(n), plain(n), none(n);
  quantize_row_weighted(t, x.data(), a.data(), k_cols, w1.data());
  quantize_row_weighted(t, x.data(), b.data(), k_cols, w2.data());
  EXPECT_NE(a, b);
  if (!quantize_supported(t)) return;
  quantize_row(t, x.data(), plain.data(), k_cols);
  quantize_row_weighted(t, x.data(), none.data(), k_cols, nullptr);
  EXPECT_NE(a, plain);
  EXPECT_EQ(none, plain);
}

// An all-zero row (and block) stays zero and finite, as in the reference.
TEST_P(quantize_weighted, zero_rows_dequantize_to_zero) {
  const ggml_type t = GetParam();
  std::vector<float> x(k_cols, 0.0f), y(k_cols, 1.0f);
  const auto w = skewed_weights(9);
  std::vector<uint8_t> q(row_size(t, k_cols));
  quantize_row_weighted(t, x.data(), q.data(), k_cols, w.data());
  dequantize_row(t, q.data(), y.data(), k_cols);
  for (float v : y) ASSERT_EQ(v, 0.0f);
}

// ||dequantize(quantize(x)) - x|| / ||x|| over k_rows rows of N(0, sigma),
// with uniform weights.
double relative_error(ggml_type t, float sigma, uint32_t seed) {
  const auto x = gaussian(k_cols * k_rows, sigma, seed);
  const std::vector<float> uniform(k_cols, 1.0f);
  double sum_x2 = 0;
  for (float v : x) sum_x2 += static_cast<double>(v) * v;
  return std::sqrt(weighted_error(t, x, uniform, uniform.data()) / sum_x2);
}

// The 1.5- and 1.75-bit types round-trip Gaussian rows at any scale to a
// relative error near that of the best three-level quantizer of a Gaussian
// (0.436): 0.485 (iq1_s) and 0.450 (iq1_m, finer scales) measured, their
// levels having to be codebook entries under 3-bit scales. Rows of zeros
// would score 1.
TEST(quantize_weighted, iq1_rows_round_trip_within_their_resolution) {
  for (float sigma : {0.02f, 1.0f, 300.0f}) {
    SCOPED_TRACE(sigma);
    const double e_s = relative_error(ggml_type::iq1_s, sigma, 21), e_m = relative_error(ggml_type::iq1_m, sigma, 21);
    EXPECT_LT(e_s, 0.5);
    EXPECT_LT(e_m, 0.47);
    EXPECT_LT(e_m, e_s);
  }
}

INSTANTIATE_TEST_SUITE_P(types, quantize_weighted, ::testing::ValuesIn(k_weighted_types),
                         [](const auto& info) { return std::string(type_traits(info.param).name); });

TEST(quantize_weighted, types_that_ignore_weights_quantize_as_quantize_row) {
  const auto x = gaussian(k_cols, 0.05f, 4);
  const auto w = skewed_weights(4);
  for (ggml_type t : {ggml_type::q8_0, ggml_type::f16, ggml_type::bf16, ggml_type::mxfp4}) {
    ASSERT_FALSE(quantize_uses_weights(t)) << type_traits(t).name;
    std::vector<uint8_t> a(row_size(t, k_cols)), b(row_size(t, k_cols));
    quantize_row_weighted(t, x.data(), a.data(), k_cols, w.data());
    quantize_row(t, x.data(), b.data(), k_cols);
    EXPECT_EQ(a, b) << type_traits(t).name;
  }
}

}  // namespace
}  // namespace cortex
