// A hybrid recurrent model (Qwen3.5's gated delta-net layers) served by the
// runtime: each sequence's recurrent state lives in the executor from its
// first step to its end, so 16 concurrent greedy streams, preempted and
// recomputed when the K/V memory runs short, give exactly the text each
// gives alone; the state slots return to 0 when the streams end; the prefix
// cache and drafts are off (a cached prefix would not restore the state).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/golden.hpp"
#include "tests/support/runtime_harness.hpp"

namespace cortex {
namespace {

using testing::runtime_fixture;

runtime_config hybrid_config(int kv_blocks) {
  runtime_config c;
  c.model_path = testing::shared_dir() + "/golden/arch/qwen35-f32.gguf";
  c.threads = 2;
  c.kv_blocks = kv_blocks;
  c.kv_type = kernels::kv_type::f32;
  c.scheduler.max_batch_tokens = 256;
  c.scheduler.speculative.max_draft = 4;  // asked for: the runtime must turn drafts off for this model
  c.log_level = std::getenv("CORTEX_TEST_LOG") ? std::getenv("CORTEX_TEST_LOG") : "warn";
  return c;
}

generation_request stream(int i) {
  generation_request r = testing::greedy_request("s" + std::to_string(i), "", 40);
  r.use_tokens = true;
  r.tokens.push_back(1);
  for (int j = 0; j < 20 + 3 * i; ++j) r.tokens.push_back(3 + (i * 131 + j * 37) % 500);
  r.params.ignore_eos = true;
  r.want_token_ids = true;
  return r;
}

TEST(hybrid_runtime, sixteen_streams_match_each_alone_and_free_their_state_slots) {
  CORTEX_NEEDS_REFERENCE_DATA();
  std::vector<std::vector<int32_t>> alone;
  {
    runtime_fixture fx(hybrid_config(1024));
    ASSERT_TRUE(fx.ok()) << fx.error();
    for (int i = 0; i < 16; ++i) {
      fx.submit(stream(i));
      ASSERT_TRUE(fx.log().wait_done({"s" + std::to_string(i)}));
      alone.push_back(fx.log().get("s" + std::to_string(i)).token_ids());
      ASSERT_EQ(alone.back().size(), 40u) << i;
    }
  }
  // A small K/V memory (32 blocks of 16 tokens): the 16 streams (about 1,300
  // tokens) do not all fit and some are preempted.
  runtime_fixture fx(hybrid_config(32));
  ASSERT_TRUE(fx.ok()) << fx.error();
  const engine_stats before = fx.stats();
  EXPECT_FALSE(before.prefix_cache_enabled);
  EXPECT_EQ(before.state_bytes_per_slot, fx.rt().loaded_model().hparams().state_floats() * sizeof(float));
  EXPECT_GT(before.state_bytes_per_slot, 0u);
  EXPECT_EQ(before.state_slots_used, 0u);
  // Only the one full-attention layer of five holds K/V (f32: 2 x 2 heads x 32 x 4 bytes).
  EXPECT_EQ(before.kv_bytes_per_token, 512u);
  std::vector<std::string> ids;
  for (int i = 0; i < 16; ++i) {
    fx.submit(stream(i));
    ids.push_back("s" + std::to_string(i));
  }
  // While they run, slots are held (at most one per stream).
  uint32_t most = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60 * testing::k_wait_scale);
  while (std::chrono::steady_clock::now() < until && !fx.log().get("s15").finished) {
    most = std::max(most, fx.stats().state_slots_used);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // polling a condition, bounded by `until`
  }
  ASSERT_TRUE(fx.log().wait_done(ids));
  EXPECT_GT(most, 0u);
  EXPECT_LE(most, 16u);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(fx.log().get(ids[static_cast<size_t>(i)]).token_ids(), alone[static_cast<size_t>(i)]) << "stream " << i;
  }
  ASSERT_TRUE(fx.wait_idle());
  const engine_stats end = fx.stats();
  EXPECT_GT(end.preemptions, 0u) << "the small memory was meant to preempt";
  EXPECT_EQ(end.spec_drafted_tokens, 0u);
  EXPECT_EQ(end.state_slots_used, 0u);
  EXPECT_EQ(end.prefix_tokens_hit, 0u);
}

}  // namespace
}  // namespace cortex
