// scheduler_core with embed (prefill-only) sequences: chunked like any
// prefill and batched beside decodes, never served from the prefix cache
// (the executor must see every token's hidden state), ended with stop and no
// generated token once the executor answered, with error when it did not.
#include <gtest/gtest.h>

#include <vector>

#include "actors/scheduler/scheduler_core.hpp"
#include "tests/support/engine_configs.hpp"

namespace cortex {
namespace {

std::vector<int32_t> iota_tokens(int32_t n, int32_t first) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = first + i;
  return t;
}

// Answers every completing entry (a token for generating sequences, "here is
// the embedding" for embed ones), except for the ids in `silent`.
std::vector<sched_sampled> answer(const sched_plan& plan, request_id silent = -1) {
  std::vector<sched_sampled> out;
  for (const step_entry& e : plan.entries) {
    if (e.sample && e.rid != silent) out.push_back({e.rid, 5, false});
  }
  return out;
}

const step_entry* entry_of(const sched_plan& plan, request_id id) {
  for (const step_entry& e : plan.entries) {
    if (e.rid == id) return &e;
  }
  return nullptr;
}

TEST(scheduler_embed, chunks_beside_decodes_skip_the_prefix_cache_and_end_with_stop) {
  kv_cache_manager kv(testing::kv_cfg(64, 16, true));
  scheduler_config cfg;
  cfg.max_batch_tokens = 16;
  cfg.max_prefill_chunk = 7;
  scheduler_core core(cfg, kv);
  const std::vector<int32_t> prompt = iota_tokens(40, 1);
  // A generating sequence with the same prompt puts its two full blocks in the prefix cache.
  ASSERT_TRUE(core.add({1, 0, prompt, 30, false, {}}).is_ok());
  for (int i = 0; i < 20; ++i) {
    const sched_plan plan = core.schedule();
    core.update(plan, answer(plan));
  }
  ASSERT_GT(kv.stats().n_blocks_cached, 0);
  seq_request embed{2, 0, prompt, 1, false, {}};
  embed.embed = true;
  ASSERT_TRUE(core.add(embed).is_ok());

  int32_t n_computed = 0;
  int n_steps_beside_decode = 0;
  bool ended = false;
  for (int step = 0; step < 40 && !ended; ++step) {
    const sched_plan plan = core.schedule();
    const step_entry* e = entry_of(plan, 2);
    ASSERT_NE(e, nullptr) << "the embed sequence waits at step " << step;
    EXPECT_EQ(e->pos0, n_computed) << "a prefix-cache hit would skip hidden states";
    EXPECT_LE(e->n_tokens(), 7);
    EXPECT_EQ(e->sample, e->pos0 + e->n_tokens() == 40);
    n_computed += e->n_tokens();
    if (entry_of(plan, 1) != nullptr) ++n_steps_beside_decode;
    core.update(plan, answer(plan));
    EXPECT_EQ(core.check_invariants(), "");
    for (const seq_finished& f : core.take_finished()) {
      if (f.rid != 2) continue;
      ended = true;
      EXPECT_EQ(f.reason, finish_reason::stop);
      EXPECT_EQ(f.n_tokens_generated, 0);
      EXPECT_EQ(f.n_tokens_cached, 0);
      EXPECT_EQ(f.n_tokens_prompt, 40);
    }
  }
  EXPECT_TRUE(ended);
  EXPECT_EQ(n_computed, 40);
  EXPECT_GT(n_steps_beside_decode, 0) << "the embed prefill must share steps with decodes";
}

TEST(scheduler_embed, no_answer_for_a_completed_prompt_is_an_error) {
  kv_cache_manager kv(testing::kv_cfg(16, 16, true));
  scheduler_core core(scheduler_config{}, kv);
  seq_request embed{3, 0, iota_tokens(10, 1), 1, false, {}};
  embed.embed = true;
  ASSERT_TRUE(core.add(embed).is_ok());
  const sched_plan plan = core.schedule();
  ASSERT_EQ(plan.entries.size(), 1u);
  EXPECT_TRUE(plan.entries[0].sample);
  core.update(plan, answer(plan, 3));
  const auto finished = core.take_finished();
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0].reason, finish_reason::error);
  EXPECT_EQ(kv.stats().n_blocks_used, 0);
}

// An encoder (scheduler_config::whole_inputs): every input is computed whole
// in one step, several share a step up to the budget, one that does not fit
// what is left waits for the next step (it is never chunked), and none holds
// K/V blocks, during its step or after.
TEST(scheduler_embed, encoder_inputs_are_whole_hold_no_blocks_and_share_steps) {
  kv_cache_manager kv(testing::kv_cfg(4, 16, false));  // 64 slots: less than the inputs need together
  scheduler_config cfg;
  cfg.max_batch_tokens = 48;
  cfg.max_prefill_chunk = 7;  // ignored: inputs are never chunked
  cfg.whole_inputs = true;
  scheduler_core core(cfg, kv);
  const int32_t lengths[] = {20, 20, 30, 48, 1};
  for (request_id id = 1; id <= 5; ++id) {
    seq_request r;
    r.rid = id;
    r.tokens_prompt = iota_tokens(lengths[id - 1], 3);
    r.embed = true;
    ASSERT_TRUE(core.add(r).is_ok());
  }
  std::vector<std::vector<request_id>> steps;
  for (int step = 0; step < 10 && core.has_work(); ++step) {
    const sched_plan plan = core.schedule();
    std::vector<request_id> ids;
    int32_t n_tokens = 0;
    for (const step_entry& e : plan.entries) {
      ids.push_back(e.rid);
      EXPECT_EQ(e.pos0, 0);
      EXPECT_EQ(e.n_tokens(), lengths[e.rid - 1]) << "input " << e.rid << " must be whole";
      EXPECT_TRUE(e.sample && e.embed);
      EXPECT_TRUE(e.block_table.empty());
      n_tokens += e.n_tokens();
    }
    EXPECT_LE(n_tokens, cfg.max_batch_tokens);
    EXPECT_EQ(kv.stats().n_blocks_used, 0);
    EXPECT_EQ(core.check_invariants(), "");
    steps.push_back(ids);
    core.update(plan, answer(plan));
    EXPECT_EQ(kv.stats().n_blocks_used, 0);
  }
  // 20 + 20 fit, 30 waits; then 30 (48 does not fit beside it); 48 alone; then 1.
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0], (std::vector<request_id>{1, 2}));
  EXPECT_EQ(steps[1], (std::vector<request_id>{3}));
  EXPECT_EQ(steps[2], (std::vector<request_id>{4}));
  EXPECT_EQ(steps[3], (std::vector<request_id>{5}));
  const auto done = core.take_finished();
  ASSERT_EQ(done.size(), 5u);
  for (const auto& f : done) EXPECT_EQ(f.reason, finish_reason::stop);
}

}  // namespace
}  // namespace cortex
