// A Gemma 4 file served through the in-process runtime (what cortexd runs):
// ../shared/golden/arch/gemma4-f32.gguf, whose last three layers share the
// K/V of layers 2 (sliding) and 3 (full) and whose sliding and full layers
// differ in head size and KV heads. The K/V memory holds only the four
// layers with K/V of their own and `stats` says so (its golden greedy
// continuations through the runtime: tests/actors/runtime/arch_runtime_test.cpp).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "model/kv_arena.hpp"
#include "tests/support/golden.hpp"
#include "tests/support/runtime_harness.hpp"

namespace cortex {
namespace {

using testing::runtime_fixture;

runtime_config gemma4_config() {
  runtime_config c = testing::test_runtime_config(testing::shared_dir() + "/golden/arch/gemma4-f32.gguf");
  c.kv_blocks = 0;
  c.kv_memory_mb = 1;
  c.scheduler.max_batch_tokens = 32;
  c.scheduler.max_prefill_chunk = 7;
  c.prefix_cache = true;
  return c;
}

// Layers 0 and 2 (sliding: 2 KV heads of 32) and 1 and 3 (full: 1 KV head of
// 64) hold K and V: 4 x 2 x 64 floats a token; layers 4-6 hold none (7
// layers without sharing would take 7 x 2 x 64). A block of 16 tokens holds
// one group's two layer slots: 2 x 2 x 64 x 4 x 16 = 16 KiB, so 1 MiB is 64
// blocks, and the two groups (full attention, window 12) have two layers each.
TEST(gemma4_runtime, shared_layers_take_no_kv_memory_and_stats_say_so) {
  CORTEX_NEEDS_REFERENCE_DATA();
  runtime_fixture fx(gemma4_config());
  ASSERT_TRUE(fx.ok()) << fx.error();
  const auto& hp = fx.rt().loaded_model().hparams();
  EXPECT_EQ(kv_arena::bytes_per_token(hp, kernels::kv_type::f32), 4u * 2 * 64 * 4);
  const engine_stats s = fx.stats();
  EXPECT_EQ(s.kv_bytes_per_token, 4u * 2 * 64 * 4);
  EXPECT_EQ(s.kv_group_windows, (std::vector<uint32_t>{0, 12}));
  EXPECT_EQ(s.kv_group_layers, (std::vector<uint32_t>{2, 2}));
  EXPECT_EQ(s.kv_blocks_total, 64u);
  EXPECT_EQ(s.kv_bytes_total, uint64_t{1} << 20);
  EXPECT_EQ(s.kv_bytes_used, 0u);
}

}  // namespace
}  // namespace cortex
