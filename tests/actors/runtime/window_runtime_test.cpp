// The runtime with a Gemma 3-shaped model (gemma3-4b scaled down to six
// layers, window 1024 on five): the KV memory cortexd is given buys about
// five times the context a cache without windows would, and `stats` shows
// what the windows save while a long request runs.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <unistd.h>

#include "model/kv_arena.hpp"
#include "model/synthetic.hpp"
#include "tests/support/runtime_harness.hpp"

namespace cortex {
namespace {

using testing::runtime_fixture;

// The model file, written once, removed when the test program ends (each
// runtime loads it from its path).
struct model_file {
  std::string path = ::testing::TempDir() + "cortex_window_rt_" + std::to_string(::getpid()) + ".gguf";
  status written;
  model_file() {
    synthetic_shape s = *find_synthetic_shape("gemma3-4b");
    s.n_layer = 6;
    s.n_head = 2;
    s.n_head_kv = 1;
    s.head_dim = 64;
    s.n_embd = 128;
    s.n_ff = 256;
    s.n_vocab = 2048;
    s.vocab = "";
    written = write_synthetic_model(s, "q8_0", 3, path, 2);
  }
  ~model_file() { std::remove(path.c_str()); }
};

const model_file& gemma3_six_layers() {
  static model_file f;
  return f;
}

runtime_config window_config(const model_file& f) {
  runtime_config c;
  c.model_path = f.path;
  c.threads = 2;
  c.kv_memory_mb = 8;
  c.kv_type = kernels::kv_type::f16;
  c.scheduler.max_batch_tokens = 512;
  c.log_level = std::getenv("CORTEX_TEST_LOG") ? std::getenv("CORTEX_TEST_LOG") : "warn";
  return c;
}

// 8 MiB of f16 K/V: the six layers take 6 * 2 * 64 * 2 = 1536 bytes a token,
// so a cache without windows holds 341 blocks of 16, 5456 tokens. By memory
// kind the pool has 2048 one-layer blocks: a lone sequence keeps 65 blocks
// in each windowed layer and the rest, 1723 blocks, is the global layer's:
// 27568 tokens, 5.05x.
TEST(window_runtime, the_same_memory_holds_five_times_the_context) {
  const model_file& m = gemma3_six_layers();
  ASSERT_TRUE(m.written) << m.written.message;
  runtime_fixture fx(window_config(m));
  ASSERT_TRUE(fx.ok()) << fx.error();
  const size_t bytes_per_token = kv_arena::bytes_per_token(fx.rt().loaded_model().hparams(), kernels::kv_type::f16);
  ASSERT_EQ(bytes_per_token, 1536u);
  const int n_ctx_without_windows = static_cast<int>((8u << 20) / (bytes_per_token * 16)) * 16;
  EXPECT_EQ(n_ctx_without_windows, 5456);
  EXPECT_EQ(fx.rt().kv_blocks(), 2048);
  EXPECT_EQ(fx.rt().n_ctx(), (2048 - 5 * 65) * 16);
  EXPECT_GE(double(fx.rt().n_ctx()) / n_ctx_without_windows, 5.0);
  const engine_stats s = fx.stats();
  EXPECT_EQ(s.kv_blocks_total, 2048u);
  EXPECT_EQ(s.kv_bytes_total, uint64_t{8} << 20);
  EXPECT_EQ(s.kv_group_windows, (std::vector<uint32_t>{0, 1024, 1024, 1024, 1024, 1024}));
  EXPECT_EQ(s.kv_group_layers, (std::vector<uint32_t>{1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(s.kv_bytes_used, 0u);
}

TEST(window_runtime, stats_show_what_the_windows_save_while_a_long_request_runs) {
  const model_file& m = gemma3_six_layers();
  ASSERT_TRUE(m.written) << m.written.message;
  runtime_fixture fx(window_config(m));
  ASSERT_TRUE(fx.ok()) << fx.error();
  generation_request r = testing::greedy_request("long", "", 2000);
  r.use_tokens = true;
  for (int i = 0; i < 3000; ++i) r.tokens.push_back(3 + (i * 7919) % 2000);
  fx.submit(std::move(r));
  // Poll until the request holds K/V its windows have passed (the prompt is
  // prefilled in chunks of 512: by the third, blocks are released).
  engine_stats seen;
  bool saw = false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60 * testing::k_wait_scale);
  while (!saw && std::chrono::steady_clock::now() < until && !fx.log().get("long").finished) {
    seen = fx.stats();
    saw = seen.kv_bytes_used > 0 && seen.kv_bytes_full > seen.kv_bytes_used;
    if (!saw) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // polling a condition, bounded by `until`
  }
  ASSERT_TRUE(saw) << "no stats showed released blocks";
  ASSERT_EQ(seen.kv_group_blocks_released.size(), 6u);
  EXPECT_EQ(seen.kv_group_blocks_released[0], 0u);  // the global layer keeps everything
  for (size_t g = 1; g < 6; ++g) {
    EXPECT_GT(seen.kv_group_blocks_released[g], 0u) << g;
    // What a windowed layer holds: its window's blocks and the chunk in flight at most.
    EXPECT_LE(seen.kv_group_blocks_used[g], (1024u + 512u) / 16 + 2) << g;
  }
  // Every group's table covers the same positions: the full figure is six
  // times the global layer's blocks.
  EXPECT_EQ(seen.kv_bytes_full, 6 * uint64_t{seen.kv_group_blocks_used[0]} * 4096);
  EXPECT_LT(seen.kv_bytes_used, seen.kv_bytes_full);
  ASSERT_TRUE(fx.log().get("long").accepted);
  fx.cancel(fx.log().get("long").accepted->rid);
  ASSERT_TRUE(fx.log().wait_done({"long"}));
  ASSERT_TRUE(fx.wait_idle());
  const engine_stats end = fx.stats();
  EXPECT_EQ(end.kv_bytes_used, 0u);
  EXPECT_EQ(end.kv_bytes_full, 0u);
}

}  // namespace
}  // namespace cortex
