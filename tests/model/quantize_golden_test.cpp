// Re-quantizes the F32 reference models and compares byte for byte with the
// quantized files llama.cpp wrote from the same weights: our quantize_row
// must reproduce llama-quantize (no importance matrix) exactly.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "kernels/ggml_type.hpp"
#include "kernels/quant.hpp"
#include "gguf/gguf.hpp"
#include "tests/support/golden.hpp"

namespace cortex {
namespace {

using testing::model_path;  // golden/models/ first, then models/

struct quantized_pair {
  const char* source;     // F32 weights
  const char* quantized;  // written by llama.cpp from the same weights
};

class quantize_golden : public ::testing::TestWithParam<quantized_pair> {};

TEST_P(quantize_golden, every_tensor_requantizes_to_the_same_bytes) {
  CORTEX_NEEDS_REFERENCE_DATA();
  auto src = gguf::file::open(model_path(GetParam().source));
  ASSERT_TRUE(src) << src.error().message;
  auto dst = gguf::file::open(model_path(GetParam().quantized));
  ASSERT_TRUE(dst) << dst.error().message;
  ASSERT_EQ((*src)->tensors().size(), (*dst)->tensors().size());

  int n_checked = 0;
  for (const auto& q : (*dst)->tensors()) {
    SCOPED_TRACE(std::string(GetParam().quantized) + ": " + q.name + " as " + type_traits(q.type).name);
    const gguf::tensor_info* f = (*src)->find_tensor(q.name);
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(f->type, ggml_type::f32);
    ASSERT_EQ(f->n_elements(), q.n_elements());
    ASSERT_TRUE(quantize_supported(q.type));
    const int64_t n_cols = q.ne[0], n_rows = q.n_rows();
    const size_t stride = row_size(q.type, n_cols);
    std::vector<float> row(static_cast<size_t>(n_cols));
    std::vector<uint8_t> out(stride);
    int64_t n_bad_rows = 0, first_bad = -1;
    for (int64_t r = 0; r < n_rows; ++r) {
      std::memcpy(row.data(), f->data + static_cast<size_t>(r * n_cols) * sizeof(float), row.size() * sizeof(float));
      ASSERT_EQ(quantize_row(q.type, row.data(), out.data(), n_cols), stride);
      if (std::memcmp(out.data(), q.data + static_cast<size_t>(r) * stride, stride) != 0) {
        if (first_bad < 0) first_bad = r;
        ++n_bad_rows;
      }
    }
    EXPECT_EQ(n_bad_rows, 0) << "of " << n_rows << " rows differ, first " << first_bad;
    ++n_checked;
  }
  EXPECT_GT(n_checked, 0);
}

INSTANTIATE_TEST_SUITE_P(models, quantize_golden,
                         ::testing::Values(quantized_pair{"stories260K.gguf", "stories260K-f16.gguf"},
                                           quantized_pair{"stories260K.gguf", "stories260K-q8_0.gguf"},
                                           quantized_pair{"tiny-llama-f32.gguf", "tiny-llama-f16.gguf"},
                                           quantized_pair{"tiny-llama-f32.gguf", "tiny-llama-q8_0.gguf"},
                                           quantized_pair{"tiny-llama-f32.gguf", "tiny-llama-q4_0.gguf"},
                                           quantized_pair{"tiny-llama-f32.gguf", "tiny-llama-q4_k_m.gguf"},
                                           quantized_pair{"tiny-qwen2-f32.gguf", "tiny-qwen2-q8_0.gguf"}),
                         [](const auto& info) {
                           std::string s = info.param.quantized;
                           s = s.substr(0, s.size() - 5);
                           for (auto& c : s) if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

}  // namespace
}  // namespace cortex
