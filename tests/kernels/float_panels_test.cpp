// kernels/float_panels: the AVX-512 outer-product kernel against the
// reference order (every output summed over the columns in order, one fused
// multiply-add each, from +0), bit for bit; against a double-precision dot;
// and the same bits for a token alone, in any batch and on any threads.
#include "kernels/float_panels.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu_features.hpp"
#include "kernels/fp16.hpp"
#include "kernels/thread_pool.hpp"
#include "random_weights.hpp"

namespace cortex::kernels {
namespace {

struct shape {
  int64_t rows, cols;
};

std::vector<float> random_x(int n_tokens, int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(n_tokens * cols));
  for (auto& v : x) v = normal(rng);
  return x;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class float_panels_test : public ::testing::TestWithParam<ggml_type> {
 protected:
  void SetUp() override {
    if (!float_panels_supported(GetParam())) GTEST_SKIP() << "no AVX-512 on this CPU: float panels are not used";
  }
};

TEST_P(float_panels_test, kernel_is_the_reference_order_bit_for_bit) {
  std::mt19937 rng(4100);
  thread_pool pool(3);
  matmul_scratch scratch;
  for (const shape s : {shape{1, 1}, shape{15, 7}, shape{16, 16}, shape{17, 33}, shape{40, 100}, shape{100, 384}}) {
    const auto bytes = random_weights(GetParam(), s.rows, s.cols, rng);
    const weight_view w{GetParam(), s.rows, s.cols, bytes.data(), matmul_row_bytes(GetParam(), s.cols)};
    const float_panels p = pack_float_panels(w, pool);
    for (int n_tokens : {1, 2, 11, 12, 13, 25, 70}) {
      const auto x = random_x(n_tokens, s.cols, rng);
      std::vector<float> got(static_cast<size_t>(n_tokens * s.rows)), want(got.size());
      matmul_float_panels(p, x.data(), n_tokens, got.data(), pool, scratch);
      matmul_float_panels_reference(p, x.data(), n_tokens, want.data());
      ASSERT_TRUE(same_bits(got, want)) << s.rows << "x" << s.cols << ", " << n_tokens << " tokens";
    }
  }
}

// The reference itself: the weights and the activations as llama.cpp rounds
// them for the type, summed in double, agree to float precision.
TEST_P(float_panels_test, reference_is_the_product) {
  std::mt19937 rng(4101);
  thread_pool pool(1);
  const int64_t rows = 37, cols = 300;
  const int n_tokens = 5;
  const auto bytes = random_weights(GetParam(), rows, cols, rng);
  const weight_view w{GetParam(), rows, cols, bytes.data(), matmul_row_bytes(GetParam(), cols)};
  const auto x = random_x(n_tokens, cols, rng);
  std::vector<float> y(static_cast<size_t>(n_tokens * rows));
  matmul_float_panels_reference(pack_float_panels(w, pool), x.data(), n_tokens, y.data());
  std::vector<float> dense(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) dequantize_row(GetParam(), bytes.data() + r * w.row_bytes, dense.data() + r * cols, cols);
  for (int t = 0; t < n_tokens; ++t) {
    for (int64_t r = 0; r < rows; ++r) {
      double want = 0, scale = 0;
      for (int64_t c = 0; c < cols; ++c) {
        float xv = x[static_cast<size_t>(t * cols + c)];
        if (GetParam() == ggml_type::f16) xv = fp16_to_fp32(fp32_to_fp16(xv));
        if (GetParam() == ggml_type::bf16) xv = bf16_to_fp32(fp32_to_bf16(xv));
        want += static_cast<double>(dense[static_cast<size_t>(r * cols + c)]) * xv;
        scale += std::fabs(static_cast<double>(dense[static_cast<size_t>(r * cols + c)]) * xv);
      }
      EXPECT_NEAR(y[static_cast<size_t>(t * rows + r)], want, 1e-5 * scale) << "token " << t << " row " << r;
    }
  }
}

TEST_P(float_panels_test, a_token_alone_equals_it_in_any_batch_and_on_any_threads) {
  std::mt19937 rng(4102);
  const int64_t rows = 70, cols = 130;
  const int n_tokens = 29;
  const auto bytes = random_weights(GetParam(), rows, cols, rng);
  const weight_view w{GetParam(), rows, cols, bytes.data(), matmul_row_bytes(GetParam(), cols)};
  const auto x = random_x(n_tokens, cols, rng);
  matmul_scratch scratch;
  thread_pool one(1);
  const float_panels p = pack_float_panels(w, one);
  std::vector<float> batch(static_cast<size_t>(n_tokens * rows));
  matmul_float_panels(p, x.data(), n_tokens, batch.data(), one, scratch);
  for (int threads : {1, 2, 5}) {
    thread_pool pool(threads);
    std::vector<float> again(batch.size());
    matmul_float_panels(p, x.data(), n_tokens, again.data(), pool, scratch);
    EXPECT_TRUE(same_bits(again, batch)) << threads << " threads";
    for (int t : {0, 11, 12, 28}) {
      std::vector<float> alone(static_cast<size_t>(rows));
      matmul_float_panels(p, x.data() + t * cols, 1, alone.data(), pool, scratch);
      EXPECT_EQ(std::memcmp(alone.data(), batch.data() + t * rows, alone.size() * sizeof(float)), 0)
          << "token " << t << " alone, " << threads << " threads";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(types, float_panels_test, ::testing::Values(ggml_type::f32, ggml_type::f16, ggml_type::bf16),
                         [](const auto& info) {
                           switch (info.param) {
                             case ggml_type::f16: return std::string("f16");
                             case ggml_type::bf16: return std::string("bf16");
                             default: return std::string("f32");
                           }
                         });

}  // namespace
}  // namespace cortex::kernels
