// The scalar matmul reference against its definition, llama.cpp's vec_dot
// semantics: a float64 dot product of the dequantized weights with the
// activations as llama.cpp quantizes them on x86, re-derived here from its
// published algorithm (not taken from the code under test):
//   q8_0 (q4_0, q5_0, q8_0 weights): d = amax / 127, q = round_half_even(x *
//     (127 / amax)), value q * f16(d);
//   q8_1 (q4_1, q5_1): q and f16(d) as q8_0, plus s = f16(d * sum(q)) per
//     block, which the weight block's min multiplies (block_q8_1.s);
//   q8_K (k-quants): max = the x of largest |x|, q = min(127,
//     round_half_even(x * -127 / max)), value q * (1 / (-127 / max)).
// What remains is float rounding in the reference's own sums. Also: every
// isa on the real llama-quantize weights of golden/arch/qllama-<type>.gguf.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_features.hpp"
#include "kernels/fp16.hpp"
#include "kernels/matmul.hpp"
#include "kernels/quant.hpp"
#include "kernels/quant_blocks.hpp"
#include "kernels/thread_pool.hpp"
#include "tests/kernels/gguf_tensors.hpp"
#include "tests/kernels/isa_paths.hpp"
#include "tests/kernels/random_weights.hpp"
#include "tests/support/golden.hpp"

namespace cortex::kernels {
namespace {

enum class act { q8_0, q8_1, q8_k };

act activation_of(ggml_type t) {
  if (t == ggml_type::q4_1 || t == ggml_type::q5_1) return act::q8_1;
  return type_traits(t).block_size == 256 ? act::q8_k : act::q8_0;
}

float f16_round(float v) { return fp16_to_fp32(fp32_to_fp16(v)); }

// One token's activations as llama.cpp's vec_dot sees them: the value of
// each element, and for q8_1 each block's s.
struct quantized_token {
  std::vector<double> value;
  std::vector<double> block_s;
  std::vector<double> block_s_rounded_d;  // s from f16(d) instead: what q8_1 does not do
};

quantized_token quantize_like_llama(act a, const float* x, int64_t cols) {
  EXPECT_EQ(std::fegetround(), FE_TONEAREST);
  quantized_token out;
  out.value.resize(static_cast<size_t>(cols));
  const int64_t block = a == act::q8_k ? 256 : 32;
  for (int64_t b = 0; b < cols / block; ++b) {
    const float* xb = x + b * block;
    float amax = 0, max = 0;
    for (int64_t j = 0; j < block; ++j) {
      if (std::fabs(xb[j]) > amax) {
        amax = std::fabs(xb[j]);
        max = xb[j];
      }
    }
    if (a == act::q8_k) {
      const float iscale = amax != 0 ? -127.f / max : 0.f;
      const float d = amax != 0 ? 1 / iscale : 0.f;
      for (int64_t j = 0; j < block; ++j) {
        const float q = std::min(127.f, std::nearbyint(iscale * xb[j]));
        out.value[b * block + j] = static_cast<double>(q) * d;
      }
      continue;
    }
    const float d = amax / 127, id = amax != 0 ? 127 / amax : 0.f;
    int sum = 0;
    for (int64_t j = 0; j < block; ++j) {
      const int q = static_cast<int>(std::nearbyint(xb[j] * id));
      sum += q;
      out.value[b * block + j] = static_cast<double>(q) * f16_round(d);
    }
    out.block_s.push_back(f16_round(d * static_cast<float>(sum)));
    out.block_s_rounded_d.push_back(f16_round(f16_round(d) * static_cast<float>(sum)));
  }
  return out;
}

// The min m of each 32-block of a q4_1 / q5_1 row (0 for other types).
std::vector<float> block_mins(ggml_type t, const uint8_t* row, int64_t cols) {
  std::vector<float> m(static_cast<size_t>(cols / 32), 0.f);
  if (activation_of(t) != act::q8_1) return m;
  const size_t block_bytes = type_traits(t).type_size;
  for (size_t b = 0; b < m.size(); ++b) {
    half_bits h;
    std::memcpy(&h, row + b * block_bytes + offsetof(block_q4_1, m), 2);
    static_assert(offsetof(block_q4_1, m) == offsetof(block_q5_1, m), "same min position");
    m[b] = fp16_to_fp32(h);
  }
  return m;
}

// y (n_tokens, rows) by the definition, and the magnitude its float
// rounding is relative to (sum of |each product|, a min's part apart).
struct expected_y {
  std::vector<double> y, magnitude;
};

expected_y by_definition(const weight_view& w, const std::vector<float>& x, int n_tokens) {
  const act a = activation_of(w.type);
  expected_y e;
  e.y.resize(static_cast<size_t>(n_tokens * w.rows));
  e.magnitude.resize(e.y.size());
  std::vector<float> wf(static_cast<size_t>(w.cols));
  for (int t = 0; t < n_tokens; ++t) {
    const quantized_token xq = quantize_like_llama(a, x.data() + t * w.cols, w.cols);
    for (int64_t r = 0; r < w.rows; ++r) {
      const auto* row = static_cast<const uint8_t*>(w.data) + r * w.row_bytes;
      dequantize_row(w.type, row, wf.data(), w.cols);
      const std::vector<float> m = block_mins(w.type, row, w.cols);
      double sum = 0, mag = 0;
      for (int64_t k = 0; k < w.cols; ++k) {
        const double mk = m[k / 32];
        sum += (wf[k] - mk) * xq.value[k];
        mag += (std::fabs(wf[k] - mk) + std::fabs(mk)) * std::fabs(xq.value[k]);
      }
      for (size_t b = 0; b < xq.block_s.size(); ++b) sum += m[b] * xq.block_s[b];
      e.y[t * w.rows + r] = sum;
      e.magnitude[t * w.rows + r] = mag;
    }
  }
  return e;
}

const ggml_type quant_types[] = {ggml_type::q4_0, ggml_type::q4_1, ggml_type::q5_0,   ggml_type::q5_1,
                                 ggml_type::q8_0, ggml_type::q2_k, ggml_type::q3_k,   ggml_type::q4_k,
                                 ggml_type::q5_k, ggml_type::q6_k, ggml_type::iq4_nl, ggml_type::iq4_xs,
                                 ggml_type::mxfp4, ggml_type::iq2_xxs, ggml_type::iq2_xs, ggml_type::iq2_s,
                                 ggml_type::iq3_xxs, ggml_type::iq3_s, ggml_type::iq1_s, ggml_type::iq1_m};

TEST(matmul_reference_definition, equals_float64_dot_of_dequantized_weights_and_llama_activations) {
  std::mt19937 rng(2024);
  for (ggml_type t : quant_types) {
    SCOPED_TRACE(type_traits(t).name);
    const int64_t rows = 19, cols = 768;
    const int n_tokens = 4;
    const std::vector<uint8_t> wbytes = random_weights(t, rows, cols, rng);
    const weight_view w{t, rows, cols, wbytes.data(), matmul_row_bytes(t, cols)};
    std::vector<float> x = random_x(n_tokens, cols, rng);
    x[5] = 40.f;  // an outlier: other elements of its block lose precision
    std::vector<float> y(static_cast<size_t>(n_tokens * rows));
    matmul_reference(w, x.data(), n_tokens, y.data());
    const expected_y e = by_definition(w, x, n_tokens);
    for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], e.y[i], 1e-6 * e.magnitude[i] + 1e-9) << "output " << i;
  }
}

// q8_1's s is f16(d * sum(q)) with d before its f16 rounding (llama.cpp's
// x86 quantize_row_q8_1): a q4_1 / q5_1 row with d = 0 and m = 1 outputs
// exactly s, on every isa. Random blocks include ones where s from f16(d)
// would differ, so the test tells the two apart.
TEST(matmul_reference_definition, q8_1_block_sum_uses_the_unrounded_scale) {
  std::mt19937 rng(31);
  const int n_tokens = 400;
  const std::vector<float> x = random_x(n_tokens, 32, rng);
  thread_pool pool(2);
  matmul_scratch scratch;
  for (ggml_type t : {ggml_type::q4_1, ggml_type::q5_1}) {
    SCOPED_TRACE(type_traits(t).name);
    std::vector<uint8_t> row = random_weights(t, 1, 32, rng);
    put_half(row.data() + offsetof(block_q4_1, d), 0.f);
    put_half(row.data() + offsetof(block_q4_1, m), 1.f);
    const weight_view w{t, 1, 32, row.data(), row.size()};
    int n_telling = 0;
    std::vector<double> want(n_tokens);
    for (int tk = 0; tk < n_tokens; ++tk) {
      const quantized_token xq = quantize_like_llama(act::q8_1, x.data() + tk * 32, 32);
      want[tk] = xq.block_s[0];
      n_telling += xq.block_s[0] != xq.block_s_rounded_d[0];
    }
    EXPECT_GT(n_telling, 10);
    for (isa i : runnable_isas()) {
      SCOPED_TRACE(isa_name(i));
      set_isa_for_testing(i);
      std::vector<float> y(n_tokens, -1.f);
      matmul(w, x.data(), n_tokens, y.data(), pool, scratch);
      for (int tk = 0; tk < n_tokens; ++tk) ASSERT_EQ(y[tk], want[tk]) << "token " << tk;
    }
    restore_default_isa();
  }
}

// Real llama-quantize weights (every quantized matrix of
// golden/arch/qllama-<type>.gguf): every isa against the scalar reference,
// and the reference by its definition.
struct real_weights_case {
  const char* file;
  ggml_type type;
  int n_matrices;  // of that type in the file
};

class real_weights : public ::testing::TestWithParam<real_weights_case> {};

TEST_P(real_weights, on_every_isa) {
  CORTEX_NEEDS_REFERENCE_DATA();
  const real_weights_case& c = GetParam();
  const testing::gguf_tensors file(testing::shared_dir() + "/golden/arch/" + c.file);
  std::mt19937 rng(8);
  thread_pool pool(2);
  matmul_scratch scratch;
  int n_checked = 0;
  for (const auto& [name, t] : file.all()) {
    if (t.type != c.type || t.ne.size() != 2) continue;
    SCOPED_TRACE(name);
    // The token embedding is the largest matrix: its first 64 rows suffice.
    const int64_t rows = std::min<int64_t>(t.ne[1], 64), cols = t.ne[0];
    const weight_view w{t.type, rows, cols, t.data, row_size(t.type, cols)};
    const int n_tokens = 5;
    const std::vector<float> x = random_x(n_tokens, cols, rng);
    std::vector<float> y_ref(static_cast<size_t>(n_tokens * rows));
    matmul_reference(w, x.data(), n_tokens, y_ref.data());
    const expected_y e = by_definition(w, x, n_tokens);
    for (size_t i = 0; i < y_ref.size(); ++i) ASSERT_NEAR(y_ref[i], e.y[i], 1e-6 * e.magnitude[i]) << i;
    for (isa i : runnable_isas()) {
      SCOPED_TRACE(isa_name(i));
      set_isa_for_testing(i);
      for (int n : {1, n_tokens}) {
        std::vector<float> y(static_cast<size_t>(n * rows), -1.f);
        matmul(w, x.data(), n, y.data(), pool, scratch);
        for (int64_t k = 0; k < n * rows; ++k) ASSERT_NEAR(y[k], y_ref[k], 2e-5 * e.magnitude[k]) << k;
      }
    }
    restore_default_isa();
    ++n_checked;
  }
  EXPECT_EQ(n_checked, c.n_matrices);
}

// 2 layers x 7 matrices, the token embedding and the output.
INSTANTIATE_TEST_SUITE_P(qllama, real_weights,
                         ::testing::Values(real_weights_case{"qllama-q3_k.gguf", ggml_type::q3_k, 16},
                                           real_weights_case{"qllama-iq4_nl.gguf", ggml_type::iq4_nl, 16},
                                           real_weights_case{"qllama-mxfp4.gguf", ggml_type::mxfp4, 16},
                                           real_weights_case{"qllama-iq3_s.gguf", ggml_type::iq3_s, 16},
                                           // the token embedding is Q8_0 there
                                           real_weights_case{"qllama-iq2_xxs.gguf", ggml_type::iq2_xxs, 15}),
                         [](const auto& info) { return std::string(type_traits(info.param.type).name); });

}  // namespace
}  // namespace cortex::kernels
