// matmul: every isa path against the scalar reference (float rounding only),
// and the reference against f32 math on dequantized weights (bounded by the
// error of quantizing activations to 8 bits).
#include "kernels/matmul.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu_features.hpp"
#include "kernels/fp16.hpp"
#include "kernels/quant.hpp"
#include "kernels/thread_pool.hpp"
#include "tests/kernels/random_weights.hpp"

namespace cortex::kernels {
namespace {

struct type_case {
  ggml_type type;
  int block;
};

const type_case all_types[] = {
    {ggml_type::f32, 1},    {ggml_type::f16, 1},    {ggml_type::bf16, 1},   {ggml_type::q4_0, 32},
    {ggml_type::q8_0, 32},  {ggml_type::q5_0, 32},  {ggml_type::q4_1, 32},  {ggml_type::q5_1, 32},
    {ggml_type::q2_k, 256}, {ggml_type::q3_k, 256}, {ggml_type::q4_k, 256}, {ggml_type::q5_k, 256},
    {ggml_type::q6_k, 256},    {ggml_type::iq4_nl, 32},   {ggml_type::iq4_xs, 256},  {ggml_type::mxfp4, 32},
    {ggml_type::iq2_xxs, 256}, {ggml_type::iq2_xs, 256},  {ggml_type::iq2_s, 256},   {ggml_type::iq3_xxs, 256},
    {ggml_type::iq3_s, 256},   {ggml_type::iq1_s, 256},   {ggml_type::iq1_m, 256},
};

// sum_k |w_rk x_tk|: the scale that float rounding errors are relative to.
std::vector<double> magnitudes(const std::vector<float>& wf, const std::vector<float>& x, int64_t rows, int64_t cols,
                               int n_tokens) {
  std::vector<double> m(static_cast<size_t>(n_tokens * rows));
  for (int t = 0; t < n_tokens; ++t)
    for (int64_t r = 0; r < rows; ++r) {
      double s = 0;
      for (int64_t k = 0; k < cols; ++k) s += std::fabs(double(wf[r * cols + k]) * x[t * cols + k]);
      m[t * rows + r] = s;
    }
  return m;
}

class matmul_isa_test : public ::testing::TestWithParam<isa> {
 protected:
  void SetUp() override {
    if (static_cast<int>(GetParam()) > static_cast<int>(best_supported_isa())) {
      GTEST_SKIP() << "this CPU lacks " << isa_name(GetParam()) << "; its kernels are not tested here";
    }
    ASSERT_EQ(set_isa_for_testing(GetParam()), GetParam());
  }
  void TearDown() override { set_isa_for_testing(best_supported_isa()); }
};

TEST_P(matmul_isa_test, matches_scalar_reference_on_odd_shapes) {
  std::mt19937 rng(1234);
  const int odd_blocks[] = {1, 3, 5, 7};
  const int64_t rows_options[] = {1, 3, 5, 13, 37};
  thread_pool pools[] = {thread_pool(1), thread_pool(2), thread_pool(3)};
  matmul_scratch scratch;
  for (const type_case& tc : all_types) {
    for (int iter = 0; iter < 6; ++iter) {
      const int block = tc.block == 1 ? 32 : tc.block;
      int64_t cols = int64_t{block} * odd_blocks[iter % 4];
      if (tc.block == 1 && iter % 2 == 1) cols += 7;  // float types: any width
      const int64_t rows = rows_options[(iter + static_cast<int>(tc.type)) % 5];
      const int n_tokens = 1 + static_cast<int>((iter * 7 + static_cast<int>(tc.type)) % 17);
      thread_pool& pool = pools[iter % 3];
      SCOPED_TRACE(::testing::Message() << "type " << static_cast<int>(tc.type) << " rows " << rows << " cols " << cols
                                        << " tokens " << n_tokens << " threads " << pool.size());
      const std::vector<uint8_t> wbytes = random_weights(tc.type, rows, cols, rng);
      const weight_view w{tc.type, rows, cols, wbytes.data(), matmul_row_bytes(tc.type, cols)};
      const std::vector<float> x = random_x(n_tokens, cols, rng);
      std::vector<float> y(static_cast<size_t>(n_tokens * rows), -1.f), y_ref(y.size(), -2.f);
      matmul(w, x.data(), n_tokens, y.data(), pool, scratch);
      matmul_reference(w, x.data(), n_tokens, y_ref.data());
      const std::vector<double> mag = magnitudes(dequantized(w), x, rows, cols, n_tokens);
      for (size_t i = 0; i < y.size(); ++i) {
        ASSERT_NEAR(y[i], y_ref[i], 2e-5 * mag[i] + 1e-6) << "output " << i;
      }
    }
  }
}

TEST_P(matmul_isa_test, decode_and_batched_shapes_agree_with_reference) {
  std::mt19937 rng(99);
  thread_pool pool(2);
  matmul_scratch scratch;
  for (const type_case& tc : all_types) {
    const int64_t rows = 67, cols = 512;
    const std::vector<uint8_t> wbytes = random_weights(tc.type, rows, cols, rng);
    const weight_view w{tc.type, rows, cols, wbytes.data(), matmul_row_bytes(tc.type, cols)};
    const std::vector<float> x = random_x(40, cols, rng);
    std::vector<float> y(40 * rows), y_ref(40 * rows);
    for (int n_tokens : {1, 40}) {
      matmul(w, x.data(), n_tokens, y.data(), pool, scratch);
      matmul_reference(w, x.data(), n_tokens, y_ref.data());
      const std::vector<double> mag = magnitudes(dequantized(w), x, rows, cols, n_tokens);
      for (int i = 0; i < n_tokens * rows; ++i) {
        ASSERT_NEAR(y[i], y_ref[i], 2e-5 * mag[i] + 1e-6) << "type " << static_cast<int>(tc.type) << " output " << i;
      }
    }
  }
}

// k-quants (and the types through their tile) on every tile edge: rows not a
// multiple of the tile, token counts around the token tile, several
// super-blocks per row, 1 to 3 threads.
TEST_P(matmul_isa_test, k_quants_match_reference_on_tile_edges) {
  std::mt19937 rng(4321);
  thread_pool pools[] = {thread_pool(1), thread_pool(2), thread_pool(3)};
  matmul_scratch scratch;
  int iter = 0;
  for (ggml_type t : {ggml_type::q2_k, ggml_type::q3_k, ggml_type::q4_k, ggml_type::q5_k, ggml_type::q6_k,
                      ggml_type::iq4_xs, ggml_type::iq2_xxs, ggml_type::iq2_xs, ggml_type::iq2_s, ggml_type::iq3_xxs,
                      ggml_type::iq3_s, ggml_type::iq1_s, ggml_type::iq1_m}) {
    for (int64_t cols : {256, 768, 1280}) {
      for (int n_tokens : {1, 3, 4, 5, 9, 17}) {
        const int64_t rows = 1 + (iter * 5) % 11;
        thread_pool& pool = pools[iter++ % 3];
        SCOPED_TRACE(::testing::Message() << "type " << static_cast<int>(t) << " rows " << rows << " cols " << cols
                                          << " tokens " << n_tokens << " threads " << pool.size());
        const std::vector<uint8_t> wbytes = random_weights(t, rows, cols, rng);
        const weight_view w{t, rows, cols, wbytes.data(), matmul_row_bytes(t, cols)};
        const std::vector<float> x = random_x(n_tokens, cols, rng);
        std::vector<float> y(static_cast<size_t>(n_tokens * rows), -1.f), y_ref(y.size(), -2.f);
        matmul(w, x.data(), n_tokens, y.data(), pool, scratch);
        matmul_reference(w, x.data(), n_tokens, y_ref.data());
        const std::vector<double> mag = magnitudes(dequantized(w), x, rows, cols, n_tokens);
        for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], y_ref[i], 2e-5 * mag[i] + 1e-6) << "output " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(isas, matmul_isa_test, ::testing::Values(isa::scalar, isa::avx2, isa::avx512),
                         [](const ::testing::TestParamInfo<isa>& info) { return std::string(isa_name(info.param)); });

// The reference against f32 math on the dequantized weights. Each output's
// error comes from rounding x to 8 bits (step d per block) and, for q8_0-style
// activations, d to f16: bounded per output by sum_k |w_k| * d_k * (1/2 + 128
// * 2^-11), and in mean square close to sum_k w_k^2 d_k^2 / 12.
TEST(matmul_reference_test, within_activation_quantization_error_of_float_math) {
  std::mt19937 rng(7);
  const ggml_type types[] = {ggml_type::q4_0,    ggml_type::q8_0,   ggml_type::q5_0,    ggml_type::q4_1,
                             ggml_type::q5_1,    ggml_type::q2_k,   ggml_type::q3_k,    ggml_type::q4_k,
                             ggml_type::q5_k,    ggml_type::q6_k,   ggml_type::iq4_nl,  ggml_type::iq4_xs,
                             ggml_type::mxfp4,   ggml_type::f16,    ggml_type::bf16,    ggml_type::f32,
                             ggml_type::iq2_xxs, ggml_type::iq2_xs, ggml_type::iq2_s,   ggml_type::iq3_xxs,
                             ggml_type::iq3_s,   ggml_type::iq1_s,  ggml_type::iq1_m};
  for (ggml_type t : types) {
    const int64_t rows = 24, cols = 768;
    const int n_tokens = 3;
    const int block = type_traits(t).block_size == 256 ? 256 : 32;
    const std::vector<uint8_t> wbytes = random_weights(t, rows, cols, rng);
    const weight_view w{t, rows, cols, wbytes.data(), matmul_row_bytes(t, cols)};
    const std::vector<float> wf = dequantized(w);
    const std::vector<float> x = random_x(n_tokens, cols, rng);
    std::vector<float> y(static_cast<size_t>(n_tokens * rows));
    matmul_reference(w, x.data(), n_tokens, y.data());
    const bool float_weights = t == ggml_type::f16 || t == ggml_type::bf16 || t == ggml_type::f32;
    double err2 = 0, expected2 = 0;
    for (int tk = 0; tk < n_tokens; ++tk) {
      std::vector<double> step(static_cast<size_t>(cols));
      for (int64_t b = 0; b < cols / block; ++b) {
        double amax = 0;
        for (int j = 0; j < block; ++j) amax = std::fmax(amax, std::fabs(x[tk * cols + b * block + j]));
        for (int j = 0; j < block; ++j) step[b * block + j] = float_weights ? 0.0 : amax / 127.0;
      }
      // f16 / bf16 weights: activations rounded to f16 / bf16 (as llama.cpp
      // does); the step is x's ulp in that type (10 / 7 mantissa bits).
      if (t == ggml_type::f16 || t == ggml_type::bf16) {
        const int mant = t == ggml_type::f16 ? 10 : 7;
        for (int64_t k = 0; k < cols; ++k) {
          const double ax = std::fabs(x[tk * cols + k]);
          if (ax == 0) {
            step[k] = 0;
          } else {
            step[k] = t == ggml_type::f16 && ax < std::ldexp(1.0, -14) ? std::ldexp(1.0, -24)
                                                                       : std::ldexp(1.0, std::ilogb(ax) - mant);
          }
        }
      }
      for (int64_t r = 0; r < rows; ++r) {
        double exact = 0, bound = 0, mag = 0, var = 0;
        for (int64_t k = 0; k < cols; ++k) {
          const double wk = wf[r * cols + k], xk = x[tk * cols + k];
          exact += wk * xk;
          mag += std::fabs(wk * xk);
          bound += std::fabs(wk) * step[k] * (0.5 + 128.0 / 2048.0);
          var += wk * wk * step[k] * step[k] / 12.0;
        }
        const double got = y[tk * rows + r];
        ASSERT_LE(std::fabs(got - exact), bound + 1e-5 * mag) << "type " << static_cast<int>(t) << " row " << r;
        err2 += (got - exact) * (got - exact);
        expected2 += var;
      }
    }
    if (t != ggml_type::f32) {
      EXPECT_LT(err2, 2.0 * expected2) << "type " << static_cast<int>(t);
      EXPECT_GT(err2, 0.25 * expected2) << "type " << static_cast<int>(t) << ": activations not quantized / rounded?";
    }
  }
}

// Realistic weights from the reference quantizer, through the fastest path.
TEST(matmul_test, quantized_weights_from_quantizer_track_float_math) {
  std::mt19937 rng(11);
  thread_pool pool(2);
  matmul_scratch scratch;
  const ggml_type types[] = {ggml_type::q4_0, ggml_type::q8_0,   ggml_type::q4_1,   ggml_type::q5_1, ggml_type::q4_k,
                             ggml_type::q5_k, ggml_type::q6_k,   ggml_type::iq4_nl, ggml_type::iq4_xs,
                             ggml_type::mxfp4};
  for (ggml_type t : types) {
    const int64_t rows = 40, cols = 1280;
    std::normal_distribution<float> normal(0.f, 0.05f);
    std::vector<float> wf(static_cast<size_t>(rows * cols));
    for (auto& v : wf) v = normal(rng);
    const size_t row_bytes = matmul_row_bytes(t, cols);
    std::vector<uint8_t> wbytes(row_bytes * rows);
    for (int64_t r = 0; r < rows; ++r) ASSERT_GT(quantize_row(t, wf.data() + r * cols, wbytes.data() + r * row_bytes, cols), 0u);
    const weight_view w{t, rows, cols, wbytes.data(), row_bytes};
    const std::vector<float> wd = dequantized(w);
    const std::vector<float> x = random_x(5, cols, rng);
    std::vector<float> y(5 * rows);
    matmul(w, x.data(), 5, y.data(), pool, scratch);
    double err2 = 0, sig2 = 0;
    for (int tk = 0; tk < 5; ++tk)
      for (int64_t r = 0; r < rows; ++r) {
        double exact = 0;
        for (int64_t k = 0; k < cols; ++k) exact += double(wd[r * cols + k]) * x[tk * cols + k];
        err2 += (y[tk * rows + r] - exact) * (y[tk * rows + r] - exact);
        sig2 += exact * exact;
      }
    // 8-bit activations: relative rms error around 1%.
    EXPECT_LT(std::sqrt(err2 / sig2), 0.03) << "type " << static_cast<int>(t);
  }
}

TEST(matmul_test, scratch_stops_growing_after_the_largest_call) {
  std::mt19937 rng(5);
  thread_pool pool(2);
  matmul_scratch scratch;
  const std::vector<uint8_t> wbytes = random_weights(ggml_type::q4_0, 8, 256, rng);
  const weight_view w{ggml_type::q4_0, 8, 256, wbytes.data(), matmul_row_bytes(ggml_type::q4_0, 256)};
  const std::vector<float> x = random_x(16, 256, rng);
  std::vector<float> y(16 * 8);
  matmul(w, x.data(), 16, y.data(), pool, scratch);
  const size_t cap = scratch.capacity();
  EXPECT_GT(cap, 0u);
  for (int n : {1, 7, 16}) {
    matmul(w, x.data(), n, y.data(), pool, scratch);
    EXPECT_EQ(scratch.capacity(), cap);
  }
}

TEST(matmul_test, supports_the_required_types) {
  for (const type_case& tc : all_types) EXPECT_TRUE(matmul_supports(tc.type)) << static_cast<int>(tc.type);
  EXPECT_FALSE(matmul_supports(ggml_type::q8_k));
  EXPECT_FALSE(matmul_supports(ggml_type::i32));
}

}  // namespace
}  // namespace cortex::kernels
