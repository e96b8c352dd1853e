// Dequantization of real llama-quantize output against gguf-py's numpy
// dequantizer: golden/arch/dequant/<model>.json gives, per tensor, the sum and
// sum of squares of all values and the first / last 32 values exactly
// (golden/arch/README.md). Covers the quant types only those files hold:
// Q3_K (qllama-q3_k), Q5_0, BF16, IQ4_NL, MXFP4 (qllama-mxfp4, and the 3-D
// expert tensors of gpt-oss-mxfp4), IQ2_XXS and IQ3_S (made with an
// importance matrix; the codebooks and sign parity are what they check).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/quant.hpp"
#include "tests/kernels/gguf_tensors.hpp"
#include "tests/support/golden.hpp"

namespace cortex {
namespace {

class dequant_arch_golden : public ::testing::TestWithParam<const char*> {};

TEST_P(dequant_arch_golden, every_tensor_matches_gguf_py) {
  CORTEX_NEEDS_REFERENCE_DATA();
  const std::string dir = testing::shared_dir() + "/golden/arch/";
  const nlohmann::json golden = testing::load_json(dir + "dequant/" + GetParam() + ".json");
  ASSERT_TRUE(golden.is_object()) << GetParam();
  const testing::gguf_tensors file(dir + golden.at("model").get<std::string>());
  const auto& tensors = golden.at("tensors");
  ASSERT_EQ(tensors.size(), file.all().size());
  int n_not_f32 = 0;
  for (const auto& ref : tensors) {
    const std::string name = ref.at("name");
    SCOPED_TRACE(std::string(GetParam()) + ": " + name);
    const testing::gguf_tensor& t = file.at(name);
    ASSERT_NE(type_traits(t.type).name, nullptr);
    ASSERT_TRUE(dequantize_supported(t.type));
    EXPECT_EQ(ref.at("ne").get<std::vector<int64_t>>(), t.ne);
    if (t.type != ggml_type::f32) ++n_not_f32;

    const int64_t n_cols = t.ne[0], n_rows = t.n_rows();
    const size_t stride = row_size(t.type, n_cols);
    std::vector<float> row(static_cast<size_t>(n_cols));
    double sum = 0, sum_sq = 0, sum_abs = 0;
    for (int64_t r = 0; r < n_rows; ++r) {
      dequantize_row(t.type, t.data + static_cast<size_t>(r) * stride, row.data(), n_cols);
      for (float v : row) {
        sum += v;
        sum_sq += static_cast<double>(v) * v;
        sum_abs += std::fabs(v);
      }
      // float32 results printed as float64: exact.
      const size_t n_listed = std::min<size_t>(32, row.size());
      if (r == 0) {
        const auto first = ref.at("row0_first32").get<std::vector<float>>();
        ASSERT_EQ(first.size(), n_listed);
        for (size_t i = 0; i < n_listed; ++i) EXPECT_EQ(row[i], first[i]) << "row 0 element " << i;
      }
      if (r == n_rows - 1) {
        const auto last = ref.at("last_row_last32").get<std::vector<float>>();
        ASSERT_EQ(last.size(), n_listed);
        for (size_t i = 0; i < n_listed; ++i) {
          EXPECT_EQ(row[row.size() - n_listed + i], last[i]) << "last row element " << row.size() - n_listed + i;
        }
      }
    }
    // The same float32 values summed in float64 in another order.
    EXPECT_NEAR(sum, ref.at("sum").get<double>(), 1e-9 * sum_abs + 1e-12);
    EXPECT_NEAR(sum_sq, ref.at("sum_sq").get<double>(), 1e-9 * sum_sq + 1e-12);
  }
  EXPECT_GT(n_not_f32, 0);
}

INSTANTIATE_TEST_SUITE_P(models, dequant_arch_golden,
                         ::testing::Values("qllama-q3_k", "qllama-q5_0", "qllama-bf16", "qllama-iq4_nl", "qllama-mxfp4",
                                           "gpt-oss-mxfp4", "qllama-iq2_xxs", "qllama-iq3_s"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) c = c == '-' ? '_' : c;
                           return s;
                         });

}  // namespace
}  // namespace cortex
