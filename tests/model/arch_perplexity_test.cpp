// Perplexity of a long text under every architecture of ../shared/golden/arch
// within 0.1% of llama.cpp's llama-perplexity (issue "The models people run").
// The golden folder has no perplexity figures, so the reference values were
// made with the reference llama.cpp and are kept beside the test, with the
// command that made them: tests/data/perplexity/llama_cpp.json.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "kernels/thread_pool.hpp"
#include "model/model.hpp"
#include "model/perplexity.hpp"
#include "tests/support/golden.hpp"
#include "text/tokenizer.hpp"

namespace cortex {
namespace {

const std::string data_dir = std::string(CORTEX_SOURCE_DIR) + "/tests/data/perplexity/";

class arch_perplexity : public ::testing::TestWithParam<std::string> {};

TEST_P(arch_perplexity, within_a_tenth_of_a_percent_of_llama_cpp) {
  CORTEX_NEEDS_REFERENCE_DATA();
  const auto ref = testing::load_json(data_dir + "llama_cpp.json");
  ASSERT_FALSE(ref.is_discarded());
  const double want = ref["ppl"][GetParam()].get<double>();
  const std::string text = testing::read_file(data_dir + "text.txt");
  ASSERT_GT(text.size(), 5000u);
  auto m = model::load(testing::shared_dir() + "/golden/arch/" + GetParam() + ".gguf");
  ASSERT_TRUE(m) << m.error().message;
  kernels::thread_pool pool(2);
  const auto ids = (*m)->tokenizer().encode(text, true);
  const perplexity_result r = windowed_perplexity(**m, pool, ids, ref["ctx"].get<int>(), kernels::kv_type::f32);
  EXPECT_EQ(r.n_windows, 45) << "llama.cpp scored 45 windows of this text";
  std::printf("[ ppl      ] %s: ours %.4f, llama.cpp %.4f (%+.4f%%)\n", GetParam().c_str(), r.ppl, want, 100 * (r.ppl / want - 1));
  EXPECT_LT(std::fabs(r.ppl / want - 1), 0.001);
}

INSTANTIATE_TEST_SUITE_P(dense, arch_perplexity,
                         ::testing::Values("llama-f32", "qwen2-f32", "qwen3-f32", "granite-f32", "smollm3-f32", "phi3-f32",
                                           "gemma2-f32", "gemma3-f32", "gemma4-f32"),
                         testing::model_param_name<::testing::TestParamInfo<std::string>>);

INSTANTIATE_TEST_SUITE_P(hybrid, arch_perplexity, ::testing::Values("qwen35-f32"),
                         testing::model_param_name<::testing::TestParamInfo<std::string>>);

INSTANTIATE_TEST_SUITE_P(moe, arch_perplexity, ::testing::Values("qwen3moe-f32", "gpt-oss-f32", "gpt-oss-mxfp4"),
                         testing::model_param_name<::testing::TestParamInfo<std::string>>);

}  // namespace
}  // namespace cortex
