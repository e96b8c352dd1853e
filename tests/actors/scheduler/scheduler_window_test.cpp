// scheduler_core over a KV cache with sliding-window groups (design.md,
// "Memory kinds"): each step's entry carries one table per group, windowed
// groups give their passed blocks back after each step, and under pressure
// those blocks go to other sequences instead of forcing preemptions.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "actors/scheduler/scheduler_core.hpp"
#include "tests/support/engine_configs.hpp"

namespace cortex {
namespace {

using testing::sched_cfg;

kv_cache_config window_cfg(int32_t n_blocks, int32_t block_size, bool caching, std::vector<int32_t> windows) {
  kv_cache_config c = testing::kv_cfg(n_blocks, block_size, caching);
  c.group_windows = std::move(windows);
  c.group_layers.assign(c.group_windows.size(), 1);
  return c;
}

std::vector<int32_t> iota_tokens(int32_t n, int32_t first) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = first + i;
  return t;
}

int32_t fake_token(request_id rid, int32_t pos) { return static_cast<int32_t>((rid * 7919 + pos * 31) % 997); }

// Plays the executor against a shadow of every block slot: in each group,
// the positions the entry's first query sees ([pos0 - window + 1, pos0), or
// all of [0, pos0) for full attention) must hold the sequence's tokens, and
// only entries before them may be released; then the entry's tokens are
// written into every group's blocks.
class window_executor {
 public:
  window_executor(const scheduler_core& core, const kv_cache_manager& kv)
      : core_(core), kv_(kv), slots_(static_cast<size_t>(kv.n_blocks() * kv.block_size()), -1) {}

  std::vector<sched_sampled> run(const sched_plan& plan) {
    std::vector<sched_sampled> out;
    const int32_t bs = kv_.block_size();
    for (const step_entry& e : plan.entries) {
      const sequence* s = core_.find(e.rid);
      EXPECT_NE(s, nullptr);
      if (s == nullptr) continue;
      EXPECT_EQ(e.more_block_tables.size() + 1, static_cast<size_t>(kv_.n_groups()));
      for (int32_t g = 0; g < kv_.n_groups() && static_cast<size_t>(g) <= e.more_block_tables.size(); ++g) {
        const std::vector<int32_t>& table = g == 0 ? e.block_table : e.more_block_tables[static_cast<size_t>(g - 1)];
        EXPECT_GE(static_cast<int32_t>(table.size()) * bs, e.pos0 + e.n_tokens());
        const int32_t w = kv_.group_window(g);
        const int32_t first = w == 0 ? 0 : std::max(0, e.pos0 - w + 1);
        for (int32_t i = 0; i < first / bs; ++i) ++n_released_seen_;
        for (int32_t p = first; p < e.pos0; ++p) {
          const int32_t b = table[static_cast<size_t>(p / bs)];
          if (b < 0) {
            ADD_FAILURE() << "seq " << e.rid << " group " << g << " lost a block its window sees at " << p;
            continue;
          }
          EXPECT_EQ(slots_[static_cast<size_t>(b * bs + p % bs)], s->tokens[static_cast<size_t>(p)])
              << "seq " << e.rid << " group " << g << " reads a wrong K/V at " << p;
        }
        for (int32_t i = 0; i < e.n_tokens(); ++i) {
          const int32_t p = e.pos0 + i;
          const int32_t b = table[static_cast<size_t>(p / bs)];
          if (b < 0) {
            ADD_FAILURE() << "seq " << e.rid << " group " << g << " writes into a released entry at " << p;
            continue;
          }
          slots_[static_cast<size_t>(b * bs + p % bs)] = e.tokens[static_cast<size_t>(i)];
          (g == 0 ? full_blocks_ : windowed_blocks_)[e.rid].insert(b);
        }
      }
      if (e.sample) {
        const int32_t tok = fake_token(e.rid, s->n_tokens());
        out.push_back({e.rid, tok, false, {}});
        generated_[e.rid].push_back(tok);
      }
    }
    return out;
  }

  std::map<request_id, std::vector<int32_t>> generated_;
  std::map<request_id, std::set<int32_t>> full_blocks_, windowed_blocks_;  // blocks each sequence wrote, by kind
  int64_t n_released_seen_ = 0;

 private:
  const scheduler_core& core_;
  const kv_cache_manager& kv_;
  std::vector<int32_t> slots_;
};

struct harness {
  harness(const scheduler_config& scfg, const kv_cache_config& kcfg) : kv(kcfg), core(scfg, kv), exec(core, kv) {}

  sched_plan step() {
    sched_plan plan = core.schedule();
    EXPECT_EQ(core.check_invariants(), "") << "after schedule, step " << plan.stats.step;
    max_blocks_used = std::max(max_blocks_used, kv.stats().n_blocks_used);
    const std::vector<sched_sampled> sampled = exec.run(plan);
    core.update(plan, sampled);
    EXPECT_EQ(core.check_invariants(), "") << "after update, step " << plan.stats.step;
    for (const seq_finished& f : core.take_finished()) {
      EXPECT_EQ(finished.count(f.rid), 0u) << "seq " << f.rid << " ended twice";
      finished[f.rid] = f;
    }
    return plan;
  }
  bool run_until_idle(int max_steps) {
    for (int i = 0; i < max_steps && core.has_work(); ++i) step();
    return !core.has_work();
  }
  void add(request_id id, std::vector<int32_t> prompt, int32_t max_tokens, int32_t priority = 0) {
    seq_request r;
    r.rid = id;
    r.priority = priority;
    r.tokens_prompt = std::move(prompt);
    r.max_tokens = max_tokens;
    ASSERT_TRUE(core.add(std::move(r)).is_ok());
  }
  void expect_outputs(const std::map<request_id, std::pair<int32_t, int32_t>>& prompt_and_max) {
    for (const auto& [id, pm] : prompt_and_max) {
      ASSERT_EQ(finished.count(id), 1u) << id;
      EXPECT_EQ(finished[id].reason, finish_reason::length) << id;
      std::vector<int32_t> want;
      for (int32_t i = 0; i < pm.second; ++i) want.push_back(fake_token(id, pm.first + i));
      EXPECT_EQ(exec.generated_[id], want) << id;
    }
  }

  kv_cache_manager kv;
  scheduler_core core;
  window_executor exec;
  std::map<request_id, seq_finished> finished;
  int32_t max_blocks_used = 0;
};

// Four conversations of 208 tokens (blocks of 16, a window of 32 on one
// group of two): each holds 13 full-attention blocks and at most 4 windowed
// ones, 68 in all, in a pool of 72. With nothing released they would need
// 104, and the same workload on a pool whose second group has no window
// preempts.
TEST(scheduler_windows, released_blocks_go_to_other_sequences_under_pressure_instead_of_preempting) {
  const int32_t n_blocks = 72;
  std::map<request_id, std::pair<int32_t, int32_t>> reqs;
  for (request_id id = 1; id <= 4; ++id) reqs[id] = {160, 48};

  harness h(sched_cfg(64, 8), window_cfg(n_blocks, 16, false, {0, 32}));
  for (const auto& [id, pm] : reqs) h.add(id, iota_tokens(pm.first, 100 * static_cast<int32_t>(id)), pm.second);
  ASSERT_TRUE(h.run_until_idle(2000));
  h.expect_outputs(reqs);
  EXPECT_EQ(h.core.totals().n_preemptions, 0u);
  EXPECT_GT(h.exec.n_released_seen_, 0);
  EXPECT_LE(h.max_blocks_used, n_blocks);
  // Blocks went round: a block one sequence's window left behind was
  // written again by another sequence, or by the same one's full group.
  int n_reused = 0;
  for (const auto& [id, ws] : h.exec.windowed_blocks_) {
    for (const auto& [other, fs] : h.exec.full_blocks_) {
      for (int32_t b : ws) n_reused += fs.count(b) != 0;
    }
    for (const auto& [other, ws2] : h.exec.windowed_blocks_) {
      if (other == id) continue;
      for (int32_t b : ws) n_reused += ws2.count(b) != 0;
    }
  }
  EXPECT_GT(n_reused, 0);
  const kv_cache_stats st = h.kv.stats();
  EXPECT_EQ(st.n_blocks_used, 0);
  for (const auto& g : st.groups) EXPECT_EQ(g.n_blocks_released, 0);

  // The same memory kinds without a window: both groups keep everything.
  harness flat(sched_cfg(64, 8), window_cfg(n_blocks, 16, false, {0, 0}));
  for (const auto& [id, pm] : reqs) flat.add(id, iota_tokens(pm.first, 100 * static_cast<int32_t>(id)), pm.second);
  ASSERT_TRUE(flat.run_until_idle(4000));
  flat.expect_outputs(reqs);
  EXPECT_GT(flat.core.totals().n_preemptions, 0u);
  EXPECT_EQ(flat.exec.n_released_seen_, 0);
}

// A long sequence alone: held blocks stay at 13 + 3 while the table grows,
// and stats say what a cache without windows would hold.
TEST(scheduler_windows, a_conversation_holds_its_window_and_stats_show_the_saving) {
  harness h(sched_cfg(64, 4), window_cfg(64, 16, true, {0, 32}));
  h.add(1, iota_tokens(200, 5), 8);  // 208 tokens: 13 rows
  int32_t max_windowed = 0;
  while (h.core.has_work()) {
    const sched_plan plan = h.step();
    const kv_cache_stats st = h.kv.stats();
    if (!h.core.has_work()) break;
    max_windowed = std::max(max_windowed, st.groups[1].n_blocks_used);
    const int32_t rows = static_cast<int32_t>(h.kv.block_table(1).size());
    EXPECT_EQ(st.groups[0].n_blocks_used, rows);
    EXPECT_EQ(st.groups[1].n_blocks_used + st.groups[1].n_blocks_released, rows);
    EXPECT_EQ(st.n_bytes_full(), static_cast<uint64_t>(2 * rows) * st.n_bytes_per_block);
    (void)plan;
  }
  EXPECT_LE(max_windowed, 3 + 64 / 16);  // the window's blocks, plus a prefill chunk's
}

// Random arrivals, lengths, priorities and shared prefixes over three groups,
// in a pool small enough to preempt: the executor's checks above hold at
// every step, every sequence ends once with the tokens it would have got
// alone (recomputed after preemption where it was), and nothing leaks.
TEST(scheduler_windows, random_workload_keeps_invariants_and_outputs) {
  uint64_t n_preemptions = 0;
  for (const bool caching : {true, false}) {
    for (const uint32_t seed : {1u, 2u}) {
      std::mt19937 rng(seed);
      harness h(sched_cfg(48, 6), window_cfg(60, 8, caching, {0, 24, 40}));
      std::map<request_id, std::pair<int32_t, int32_t>> reqs;
      const std::vector<int32_t> shared = iota_tokens(40, 9000);
      request_id next = 1;
      for (int round = 0; round < 60; ++round) {
        if (rng() % 3 == 0 && next <= 40) {
          std::vector<int32_t> prompt;
          if (rng() % 2) prompt = shared;
          const int32_t n_own = 1 + static_cast<int32_t>(rng() % 60);
          for (int32_t i = 0; i < n_own; ++i) prompt.push_back(static_cast<int32_t>(rng() % 500));
          const int32_t max_tokens = 1 + static_cast<int32_t>(rng() % 40);
          reqs[next] = {static_cast<int32_t>(prompt.size()), max_tokens};
          h.add(next, std::move(prompt), max_tokens, static_cast<int32_t>(rng() % 3));
          ++next;
        }
        if (h.core.has_work()) h.step();
      }
      ASSERT_TRUE(h.run_until_idle(4000));
      h.expect_outputs(reqs);
      n_preemptions += h.core.totals().n_preemptions;
      const kv_cache_stats st = h.kv.stats();
      EXPECT_EQ(st.n_blocks_used, 0);
      for (const auto& g : st.groups) EXPECT_EQ(g.n_blocks_released, 0);
      EXPECT_EQ(h.kv.check_invariants(), "");
    }
  }
  EXPECT_GT(n_preemptions, 0u) << "the pool never ran short: no recomputation was tried";
}

// Speculative decoding over windows: prompt-lookup drafts are verified
// against a fake model whose text repeats with a period of 35, so drafts
// are often partly wrong; the rejected positions' blocks go back (truncate)
// in every group, the windowed groups keep releasing, and each sequence
// gets exactly the model's tokens.
int32_t periodic_token(int32_t pos) { return pos % 5 == 0 ? 900 + (pos / 5) % 7 : 10 + pos % 7; }

TEST(scheduler_windows, speculative_steps_truncate_every_group_and_keep_the_windows) {
  scheduler_config cfg = sched_cfg(64, 4);
  cfg.adaptive_drafts = false;  // every draft the lookup finds
  kv_cache_manager kv(window_cfg(80, 4, true, {0, 16}));
  scheduler_core core(cfg, kv);
  std::map<request_id, int32_t> n_prompt;
  for (request_id id = 1; id <= 3; ++id) {
    seq_request r;
    r.rid = id;
    for (int32_t p = 0; p < 30 + 11 * static_cast<int32_t>(id); ++p) r.tokens_prompt.push_back(periodic_token(p));
    n_prompt[id] = static_cast<int32_t>(r.tokens_prompt.size());
    r.max_tokens = 90;
    r.spec = {2, 6};
    ASSERT_TRUE(core.add(std::move(r)).is_ok());
  }
  std::vector<int32_t> slots(static_cast<size_t>(kv.n_blocks() * kv.block_size()), -1);
  const int32_t bs = kv.block_size();
  std::map<request_id, std::vector<int32_t>> generated;
  int64_t n_released_seen = 0;
  for (int step = 0; step < 2000 && core.has_work(); ++step) {
    const sched_plan plan = core.schedule();
    ASSERT_EQ(core.check_invariants(), "");
    std::vector<sched_sampled> sampled;
    for (const step_entry& e : plan.entries) {
      const sequence* s = core.find(e.rid);
      ASSERT_NE(s, nullptr);
      for (int32_t g = 0; g < kv.n_groups(); ++g) {
        const std::vector<int32_t>& table = g == 0 ? e.block_table : e.more_block_tables[static_cast<size_t>(g - 1)];
        const int32_t w = kv.group_window(g);
        const int32_t first = w == 0 ? 0 : std::max(0, e.pos0 - w + 1);
        n_released_seen += std::count(table.begin(), table.end(), kv_block_released);
        for (int32_t p = first; p < e.pos0; ++p) {
          const int32_t b = table[static_cast<size_t>(p / bs)];
          ASSERT_GE(b, 0) << "seq " << e.rid << " group " << g << " pos " << p;
          ASSERT_EQ(slots[static_cast<size_t>(b * bs + p % bs)], periodic_token(p)) << "seq " << e.rid << " group " << g << " pos " << p;
        }
        for (int32_t i = 0; i < e.n_tokens(); ++i) {
          const int32_t p = e.pos0 + i;
          slots[static_cast<size_t>(table[static_cast<size_t>(p / bs)] * bs + p % bs)] = e.tokens[static_cast<size_t>(i)];
        }
      }
      if (!e.sample) continue;
      // Row i predicts position pos0 + n_known + i; a draft there is kept
      // while it is what the model says, and the first miss is replaced.
      const int32_t n_known = e.n_tokens() - e.n_draft;
      std::vector<int32_t> out;
      const int32_t n_room = s->max_tokens - s->n_tokens_generated();
      for (int32_t i = 0; i <= e.n_draft && static_cast<int32_t>(out.size()) < n_room; ++i) {
        const int32_t q = e.pos0 + n_known + i;
        out.push_back(periodic_token(q));
        if (i == e.n_draft || e.tokens[static_cast<size_t>(n_known + i)] != periodic_token(q)) break;
      }
      generated[e.rid].insert(generated[e.rid].end(), out.begin(), out.end());
      sampled.push_back({e.rid, out.front(), false, std::vector<int32_t>(out.begin() + 1, out.end())});
    }
    core.update(plan, sampled);
    ASSERT_EQ(core.check_invariants(), "");
  }
  ASSERT_FALSE(core.has_work());
  for (const auto& [id, n] : n_prompt) {
    std::vector<int32_t> want;
    for (int32_t p = n; p < n + 90; ++p) want.push_back(periodic_token(p));
    EXPECT_EQ(generated[id], want) << id;
  }
  const scheduler_totals& t = core.totals();
  EXPECT_GT(t.n_tokens_accepted, 0u);
  EXPECT_LT(t.n_tokens_accepted, t.n_tokens_drafted) << "no draft was rejected: nothing was truncated";
  EXPECT_GT(n_released_seen, 0);
  EXPECT_EQ(kv.stats().n_blocks_used, 0);
  for (const auto& g : kv.stats().groups) EXPECT_EQ(g.n_blocks_released, 0);
}

}  // namespace
}  // namespace cortex
