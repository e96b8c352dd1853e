// Batch invariance of the forward pass (protocol.md: the same seed, params
// and prompt give the same output in any batch and after any preemption): a
// sequence's logits must be bit-identical however its tokens are cut into
// steps (one prefill, odd chunks, one token at a time as decode writes them,
// which is also what a recompute after preemption must reproduce), on any
// number of threads, for every K/V type.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention.hpp"
#include "kernels/thread_pool.hpp"
#include "model/model.hpp"
#include "model/single_sequence.hpp"
#include "tests/support/golden.hpp"

namespace cortex {
namespace {

std::vector<float> run(const model& m, int threads, kernels::kv_type kv, const std::vector<int32_t>& tokens,
                       const std::vector<int>& chunks) {
  kernels::thread_pool pool(threads);
  single_sequence seq(m, pool, static_cast<int>(tokens.size()), kv);
  const int n_vocab = m.hparams().n_vocab;
  std::vector<float> out;
  size_t at = 0;
  size_t ci = 0;
  while (at < tokens.size()) {
    const size_t n = std::min(tokens.size() - at, static_cast<size_t>(chunks[ci++ % chunks.size()]));
    const std::vector<int32_t> part(tokens.begin() + static_cast<long>(at), tokens.begin() + static_cast<long>(at + n));
    const int rows = seq.feed(part, logits_mode::all, static_cast<int>(n));
    for (int r = 0; r < rows; ++r) out.insert(out.end(), seq.logits(r), seq.logits(r) + n_vocab);
    at += n;
  }
  return out;
}

// Past the first key part (kernels::attention_part_keys), so that the fold is
// exercised both inside the kernel and across tasks.
constexpr int k_tokens = kernels::attention_part_keys + 100;

class chunk_invariance : public ::testing::TestWithParam<std::string> {};

TEST_P(chunk_invariance, logits_do_not_depend_on_chunks_or_threads) {
  CORTEX_NEEDS_REFERENCE_DATA();
  auto m = model::load(testing::shared_dir() + "/golden/models/" + GetParam());
  ASSERT_TRUE(m) << m.error().message;
  const int n_vocab = (*m)->hparams().n_vocab;
  std::mt19937 rng(5);
  std::vector<int32_t> tokens = {1};
  for (int i = 1; i < k_tokens; ++i) tokens.push_back(3 + static_cast<int32_t>(rng() % static_cast<uint32_t>(n_vocab - 3)));
  // F32 weights with an F32 cache, quantized ones with the default F16 one.
  const bool f32 = GetParam().find("f32") != std::string::npos;
  for (kernels::kv_type kv : {f32 ? kernels::kv_type::f32 : kernels::kv_type::f16}) {
    const std::vector<float> ref = run(**m, 1, kv, tokens, {k_tokens});
    struct variant {
      int threads;
      std::vector<int> chunks;
    };
    // Whole prompts on more threads than KV heads (the kernel folds the key
    // parts), odd chunks, one token at a time on 3 threads (decode steps:
    // one task per key part, folded after), chunks around the 32-query
    // tiles, and mixed ones.
    const variant variants[] = {{3, {k_tokens}}, {1, {7, 13, 1, 32}}, {3, {1}}, {2, {16, 17}}, {4, {31, 33, 300}}};
    for (const variant& v : variants) {
      const std::vector<float> got = run(**m, v.threads, kv, tokens, v.chunks);
      ASSERT_EQ(got.size(), ref.size());
      int first_diff = -1, n_diff = 0;
      for (size_t t = 0; t < tokens.size(); ++t) {
        if (std::memcmp(got.data() + t * n_vocab, ref.data() + t * n_vocab, n_vocab * sizeof(float)) != 0) {
          if (first_diff < 0) first_diff = static_cast<int>(t);
          ++n_diff;
        }
      }
      EXPECT_EQ(n_diff, 0) << "kv " << kernels::kv_traits(kv).name << ", " << v.threads << " threads, chunks "
                           << v.chunks[0] << "...: " << n_diff << " positions differ, the first at " << first_diff;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(models, chunk_invariance,
                         ::testing::Values("tiny-llama-f32.gguf", "tiny-llama-q4_k_m.gguf"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string s = i.param.substr(0, i.param.find(".gguf"));
                           for (char& c : s) if (c == '-') c = '_';
                           return s;
                         });

}  // namespace
}  // namespace cortex
