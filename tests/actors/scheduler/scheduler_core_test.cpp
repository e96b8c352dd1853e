// scheduler_core: chunked prefill next to decode, priorities with aging,
// preemption under KV pressure, cancel/finish at step boundaries, invariants
// after every schedule() and update() of randomized workloads.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "actors/scheduler/scheduler_core.hpp"
#include "tests/support/engine_configs.hpp"
#include "tests/support/shadow_kv.hpp"

namespace cortex {
namespace {

using testing::kv_cfg;
using testing::sched_cfg;

std::vector<int32_t> iota_tokens(int32_t n, int32_t first) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) t[i] = first + i;
  return t;
}

// The token the fake model generates at position `pos` of a sequence: a
// function of (id, pos) only, so output must not depend on batching,
// preemption or the prefix cache.
int32_t fake_token(request_id rid, int32_t pos) { return static_cast<int32_t>((rid * 7919 + pos * 31) % 997); }

// Plays the executor against a shadow of every KV slot: checks that each
// entry's earlier positions hold its own tokens (whoever wrote them) and
// that its new tokens are the sequence's next known tokens, then writes them.
class fake_executor {
 public:
  fake_executor(const scheduler_core& core, int32_t n_blocks, int32_t block_size)
      : core_(core), kv_(n_blocks, block_size) {}

  std::vector<sched_sampled> run(const sched_plan& plan) {
    std::vector<sched_sampled> out;
    std::set<int32_t> written_blocks;
    for (const step_entry& e : plan.entries) {
      const sequence* s = core_.find(e.rid);
      EXPECT_NE(s, nullptr);
      if (s == nullptr) continue;
      for (int32_t i = 0; i < e.n_tokens(); ++i) EXPECT_EQ(e.tokens[i], s->tokens[e.pos0 + i]);
      kv_.read_and_write(e, *s);
      if (e.sample) {
        EXPECT_EQ(e.pos0 + e.n_tokens(), s->n_tokens());
        const int32_t tok = fake_token(e.rid, s->n_tokens());
        out.push_back({e.rid, tok, false});
        generated_[e.rid].push_back(tok);
      }
    }
    return out;
  }

  // Every token sampled for a sequence, in order (recomputation samples none twice).
  std::map<request_id, std::vector<int32_t>> generated_;

 private:
  const scheduler_core& core_;
  testing::shadow_kv kv_;
};

struct harness {
  harness(const scheduler_config& scfg, const kv_cache_config& kcfg)
      : kv(kcfg), core(scfg, kv), exec(core, kcfg.n_blocks, kcfg.block_size) {}

  // One schedule/run/update round with invariant checks; returns the plan.
  sched_plan step() {
    sched_plan plan = core.schedule();
    EXPECT_EQ(core.check_invariants(), "") << "after schedule, step " << plan.stats.step;
    const std::vector<sched_sampled> sampled = exec.run(plan);
    core.update(plan, sampled);
    EXPECT_EQ(core.check_invariants(), "") << "after update, step " << plan.stats.step;
    collect();
    return plan;
  }
  void collect() {
    for (const seq_finished& f : core.take_finished()) {
      EXPECT_EQ(finished.count(f.rid), 0u) << "seq " << f.rid << " ended twice";
      finished[f.rid] = f;
    }
  }
  // Steps until idle; false if that takes more than max_steps (a stall).
  bool run_until_idle(int max_steps) {
    for (int i = 0; i < max_steps; ++i) {
      if (!core.has_work()) return true;
      step();
    }
    return !core.has_work();
  }
  void add(request_id id, std::vector<int32_t> prompt, int32_t max_tokens, int32_t priority = 0) {
    ASSERT_TRUE(core.add({id, priority, std::move(prompt), max_tokens}).is_ok());
  }
  std::vector<int32_t> expected_output(request_id id, int32_t n_prompt, int32_t n) const {
    std::vector<int32_t> t;
    for (int32_t i = 0; i < n; ++i) t.push_back(fake_token(id, n_prompt + i));
    return t;
  }
  bool in_plan(const sched_plan& plan, request_id id) const {
    return std::any_of(plan.entries.begin(), plan.entries.end(), [&](const step_entry& e) { return e.rid == id; });
  }

  kv_cache_manager kv;
  scheduler_core core;
  fake_executor exec;
  std::map<request_id, seq_finished> finished;
};

TEST(scheduler_core, rejects_bad_requests) {
  kv_cache_manager kv(kv_cfg(8, 16, true));
  scheduler_core core(sched_cfg(64, 4), kv);
  EXPECT_TRUE(core.add({1, 0, {1, 2}, 4}).is_ok());
  EXPECT_EQ(core.add({1, 0, {1, 2}, 4}).code, errc::internal);  // rids are intake's: a duplicate is a bug
  EXPECT_EQ(core.add({2, 0, {}, 4}).code, errc::invalid_param);
  EXPECT_EQ(core.add({3, 0, {1}, 0}).code, errc::invalid_param);
  EXPECT_EQ(core.n_waiting(), 1);
}

TEST(scheduler_core, prefills_in_chunks_then_decodes_to_max_tokens) {
  harness h(sched_cfg(16, 4), kv_cfg(8, 16, true));
  h.add(1, iota_tokens(40, 1), 5);
  const std::vector<int32_t> chunk_sizes = {16, 16, 8, 1, 1, 1, 1};
  for (size_t i = 0; i < chunk_sizes.size(); ++i) {
    const sched_plan plan = h.step();
    ASSERT_EQ(plan.entries.size(), 1u) << "step " << i;
    const step_entry& e = plan.entries[0];
    EXPECT_EQ(e.n_tokens(), chunk_sizes[i]) << "step " << i;
    EXPECT_EQ(e.sample, i >= 2) << "step " << i;
    EXPECT_EQ(e.is_decode, i >= 3) << "step " << i;
    EXPECT_EQ(plan.stats.n_tokens_decode + plan.stats.n_tokens_prefill, plan.stats.n_tokens_batch);
  }
  EXPECT_FALSE(h.core.has_work());
  ASSERT_EQ(h.finished.count(1), 1u);
  EXPECT_EQ(h.finished[1].reason, finish_reason::length);
  EXPECT_EQ(h.finished[1].n_tokens_generated, 5);
  EXPECT_EQ(h.exec.generated_[1], h.expected_output(1, 40, 5));
  EXPECT_EQ(h.kv.stats().n_blocks_used, 0);
  EXPECT_EQ(h.kv.stats().n_blocks_cached, 2);  // 44 computed tokens: two full blocks of 16
}

TEST(scheduler_core, second_request_reuses_a_shared_200_token_prefix) {
  for (const bool caching : {true, false}) {
    harness h(sched_cfg(512, 8), kv_cfg(64, 16, caching));
    const std::vector<int32_t> prefix = iota_tokens(200, 1);
    std::vector<int32_t> a = prefix;
    a.push_back(900);
    std::vector<int32_t> b = prefix;
    b.insert(b.end(), {901, 902, 903});
    h.add(1, a, 4);
    ASSERT_TRUE(h.run_until_idle(50));
    h.add(2, b, 4);
    const sched_plan plan = h.step();
    ASSERT_EQ(plan.entries.size(), 1u);
    ASSERT_TRUE(h.run_until_idle(50));
    if (caching) {
      EXPECT_EQ(h.finished[2].n_tokens_cached, 192);  // (203 - 1) rounded down to blocks of 16
      EXPECT_EQ(plan.entries[0].pos0, 192);
      EXPECT_EQ(plan.entries[0].n_tokens(), 203 - 192);
    } else {
      EXPECT_EQ(h.finished[2].n_tokens_cached, 0);
      EXPECT_EQ(plan.entries[0].pos0, 0);
    }
    EXPECT_EQ(h.exec.generated_[2], h.expected_output(2, 203, 4));
  }
}

// 64 blocks of 16 for 16 sequences needing 20 blocks each (320 tokens).
TEST(scheduler_core, kv_pressure_preempts_and_everyone_finishes) {
  for (const bool caching : {true, false}) {
    harness h(sched_cfg(256, 16), kv_cfg(64, 16, caching));
    for (request_id id = 0; id < 16; ++id) h.add(id, iota_tokens(160, static_cast<int32_t>(id * 1000)), 160);
    ASSERT_TRUE(h.run_until_idle(5000)) << "stalled; caching " << caching;
    EXPECT_GT(h.core.totals().n_preemptions, 0u);
    uint64_t n_preemptions = 0;
    for (request_id id = 0; id < 16; ++id) {
      ASSERT_EQ(h.finished.count(id), 1u);
      EXPECT_EQ(h.finished[id].reason, finish_reason::length);
      EXPECT_EQ(h.exec.generated_[id], h.expected_output(id, 160, 160)) << "seq " << id;
      n_preemptions += static_cast<uint64_t>(h.finished[id].n_preemptions);
    }
    EXPECT_EQ(n_preemptions, h.core.totals().n_preemptions);
    const kv_cache_stats st = h.kv.stats();
    EXPECT_EQ(st.n_blocks_used, 0);
    EXPECT_EQ(st.n_seqs, 0);
    EXPECT_EQ(st.n_blocks_free + st.n_blocks_cached_idle, 64);
  }
}

// Three blocks of four: h (4 tokens) and l (7 tokens) fill the pool; h's
// first decode token needs a fourth block.
TEST(scheduler_core, preempts_lowest_priority_then_least_progress) {
  for (const int32_t priority_l : {0, 5}) {
    harness h(sched_cfg(64, 4), kv_cfg(3, 4, true));
    h.add(1, iota_tokens(4, 1), 20, /*priority=*/5);
    h.add(2, iota_tokens(7, 100), 20, priority_l);
    h.step();
    ASSERT_EQ(h.kv.stats().n_blocks_used, 3);
    const sched_plan plan = h.step();
    EXPECT_EQ(plan.stats.n_preemptions, 1);
    // Lower priority loses; at equal priority, the one with less progress (seq 1).
    const request_id loser = priority_l == 0 ? 2 : 1;
    const request_id winner = 3 - loser;
    EXPECT_EQ(h.core.find(loser)->state, seq_state::preempted);
    EXPECT_EQ(h.core.find(loser)->n_preemptions, 1);
    EXPECT_TRUE(h.kv.block_table(loser).empty());
    EXPECT_TRUE(h.in_plan(plan, winner));
    EXPECT_FALSE(h.in_plan(plan, loser));
    ASSERT_TRUE(h.run_until_idle(500));
    EXPECT_EQ(h.finished[1].reason, finish_reason::error);  // 24 tokens never fit 12 slots
    EXPECT_EQ(h.finished[1].error.message, seq_error_kv_capacity);
    EXPECT_EQ(h.finished[1].error.code, errc::internal);
  }
}

TEST(scheduler_core, high_priority_arrival_goes_before_waiting_low_priority) {
  harness h(sched_cfg(64, 2, 0.001), kv_cfg(64, 16, true));
  for (request_id id = 0; id < 5; ++id) h.add(id, iota_tokens(8, static_cast<int32_t>(id * 100)), 10 + static_cast<int32_t>(id));
  for (int i = 0; i < 3; ++i) h.step();
  ASSERT_EQ(h.core.n_running(), 2);
  h.add(99, iota_tokens(8, 5000), 4, /*priority=*/10);
  std::map<request_id, int> first_step;
  for (int i = 0; i < 200 && h.core.has_work(); ++i) {
    const sched_plan plan = h.step();
    for (const step_entry& e : plan.entries) first_step.emplace(e.rid, i);
  }
  ASSERT_FALSE(h.core.has_work());
  ASSERT_EQ(first_step.count(99), 1u);
  for (request_id id = 2; id < 5; ++id) EXPECT_LT(first_step[99], first_step[id]) << "low " << id;
  for (request_id id = 0; id < 5; ++id) EXPECT_EQ(h.finished[id].reason, finish_reason::length);
}

// One slot, a new high-priority request every other step, each needing
// several steps: without aging the low one never runs; with it, it finishes.
TEST(scheduler_core, aging_lets_low_priority_finish_under_a_stream_of_high) {
  for (const double aging : {0.0, 0.5}) {
    harness h(sched_cfg(64, 1, aging), kv_cfg(64, 16, true));
    h.add(0, iota_tokens(4, 1), 3, /*priority=*/0);
    request_id next = 1;
    for (int i = 0; i < 300; ++i) {
      if (i % 2 == 0) h.add(next++, iota_tokens(4, 10), 3, /*priority=*/10);
      h.step();
    }
    if (aging > 0) {
      ASSERT_EQ(h.finished.count(0), 1u);
      EXPECT_EQ(h.finished[0].reason, finish_reason::length);
    } else {
      EXPECT_EQ(h.finished.count(0), 0u) << "the control must starve, or this test proves nothing";
    }
  }
}

TEST(scheduler_core, long_prefill_never_starves_running_decodes) {
  harness h(sched_cfg(128, 16), kv_cfg(256, 16, true));
  for (request_id id = 0; id < 8; ++id) h.add(id, iota_tokens(8, static_cast<int32_t>(id * 50)), 400);
  for (int i = 0; i < 3; ++i) h.step();
  h.add(100, iota_tokens(2000, 7), 4);
  int n_steps_prefill = 0;
  while (h.exec.generated_[100].empty()) {
    ASSERT_LT(n_steps_prefill, 100);
    const sched_plan plan = h.step();
    ++n_steps_prefill;
    int n_decode = 0;
    for (const step_entry& e : plan.entries) n_decode += (e.rid < 8 && e.is_decode && e.n_tokens() == 1);
    EXPECT_EQ(n_decode, 8) << "step " << plan.stats.step;
    EXPECT_EQ(plan.stats.n_tokens_decode, 8);
    // The rest of the budget: 2000 = 16 * 120 + 80.
    EXPECT_EQ(plan.stats.n_tokens_prefill, h.exec.generated_[100].empty() ? 120 : 80);
  }
  EXPECT_EQ(n_steps_prefill, 17);
  ASSERT_TRUE(h.run_until_idle(1000));
}

// max_prefill_with_decode: while sequences decode, a step carries at most
// that many prefill tokens (short steps, low inter-token latency); with no
// decode in the step, prefill gets the whole budget again.
TEST(scheduler_core, prefill_is_capped_while_sequences_decode) {
  scheduler_config cfg = sched_cfg(128, 16);
  cfg.max_prefill_with_decode = 24;
  harness h(cfg, kv_cfg(256, 16, true));
  h.add(2, iota_tokens(4, 500), 5);
  EXPECT_EQ(h.step().stats.n_tokens_prefill, 4);  // its first token
  h.add(1, iota_tokens(300, 1), 1);
  for (int i = 0; i < 4; ++i) {  // sequence 2 decodes its tokens 2..5: sequence 1 gets 24 per step
    const sched_plan plan = h.step();
    EXPECT_EQ(plan.stats.n_tokens_decode, 1) << "step " << plan.stats.step;
    EXPECT_EQ(plan.stats.n_tokens_prefill, 24) << "step " << plan.stats.step;
  }
  ASSERT_EQ(h.finished.count(2), 1u);
  const sched_plan alone = h.step();  // no decode any more: the whole budget
  EXPECT_EQ(alone.stats.n_tokens_decode, 0);
  EXPECT_EQ(alone.stats.n_tokens_prefill, 128);
  EXPECT_EQ(h.step().stats.n_tokens_prefill, 300 - 96 - 128);
  EXPECT_FALSE(h.core.has_work());
  EXPECT_EQ(h.exec.generated_[2], h.expected_output(2, 4, 5));
  EXPECT_EQ(h.exec.generated_[1], h.expected_output(1, 300, 1));
}

// The step time budget. A synthetic machine whose steps cost
// 30 ms + 4.5 ms per token (+ attention) reports every step's time; once the
// cost model is calibrated, a step carrying decode tokens is planned under
// the target, prefill fills the rest, and a step with nothing decoding
// prefills up to the token budget.
double synthetic_step_ms(const sched_plan& plan) {
  double ms = 30;
  for (const step_entry& e : plan.entries) {
    const double n = e.n_tokens(), p = e.pos0;
    ms += 4.5 * n + 0.4 * (n * p + n * (n + 1) / 2) / 1024;
  }
  return ms;
}

sched_plan timed_step(harness& h) {
  const sched_plan plan = h.step();
  h.core.observe_step(plan, synthetic_step_ms(plan));
  return plan;
}

// Calibrates the cost model with a few requests of mixed sizes, run to completion.
void calibrate(harness& h, request_id first_id) {
  h.add(first_id, iota_tokens(200, 3), 4);
  h.add(first_id + 1, iota_tokens(40, 700), 6);
  for (int i = 0; i < 200 && h.core.has_work(); ++i) timed_step(h);
  ASSERT_FALSE(h.core.has_work());
  ASSERT_TRUE(h.core.cost_model().calibrated());
}

TEST(scheduler_core, steps_carrying_decode_tokens_stay_under_the_itl_target) {
  scheduler_config cfg = sched_cfg(512, 32);
  cfg.itl_target_ms = 150;
  cfg.max_prefill_with_decode = 128;  // what would apply without the time budget
  harness h(cfg, kv_cfg(512, 16, true));
  calibrate(h, 900);
  for (request_id id = 1; id <= 8; ++id) h.add(id, iota_tokens(20, int32_t(id) * 50), 40);
  EXPECT_EQ(timed_step(h).stats.n_tokens_prefill, 160);  // nothing decodes yet: the whole prompts at once
  h.add(100, iota_tokens(400, 1000), 2);  // a long prompt arrives while 8 sequences decode
  int n_mixed = 0;
  while (h.core.find(100) != nullptr && h.core.find(100)->n_tokens_generated() == 0) {
    const int32_t n_left = 400 - h.core.find(100)->n_tokens_computed;
    const sched_plan plan = timed_step(h);
    ASSERT_EQ(plan.stats.n_tokens_decode, 8) << "step " << plan.stats.step;
    EXPECT_DOUBLE_EQ(plan.stats.target_ms, 150);
    EXPECT_LE(synthetic_step_ms(plan), 150 * 1.02) << "step " << plan.stats.step;
    // 30 + 4.5 * (8 + n) <= 150: n <= 18 (attention takes a little), never the static 128.
    EXPECT_GE(plan.stats.n_tokens_prefill, std::min(16, n_left));
    EXPECT_LE(plan.stats.n_tokens_prefill, 19);
    ++n_mixed;
    ASSERT_LT(n_mixed, 40);
  }
  EXPECT_GE(n_mixed, 400 / 19);
  ASSERT_TRUE(h.run_until_idle(200));
  EXPECT_EQ(h.exec.generated_[100], h.expected_output(100, 400, 2));
}

TEST(scheduler_core, auto_itl_target_is_twice_the_decode_part_of_the_step) {
  scheduler_config cfg = sched_cfg(512, 32);
  cfg.itl_target_ms = 0;  // auto
  harness h(cfg, kv_cfg(512, 16, true));
  calibrate(h, 900);
  for (request_id id = 1; id <= 4; ++id) h.add(id, iota_tokens(20, int32_t(id) * 50), 30);
  timed_step(h);
  h.add(100, iota_tokens(300, 1000), 2);
  const sched_plan plan = timed_step(h);
  ASSERT_EQ(plan.stats.n_tokens_decode, 4);
  // Decode part 30 + 4 * 4.5 = 48 ms: target ~96 ms, room for ~10 prefill tokens, floored at 16.
  EXPECT_NEAR(plan.stats.target_ms, 96, 3);
  EXPECT_EQ(plan.stats.n_tokens_prefill, 16);
}

TEST(scheduler_core, time_budget_never_starves_prefill) {
  scheduler_config cfg = sched_cfg(512, 32);
  cfg.itl_target_ms = 1;  // far below any step: only the floor lets prompts in
  cfg.min_prefill_with_decode = 24;
  harness h(cfg, kv_cfg(512, 16, true));
  calibrate(h, 900);
  h.add(1, iota_tokens(10, 50), 100);
  timed_step(h);
  h.add(2, iota_tokens(240, 1000), 1);
  int n_steps = 0;
  while (h.finished.count(2) == 0) {
    const sched_plan plan = timed_step(h);
    EXPECT_EQ(plan.stats.n_tokens_decode, 1);
    EXPECT_EQ(plan.stats.n_tokens_prefill, 24);
    ASSERT_LT(++n_steps, 20);
  }
  EXPECT_EQ(n_steps, 10);  // 240 / 24
}

TEST(scheduler_core, time_budget_off_or_uncalibrated_uses_the_static_cap) {
  for (const bool off : {true, false}) {
    scheduler_config cfg = sched_cfg(512, 32);
    cfg.itl_target_ms = off ? -1 : 0;
    cfg.max_prefill_with_decode = 100;
    harness h(cfg, kv_cfg(512, 16, true));
    if (off) calibrate(h, 900);
    h.add(1, iota_tokens(10, 50), 100);
    timed_step(h);
    h.add(2, iota_tokens(300, 1000), 1);
    const sched_plan plan = h.step();  // (uncalibrated: one step time is not enough to plan on)
    EXPECT_EQ(plan.stats.n_tokens_prefill, 100) << (off ? "off" : "uncalibrated");
    EXPECT_EQ(plan.stats.target_ms, 0);
  }
}

TEST(scheduler_core, cancel_while_waiting_in_prefill_and_in_decode_frees_blocks) {
  harness h(sched_cfg(32, 3), kv_cfg(64, 16, true));
  h.add(1, iota_tokens(8, 1), 50);      // decoding
  h.add(2, iota_tokens(100, 200), 50);  // long prefill
  h.add(3, iota_tokens(8, 400), 50);    // bystander
  h.add(4, iota_tokens(8, 600), 50);    // waits: max_running is 3
  h.step();
  h.step();
  ASSERT_EQ(h.core.find(4)->state, seq_state::waiting);
  ASSERT_EQ(h.core.find(1)->state, seq_state::running);
  ASSERT_LT(h.core.find(2)->n_tokens_computed, 100);
  ASSERT_GT(h.core.find(2)->n_tokens_computed, 0);
  EXPECT_TRUE(h.core.cancel(4));  // waiting: holds nothing, ends now
  EXPECT_TRUE(h.kv.block_table(4).empty());

  // In flight: the cancel waits for the step boundary.
  const int32_t used_before = h.kv.stats().n_blocks_used;
  sched_plan plan = h.core.schedule();
  ASSERT_TRUE(h.in_plan(plan, 2));
  EXPECT_TRUE(h.core.cancel(2));
  EXPECT_FALSE(h.kv.block_table(2).empty()) << "freed while its step is in flight";
  h.core.update(plan, h.exec.run(plan));
  EXPECT_TRUE(h.kv.block_table(2).empty());
  EXPECT_LT(h.kv.stats().n_blocks_used, used_before);
  EXPECT_EQ(h.core.check_invariants(), "");
  h.collect();

  // Between steps: immediate.
  EXPECT_GT(h.core.find(1)->n_tokens_generated(), 1);
  EXPECT_TRUE(h.core.cancel(1));
  EXPECT_TRUE(h.kv.block_table(1).empty());
  EXPECT_FALSE(h.core.cancel(1));
  h.collect();
  EXPECT_EQ(h.finished[4].reason, finish_reason::cancelled);
  EXPECT_EQ(h.finished[2].reason, finish_reason::cancelled);
  EXPECT_EQ(h.finished[1].reason, finish_reason::cancelled);
  ASSERT_TRUE(h.run_until_idle(200));
  EXPECT_EQ(h.finished[3].reason, finish_reason::length);
  EXPECT_EQ(h.exec.generated_[3], h.expected_output(3, 8, 50));
  EXPECT_EQ(h.kv.stats().n_blocks_used, 0);
}

TEST(scheduler_core, stop_flag_abort_and_oversized_sequences_end_once) {
  harness h(sched_cfg(64, 4), kv_cfg(4, 4, true));
  h.add(1, iota_tokens(3, 1), 100);
  h.add(2, iota_tokens(3, 50), 100);
  sched_plan plan = h.core.schedule();
  ASSERT_EQ(plan.entries.size(), 2u);
  std::vector<sched_sampled> sampled = h.exec.run(plan);
  sampled[0].finished = true;  // the session saw a stop condition for seq 1
  h.core.update(plan, sampled);
  h.collect();
  EXPECT_EQ(h.finished[1].reason, finish_reason::stop);

  plan = h.core.schedule();
  h.core.abort_step(plan);  // the executor failed
  h.collect();
  EXPECT_EQ(h.finished[2].reason, finish_reason::error);
  EXPECT_EQ(h.finished[2].error.message, seq_error_step_failed);
  EXPECT_EQ(h.finished[2].error.code, errc::internal);
  EXPECT_EQ(h.kv.stats().n_blocks_used, 0);

  h.add(3, iota_tokens(3, 80), 100);  // 103 tokens > 4 blocks of 4
  ASSERT_TRUE(h.run_until_idle(200));
  EXPECT_EQ(h.finished[3].reason, finish_reason::error);
  EXPECT_EQ(h.finished[3].error.message, seq_error_kv_capacity);
  EXPECT_EQ(h.finished[3].n_tokens_generated, 14);  // positions 0..15 computed; the token at 16 never is
  EXPECT_EQ(h.kv.stats().n_blocks_used, 0);
}

// Random arrivals, priorities, shared prefixes, stops and cancels on a small
// pool; invariants after every schedule() and update(), and a bounded drain.
TEST(scheduler_core, random_workloads_keep_invariants_and_drain) {
  for (const uint32_t seed : {11u, 12u, 13u, 14u}) {
    std::mt19937 rng(seed);
    harness h(sched_cfg(48, 6, 0.05), kv_cfg(40, 8, seed % 2 == 0));
    std::vector<std::vector<int32_t>> prefixes = {iota_tokens(30, 1), iota_tokens(17, 100), iota_tokens(5, 300)};
    request_id next = 0;
    std::set<request_id> cancelled;
    for (int i = 0; i < 600; ++i) {
      if (rng() % 3 == 0) {
        std::vector<int32_t> prompt = prefixes[rng() % prefixes.size()];
        for (uint32_t k = rng() % 40; k > 0; --k) prompt.push_back(static_cast<int32_t>(rng() % 500));
        h.add(next++, prompt, 1 + static_cast<int32_t>(rng() % 60), static_cast<int32_t>(rng() % 3));
      }
      sched_plan plan = h.core.schedule();
      ASSERT_EQ(h.core.check_invariants(), "") << "seed " << seed << " step " << i;
      std::vector<sched_sampled> sampled = h.exec.run(plan);
      if (next > 0 && rng() % 5 == 0) {
        const request_id victim = static_cast<request_id>(rng() % static_cast<uint32_t>(next));
        if (h.core.cancel(victim)) cancelled.insert(victim);
      }
      for (sched_sampled& t : sampled) t.finished = rng() % 40 == 0;
      h.core.update(plan, sampled);
      ASSERT_EQ(h.core.check_invariants(), "") << "seed " << seed << " step " << i;
      h.collect();
    }
    ASSERT_TRUE(h.run_until_idle(20000)) << "seed " << seed;
    EXPECT_EQ(static_cast<request_id>(h.finished.size()), next);
    for (const auto& [id, f] : h.finished) {
      EXPECT_EQ(h.exec.generated_[id], h.expected_output(id, f.n_tokens_prompt, f.n_tokens_generated)) << "seq " << id;
      EXPECT_TRUE(f.reason != finish_reason::cancelled || cancelled.count(id)) << "seq " << id;
    }
    EXPECT_EQ(h.kv.stats().n_blocks_used, 0);
    EXPECT_EQ(h.kv.stats().n_seqs, 0);
  }
}

}  // namespace
}  // namespace cortex
