// Perplexity of make-model files (seed 7) within 0.1% of llama.cpp's
// llama-perplexity on the same files: architectures ../shared/golden/arch
// has no file for (qwen35moe: delta-net layers, routed and shared experts)
// and quantized experts (qwen3moe in Q4_K_M). The writer is deterministic,
// so the recorded figures (tests/data/perplexity/llama_cpp.json, with the
// command) hold for the files this test writes; a writer change that alters
// them fails here and needs the figures made again.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <unistd.h>

#include "kernels/thread_pool.hpp"
#include "model/model.hpp"
#include "model/perplexity.hpp"
#include "model/synthetic.hpp"
#include "tests/support/golden.hpp"
#include "text/tokenizer.hpp"

namespace cortex {
namespace {

const std::string data_dir = std::string(CORTEX_SOURCE_DIR) + "/tests/data/perplexity/";

struct synthetic_case {
  const char* shape;
  const char* type;
};

class synthetic_perplexity : public ::testing::TestWithParam<synthetic_case> {};

TEST_P(synthetic_perplexity, within_a_tenth_of_a_percent_of_llama_cpp) {
  const auto ref = testing::load_json(data_dir + "llama_cpp.json");
  ASSERT_FALSE(ref.is_discarded());
  const std::string key = std::string(GetParam().shape) + " " + GetParam().type;
  const double want = ref["synthetic"][key].get<double>();
  const std::string path = ::testing::TempDir() + "cortex_synth_ppl_" + std::to_string(::getpid()) + ".gguf";
  ASSERT_TRUE(write_synthetic_model(*find_synthetic_shape(GetParam().shape), GetParam().type, 7, path, 2));
  auto m = model::load(path);
  std::remove(path.c_str());
  ASSERT_TRUE(m) << m.error().message;
  const std::string text = testing::read_file(data_dir + "text.txt");
  kernels::thread_pool pool(2);
  const auto ids = (*m)->tokenizer().encode(text, true);
  const perplexity_result r = windowed_perplexity(**m, pool, ids, ref["ctx"].get<int>(), kernels::kv_type::f32);
  EXPECT_EQ(r.n_windows, 45);
  std::printf("[ ppl      ] %s: ours %.4f, llama.cpp %.4f (%+.4f%%)\n", key.c_str(), r.ppl, want, 100 * (r.ppl / want - 1));
  EXPECT_LT(std::fabs(r.ppl / want - 1), 0.001);
}

INSTANTIATE_TEST_SUITE_P(files, synthetic_perplexity,
                         ::testing::Values(synthetic_case{"tiny-qwen35moe", "f32"}, synthetic_case{"tiny-qwen35moe", "q8_0"},
                                           synthetic_case{"tiny-moe", "f32"}, synthetic_case{"tiny-moe", "q4_k_m"}),
                         [](const ::testing::TestParamInfo<synthetic_case>& i) {
                           std::string n = std::string(i.param.shape) + "_" + i.param.type;
                           for (char& c : n) c = (c == '-' || c == '.') ? '_' : c;
                           return n;
                         });

}  // namespace
}  // namespace cortex
