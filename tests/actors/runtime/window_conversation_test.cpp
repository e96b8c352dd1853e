// A Gemma 3-shaped model (cortex make-model --shape gemma3-4b, scaled down to
// six layers: five with the 1024-token window, one global) in an 8k-token
// conversation, through the scheduler's KV manager and the executor's step
// runner, twice: with the K/V kept by memory kind (the windowed layers give
// their blocks back as the window passes them, and the pool is tight enough
// that those blocks are taken again), and with every layer keeping every
// position. The logits of every sampled position are the same bits, and
// the windowed run holds about 0.27x the K/V bytes at the end.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <unistd.h>
#include <vector>

#include "actors/executor/step_runner.hpp"
#include "actors/kv_cache/kv_cache_manager.hpp"
#include "actors/scheduler/scheduler_core.hpp"
#include "model/kv_arena.hpp"
#include "model/kv_groups.hpp"
#include "model/model.hpp"
#include "model/synthetic.hpp"
#include "tests/support/engine_configs.hpp"

namespace cortex {
namespace {

constexpr int k_block_size = 16;
constexpr int k_window = 1024;

// gemma3-4b with six layers (so that layer 5 is the global one), one KV head
// of 64, a small vocabulary and FFN: the family's keys and layer shape, cheap.
std::shared_ptr<const model> gemma3_six_layers() {
  static std::shared_ptr<const model> m = [] {
    synthetic_shape s = *find_synthetic_shape("gemma3-4b");
    s.n_layer = 6;
    s.n_head = 2;
    s.n_head_kv = 1;
    s.head_dim = 64;
    s.n_embd = 128;
    s.n_ff = 256;
    s.n_vocab = 2048;
    s.vocab = "";  // the built-in vocabulary
    const std::string path = ::testing::TempDir() + "cortex_window_conv_" + std::to_string(::getpid()) + ".gguf";
    const status st = write_synthetic_model(s, "q8_0", 11, path, 2);
    EXPECT_TRUE(st) << st.message;
    auto loaded = model::load(path);
    std::remove(path.c_str());
    EXPECT_TRUE(loaded) << loaded.error().message;
    return loaded ? std::shared_ptr<const model>(std::move(*loaded)) : nullptr;
  }();
  return m;
}

struct conversation_run {
  std::vector<std::vector<float>> logits;  // every sampled position's logits, in order
  std::vector<int32_t> tokens;             // what was sampled
  std::vector<int32_t> hits;               // prefix-cache hit of each turn
  std::vector<uint64_t> bytes_held;        // K/V bytes in use after each step (between steps)
  std::vector<uint64_t> bytes_full;        // what stats say the same sequences would hold with nothing released
  uint64_t bytes_peak = 0;                 // the most in use while a step ran
  uint64_t n_evictions = 0;
  int32_t n_blocks_released_max = 0;
};

// Two turns: a 4000-token prompt and 32 greedy tokens, then the whole of it
// again with 4000 more tokens and 162 greedy tokens (8192 positions computed
// before the last two tokens are sampled; the first turn's blocks are a
// prefix-cache hit). `by_window`: K/V by memory kind in
// a pool of n_blocks blocks; else one group of every layer.
conversation_run converse(const std::shared_ptr<const model>& m, bool by_window, int n_blocks) {
  const model_hparams& hp = m->hparams();
  const kv_group_layout groups = by_window ? kv_group_layout::by_window(hp) : kv_group_layout::single(hp);
  executor_config ec;
  ec.n_threads = 2;
  ec.n_kv_blocks = n_blocks;
  ec.block_size = k_block_size;
  ec.kv_type = kernels::kv_type::f16;
  ec.kv_groups_by_window = by_window;
  step_runner runner(m, ec);
  kv_cache_config kc = testing::kv_cfg(n_blocks, k_block_size, true);
  kc.group_windows = groups.windows();
  kc.group_layers = groups.layer_counts();
  kc.kv_bytes_per_block = kv_arena::bytes_per_block(hp, groups, ec.kv_type, k_block_size);
  kv_cache_manager kv(kc);
  scheduler_core core(testing::sched_cfg(512, 4), kv);

  conversation_run out;
  std::mt19937 rng(5);
  std::vector<int32_t> history;
  uint64_t step_id = 1;
  const auto turn = [&](request_id rid, int32_t n_new, int32_t n_generate) {
    for (int32_t i = 0; i < n_new; ++i) history.push_back(3 + static_cast<int32_t>(rng() % (hp.n_vocab - 3)));
    sequence_open o;
    o.rid = rid;
    o.params.temperature = 0.0f;
    o.tokens_prompt = history;
    runner.open(o);
    seq_request r;
    r.rid = rid;
    r.tokens_prompt = history;
    r.max_tokens = n_generate;
    ASSERT_TRUE(core.add(std::move(r)).is_ok());
    bool first = true;
    while (core.has_work()) {
      const sched_plan plan = core.schedule();
      ASSERT_FALSE(plan.empty());
      ASSERT_EQ(core.check_invariants(), "");
      if (first) {
        out.hits.push_back(core.find(rid)->n_tokens_cached);
        first = false;
      }
      out.bytes_peak = std::max(out.bytes_peak, kv.stats().n_bytes_used());
      engine_step step;
      step.step_id = step_id++;
      step.entries = plan.entries;
      const engine_step_result res = runner.run(step);
      ASSERT_FALSE(res.failed()) << res.error.message;
      std::vector<sched_sampled> sampled;
      for (size_t i = 0; i < res.outputs.size(); ++i) {
        const float* row = runner.logits(static_cast<int>(i));
        out.logits.emplace_back(row, row + hp.n_vocab);
        out.tokens.push_back(res.outputs[i].token);
        sampled.push_back({res.outputs[i].rid, res.outputs[i].token, false, {}});
        history.push_back(res.outputs[i].token);
      }
      core.update(plan, sampled);
      ASSERT_EQ(core.check_invariants(), "");
      const kv_cache_stats st = kv.stats();
      if (core.has_work()) {  // (the last update ends the turn and frees its blocks)
        out.bytes_held.push_back(st.n_bytes_used());
        out.bytes_full.push_back(st.n_bytes_full());
      }
      for (const auto& g : st.groups) out.n_blocks_released_max = std::max(out.n_blocks_released_max, g.n_blocks_released);
      out.n_evictions = st.n_evictions;
    }
    (void)core.take_finished();
  };
  turn(1, 4000, 32);
  turn(2, 8194 - 4032 - 162, 162);
  EXPECT_EQ(history.size(), 8194u);
  return out;
}

TEST(window_conversation, gemma3_holds_its_windows_only_and_computes_the_same_bits) {
  const auto m = gemma3_six_layers();
  ASSERT_NE(m, nullptr);
  const model_hparams& hp = m->hparams();
  ASSERT_EQ(hp.n_layer, 6);
  for (int il = 0; il < 6; ++il) EXPECT_EQ(hp.attn[static_cast<size_t>(il)].window, il == 5 ? 0 : k_window) << il;

  // Windows ignored: one group of six layers per block; 8192 tokens are
  // 512 blocks, the pool has room to spare (no eviction).
  const conversation_run full = converse(m, false, 640);
  // By memory kind: six groups of one layer. A pool of 1100 one-layer
  // blocks (29% of the 6 * 640 above) cannot keep the first turn's released
  // windowed blocks cached for long: they are evicted and written again.
  const conversation_run windowed = converse(m, true, 1100);

  EXPECT_EQ(full.n_evictions, 0u);
  EXPECT_GT(windowed.n_evictions, 0u) << "the released blocks were never taken again";
  EXPECT_GT(windowed.n_blocks_released_max, 0);
  ASSERT_EQ(windowed.hits, full.hits);
  EXPECT_EQ(windowed.hits[1], 4016);  // the first turn's 4031 computed tokens, whole blocks: its window was still cached

  // The same logits, bit for bit, at every sampled position.
  ASSERT_EQ(windowed.logits.size(), full.logits.size());
  ASSERT_EQ(windowed.logits.size(), 32u + 162u);
  for (size_t i = 0; i < full.logits.size(); ++i) {
    ASSERT_EQ(std::memcmp(windowed.logits[i].data(), full.logits[i].data(), sizeof(float) * full.logits[i].size()), 0)
        << "sampled position " << i;
  }
  EXPECT_EQ(windowed.tokens, full.tokens);

  // Bytes held between steps, step by step (the schedules are the same);
  // stats' "full" figure of the windowed run is what the other run holds.
  ASSERT_EQ(windowed.bytes_held.size(), full.bytes_held.size());
  EXPECT_EQ(windowed.bytes_full, full.bytes_held);
  // After the step that computed position 8191 (the last one recorded: the
  // next ends the turn): the global layer keeps all 8192 positions (512
  // blocks), each local layer the blocks the next query (8192) still sees,
  // positions 7169..8192: blocks 448..511, 64 of them (block 448 starts at
  // 7168, one position before the window).
  // (512 + 5 * 64) / (6 * 512) = 832 / 3072 = 1/6 + 5/6 * 1/8 = 0.2708.
  const double ratio_end = double(windowed.bytes_held.back()) / double(full.bytes_held.back());
  EXPECT_NEAR(ratio_end, 832.0 / 3072.0, 1e-9) << windowed.bytes_held.back() << " / " << full.bytes_held.back();
  EXPECT_LE(ratio_end, 0.273);
  double ratio_max = 0;
  for (size_t i = 0; i < full.bytes_held.size(); ++i) {
    if (full.bytes_held[i] >= 4096u * kv_arena::bytes_per_token(hp, kernels::kv_type::f16)) {
      ratio_max = std::max(ratio_max, double(windowed.bytes_held[i]) / double(full.bytes_held[i]));
    }
  }
  std::printf("[ window ] K/V held at 8192 tokens: %.4fx of the cache without windows (%llu / %llu bytes); "
              "past 4096 tokens at most %.4fx; peak within a step %llu / %llu bytes (%.4fx)\n",
              ratio_end, (unsigned long long)windowed.bytes_held.back(), (unsigned long long)full.bytes_held.back(),
              ratio_max, (unsigned long long)windowed.bytes_peak, (unsigned long long)full.bytes_peak,
              double(windowed.bytes_peak) / double(full.bytes_peak));
}

}  // namespace
}  // namespace cortex
