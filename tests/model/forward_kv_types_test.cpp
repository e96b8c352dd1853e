// The forward pass over typed K/V caches: perplexity with a rounded cache
// stays within issue 12's bar of the F32 cache's, and splitting a long
// context's keys across threads (key parts merged) does not change a bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "kernels/attention.hpp"
#include "kernels/thread_pool.hpp"
#include "model/model.hpp"
#include "model/single_sequence.hpp"
#include "tests/support/golden.hpp"

namespace cortex {
namespace {

std::unique_ptr<model> load(const std::string& name) {
  auto m = model::load(testing::model_path(name));
  EXPECT_TRUE(m) << m.error().message;
  return m ? std::move(*m) : nullptr;
}

// The golden cases' prompts followed by llama.cpp's greedy continuations:
// text the model finds likely, where a perturbed cache shows.
std::vector<int32_t> golden_text_tokens(const std::string& golden) {
  auto g = testing::load_json(testing::shared_dir() + "/golden/generation/" + golden + ".json");
  std::vector<int32_t> ids;
  for (const auto& c : g["cases"]) {
    for (int32_t t : c["tokens"].get<std::vector<int32_t>>()) ids.push_back(t);
    for (int32_t t : c["greedy"].get<std::vector<int32_t>>()) ids.push_back(t);
  }
  return ids;
}

// exp(mean negative log-likelihood of each next token), the whole text as one
// sequence fed in chunks of 64 (as cortex perplexity does within a window).
double perplexity(const model& m, kernels::thread_pool& pool, const std::vector<int32_t>& ids, kernels::kv_type kv) {
  single_sequence seq(m, pool, static_cast<int>(ids.size()), kv);
  const int n_vocab = m.hparams().n_vocab;
  const int rows = seq.feed(ids, logits_mode::all, 64);
  EXPECT_EQ(rows, static_cast<int>(ids.size()));
  double nll = 0;
  for (size_t j = 0; j + 1 < ids.size(); ++j) {
    const float* lg = seq.logits(static_cast<int>(j));
    const float mx = *std::max_element(lg, lg + n_vocab);
    double sum = 0;
    for (int v = 0; v < n_vocab; ++v) sum += std::exp(static_cast<double>(lg[v]) - mx);
    nll -= static_cast<double>(lg[ids[j + 1]]) - mx - std::log(sum);
  }
  return std::exp(nll / static_cast<double>(ids.size() - 1));
}

TEST(kv_cache_types, perplexity_moves_less_than_half_a_percent) {
  CORTEX_NEEDS_REFERENCE_DATA();
  // tiny-llama: head_dim 32, so q8_0 applies (stories260K's 8 does not).
  auto m = load("tiny-llama-f32.gguf");
  ASSERT_TRUE(m);
  kernels::thread_pool pool(2);
  const auto ids = golden_text_tokens("tiny-llama-f32");
  ASSERT_GT(ids.size(), 600u);
  const double base = perplexity(*m, pool, ids, kernels::kv_type::f32);
  for (auto kv : {kernels::kv_type::f16, kernels::kv_type::bf16, kernels::kv_type::q8_0}) {
    const double p = perplexity(*m, pool, ids, kv);
    std::printf("[ kv       ] tiny-llama-f32 perplexity over %zu tokens: f32 %.4f, %s %.4f (%+.3f%%)\n", ids.size(), base,
                kernels::kv_type_name(kv), p, 100 * (p / base - 1));
    EXPECT_LT(std::fabs(p / base - 1), 0.005) << kernels::kv_type_name(kv);
  }
}

TEST(kv_cache_types, keys_split_across_threads_give_the_same_logits) {
  CORTEX_NEEDS_REFERENCE_DATA();
  // 2 KV heads on 6 threads: past 1,024 positions a decode step runs one
  // task per key part (kernels::attention_part_keys) and merges them; 1
  // thread folds the parts inside the kernel. The same bits either way.
  auto m = load("tiny-llama-f32.gguf");
  ASSERT_TRUE(m);
  std::mt19937 rng(3);
  const int n = kernels::attention_part_keys + 76;
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (auto& t : ids) t = static_cast<int32_t>(rng() % static_cast<uint32_t>(m->hparams().n_vocab));
  const int n_vocab = m->hparams().n_vocab;
  for (auto kv : {kernels::kv_type::f32, kernels::kv_type::f16, kernels::kv_type::q8_0}) {
    kernels::thread_pool one(1), six(6);
    single_sequence a(*m, one, n + 10, kv), b(*m, six, n + 10, kv);
    a.feed(ids, logits_mode::last);
    b.feed(ids, logits_mode::last);
    for (int step = 0; step < 3; ++step) {
      const int32_t next = static_cast<int32_t>(step * 97 + 5);
      a.feed({next}, logits_mode::last);
      b.feed({next}, logits_mode::last);
      ASSERT_EQ(0, std::memcmp(a.logits(0), b.logits(0), sizeof(float) * static_cast<size_t>(n_vocab)))
          << kernels::kv_type_name(kv) << " step " << step;
    }
  }
}

}  // namespace
}  // namespace cortex
