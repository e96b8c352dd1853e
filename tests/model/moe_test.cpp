// Mixture-of-experts specifics beyond the golden files (which the arch_golden
// and arch_perplexity suites check): attention sinks when one row's keys are
// split across threads (the golden prompts are too short for that), and the
// per-token weight accounting that counts only the experts a token runs.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/attention.hpp"
#include "kernels/quant_traits.hpp"
#include "kernels/thread_pool.hpp"
#include "model/model.hpp"
#include "model/single_sequence.hpp"
#include "tests/support/golden.hpp"

namespace cortex {
namespace {

std::string arch_file(const std::string& name) { return testing::shared_dir() + "/golden/arch/" + name + ".gguf"; }

// gpt-oss-f32 has a full-attention layer with sinks. Past 1,024 tokens its
// keys are cut into parts (kernels::attention_part_keys): a prefill folds
// them inside the kernel, a decode step on 8 threads runs one task per part
// and merges after (blocks::plan_attention). The sinks must rescale the
// folded rows exactly as they do on 1 thread: the same bits.
TEST(moe, attention_sinks_over_key_parts_match_one_thread_exactly) {
  CORTEX_NEEDS_REFERENCE_DATA();
  auto m = model::load(arch_file("gpt-oss-f32"));
  ASSERT_TRUE(m) << m.error().message;
  const int n = kernels::attention_part_keys + 76, n_vocab = (*m)->hparams().n_vocab;
  std::vector<int32_t> toks(n);
  for (int i = 0; i < n; ++i) toks[static_cast<size_t>(i)] = 3 + (i * 37) % (n_vocab - 3);
  toks[0] = 1;
  const std::vector<int32_t> prompt(toks.begin(), toks.end() - 1);
  std::vector<std::vector<float>> prefilled, decoded;
  for (int threads : {1, 8}) {
    kernels::thread_pool pool(threads);
    single_sequence seq(**m, pool, n, kernels::kv_type::f32);
    ASSERT_EQ(seq.feed(prompt, logits_mode::last), 1);
    prefilled.emplace_back(seq.logits(0), seq.logits(0) + n_vocab);
    ASSERT_EQ(seq.feed({toks.back()}, logits_mode::last), 1);
    decoded.emplace_back(seq.logits(0), seq.logits(0) + n_vocab);
  }
  double norm = 0;
  for (float v : decoded[0]) norm = std::max(norm, static_cast<double>(std::fabs(v)));
  EXPECT_GT(norm, 0.1);
  EXPECT_EQ(prefilled[0], prefilled[1]) << "a prefill folding key parts differs on 8 threads";
  EXPECT_EQ(decoded[0], decoded[1]) << "a decode step merging key parts across tasks differs from 1 thread";
}

// Decode reads the router and n_used of n_expert experts per layer: the
// bytes per token are the dense matrices, the routers, that share of the
// expert tensors, the output and one embedding row, counted here from the
// file's tensor list.
TEST(moe, bytes_per_token_count_only_the_active_share_of_the_experts) {
  CORTEX_NEEDS_REFERENCE_DATA();
  for (const std::string name : {"qwen3moe-f32", "gpt-oss-mxfp4"}) {
    auto m = model::load(arch_file(name));
    ASSERT_TRUE(m) << m.error().message;
    const model_hparams& hp = (*m)->hparams();
    ASSERT_TRUE(hp.moe.enabled());
    double want = 0;
    for (const auto& t : (*m)->file().tensors()) {
      const double bytes = static_cast<double>(row_size(t.type, t.ne[0])) * static_cast<double>(t.n_elements() / t.ne[0]);
      if (t.n_dims < 2 || t.name.find(".bias") != std::string::npos) continue;  // vectors: f32 copies, not streamed
      if (t.name == "token_embd.weight") {
        want += static_cast<double>(row_size(t.type, t.ne[0]));
        if ((*m)->file().find_tensor("output.weight") == nullptr) want += bytes;  // tied
      } else if (t.name.find("_exps.") != std::string::npos) {
        want += bytes * hp.moe.n_used / hp.moe.n_expert;
      } else {
        want += bytes;
      }
    }
    EXPECT_NEAR(static_cast<double>((*m)->bytes_per_token()), want, 2.0) << name;
    EXPECT_LT(static_cast<double>((*m)->bytes_per_token()), 0.7 * static_cast<double>((*m)->file().size())) << name;
  }
}

}  // namespace
}  // namespace cortex
