// kv_cache_manager with K/V groups (design.md, "Memory kinds"): a
// full-attention group and sliding-window groups over one pool. Windowed
// blocks are released once no query still to come can see them and go to
// whoever needs blocks next; the prefix cache stays exact for every group.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "actors/kv_cache/block_pool.hpp"
#include "actors/kv_cache/kv_cache_manager.hpp"
#include "tests/support/engine_configs.hpp"

namespace cortex {
namespace {

kv_cache_config window_cfg(int32_t n_blocks, int32_t block_size, bool caching, std::vector<int32_t> windows) {
  kv_cache_config c = testing::kv_cfg(n_blocks, block_size, caching);
  c.group_windows = std::move(windows);
  c.group_layers.assign(c.group_windows.size(), 1);
  c.kv_bytes_per_block = 1000;
  return c;
}

std::vector<int32_t> iota_tokens(int32_t n, int32_t first) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = first + i;
  return t;
}

// Computes tokens [pos0, pos_end) of seq as the scheduler's step does:
// allocate, then (after the step) register full blocks and release what the
// windows have passed.
void compute(kv_cache_manager& kv, request_id seq, const std::vector<int32_t>& tokens, int32_t pos0, int32_t pos_end) {
  const kv_alloc_plan plan = kv.plan_allocation({{seq, pos0, pos_end - pos0}});
  ASSERT_TRUE(plan.fits);
  ASSERT_TRUE(kv.commit(plan).is_ok());
  kv.register_full_blocks(seq, tokens, pos_end);
  kv.release_out_of_window(seq, pos_end);
}

void compute_in_chunks(kv_cache_manager& kv, request_id seq, const std::vector<int32_t>& tokens, int32_t pos0,
                       int32_t pos_end, int32_t chunk) {
  for (int32_t p = pos0; p < pos_end; p += chunk) compute(kv, seq, tokens, p, std::min(pos_end, p + chunk));
}

TEST(block_pool, a_cached_block_is_found_only_for_its_own_group) {
  block_pool pool(4, 4, 2);
  const std::vector<int32_t> a = {1, 2, 3, 4};
  const int32_t b0 = pool.allocate(0);
  const int32_t b1 = pool.allocate(1);
  EXPECT_EQ(pool.n_used_in(0), 1);
  EXPECT_EQ(pool.n_used_in(1), 1);
  ASSERT_TRUE(pool.cache_block(b0, 42, a.data()));
  ASSERT_TRUE(pool.cache_block(b1, 42, a.data()));  // same content, other group: its own entry
  EXPECT_EQ(pool.find_cached(42, a.data(), 0), b0);
  EXPECT_EQ(pool.find_cached(42, a.data(), 1), b1);
  pool.unref(b1);
  EXPECT_EQ(pool.n_used_in(1), 0);
  pool.ref(b1);  // back from the LRU list: counted for its group again
  EXPECT_EQ(pool.n_used_in(1), 1);
  EXPECT_EQ(pool.check_invariants(), "");
}

TEST(kv_cache_windows, every_group_gets_a_table_row_for_each_block_of_positions) {
  kv_cache_manager kv(window_cfg(16, 4, true, {0, 8}));
  EXPECT_EQ(kv.n_groups(), 2);
  EXPECT_EQ(kv.n_rows_available(), 8);
  const kv_alloc_plan plan = kv.plan_allocation({{1, 0, 10}});
  ASSERT_TRUE(plan.fits);
  EXPECT_EQ(plan.n_blocks_new, 6);  // 3 rows, one block in each group
  ASSERT_TRUE(kv.commit(plan).is_ok());
  ASSERT_EQ(kv.block_table(1, 0).size(), 3u);
  ASSERT_EQ(kv.block_table(1, 1).size(), 3u);
  std::set<int32_t> ids(kv.block_table(1, 0).begin(), kv.block_table(1, 0).end());
  ids.insert(kv.block_table(1, 1).begin(), kv.block_table(1, 1).end());
  EXPECT_EQ(ids.size(), 6u);
  const kv_cache_stats st = kv.stats();
  ASSERT_EQ(st.groups.size(), 2u);
  EXPECT_EQ(st.groups[0].n_blocks_used, 3);
  EXPECT_EQ(st.groups[1].n_blocks_used, 3);
  EXPECT_EQ(st.groups[1].window, 8);
  EXPECT_EQ(kv.n_rows_available(), 5);
  EXPECT_EQ(kv.check_invariants(), "");
}

TEST(kv_cache_windows, windowed_blocks_are_released_once_every_query_to_come_is_past_them) {
  kv_cache_manager kv(window_cfg(32, 4, false, {0, 8}));
  const std::vector<int32_t> t = iota_tokens(24, 100);
  compute(kv, 1, t, 0, 20);
  // The next query is at 20 and sees 13..20: block 3 (12..15) stays, blocks 0..2 go.
  const std::vector<int32_t>& w = kv.block_table(1, 1);
  ASSERT_EQ(w.size(), 5u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(w[static_cast<size_t>(i)], kv_block_released) << i;
  EXPECT_GE(w[3], 0);
  EXPECT_GE(w[4], 0);
  for (int32_t b : kv.block_table(1, 0)) EXPECT_GE(b, 0);  // full attention keeps everything
  kv_cache_stats st = kv.stats();
  EXPECT_EQ(st.groups[0].n_blocks_used, 5);
  EXPECT_EQ(st.groups[1].n_blocks_used, 2);
  EXPECT_EQ(st.groups[1].n_blocks_released, 3);
  EXPECT_EQ(st.n_bytes_used(), 7u * 1000);
  EXPECT_EQ(st.n_bytes_full(), 10u * 1000);  // what 5 rows of 2 groups would hold
  EXPECT_EQ(kv.n_blocks_available(), 32 - 7);
  // A query at 22 still sees 15..22, in block 3; one at 23 sees 16..23: block 3 goes.
  kv.release_out_of_window(1, 22);
  EXPECT_EQ(kv.stats().groups[1].n_blocks_released, 3);
  compute(kv, 1, t, 20, 23);
  EXPECT_EQ(kv.stats().groups[1].n_blocks_released, 4);
  EXPECT_EQ(kv.check_invariants(), "");
  kv.free(1);
  st = kv.stats();
  EXPECT_EQ(st.n_blocks_used, 0);
  EXPECT_EQ(st.groups[1].n_blocks_released, 0);
  EXPECT_EQ(kv.n_blocks_available(), 32);
  EXPECT_EQ(kv.check_invariants(), "");
}

TEST(kv_cache_windows, a_long_sequence_fits_where_the_whole_cache_would_not_and_blocks_go_round) {
  // Window 8, blocks of 4, one 64-token sequence: 16 rows. With nothing
  // released that is 32 blocks; the window's group holds at most 3 (plus
  // the next row), so 16 + 4 fit in a pool of 20.
  for (const bool caching : {false, true}) {
    kv_cache_manager kv(window_cfg(20, 4, caching, {0, 8}));
    const std::vector<int32_t> t = iota_tokens(64, 7);
    std::set<int32_t> windowed_ids;
    int32_t max_used = 0;
    for (int32_t p = 0; p < 64; p += 4) {
      compute(kv, 1, t, p, p + 4);
      for (int32_t b : kv.block_table(1, 1)) {
        if (b != kv_block_released) windowed_ids.insert(b);
      }
      max_used = std::max(max_used, kv.stats().n_blocks_used);
      ASSERT_EQ(kv.check_invariants(), "") << p;
    }
    EXPECT_EQ(kv.block_table(1, 0).size(), 16u);
    EXPECT_EQ(kv.stats().groups[1].n_blocks_used, 2);  // positions 56..63: the next query (64) sees 57..64
    EXPECT_LE(max_used, 19);
    // Released windowed blocks came back: the full group's later rows reuse them.
    std::set<int32_t> reused;
    for (int32_t b : kv.block_table(1, 0)) {
      if (windowed_ids.count(b) != 0) reused.insert(b);
    }
    EXPECT_FALSE(reused.empty()) << "caching " << caching;
    if (caching) EXPECT_GT(kv.stats().n_evictions, 0u);  // released blocks stay cached until someone needs them
  }
}

TEST(kv_cache_windows, the_prefix_cache_hits_only_where_every_group_holds_the_window_it_needs) {
  // Groups: full attention, window 8; blocks of 4; a pool of 24.
  kv_cache_manager kv(window_cfg(24, 4, true, {0, 8}));
  const std::vector<int32_t> t = iota_tokens(41, 500);
  compute_in_chunks(kv, 1, t, 0, 41, 4);
  kv.free(1);  // rows 0..9 of both groups stay cached (the windowed ones 0..7 since the window left them)
  EXPECT_EQ(kv.stats().n_blocks_cached_idle, 20);
  EXPECT_EQ(kv.check_invariants(), "");

  // Resident: the whole conversation is a hit; the windowed group gets only
  // the blocks its next query sees (positions 33..40: rows 8 and 9).
  EXPECT_EQ(kv.lookup_prefix(2, t), 40);
  const std::vector<int32_t>& w = kv.block_table(2, 1);
  ASSERT_EQ(w.size(), 10u);
  EXPECT_EQ(std::count(w.begin(), w.end(), kv_block_released), 8);
  EXPECT_EQ(kv.stats().groups[1].n_blocks_released, 8);
  EXPECT_EQ(kv.check_invariants(), "");
  kv.free(2);

  // A prompt sharing the first 32 tokens: a hit of 32 (windowed rows 6, 7).
  std::vector<int32_t> v(t.begin(), t.begin() + 32);
  for (int32_t i = 0; i < 9; ++i) v.push_back(9000 + i);
  EXPECT_EQ(kv.lookup_prefix(3, v), 32);
  kv.free(3);

  // Pressure: another sequence takes every free block and evicts the six
  // least recently released cached blocks. The lookups above touched (and
  // so moved to the LRU tail) windowed rows 6..9 and every full-attention
  // row; what goes is windowed rows 0..5.
  const int32_t n_free = kv.stats().n_blocks_free;
  const int32_t n_evict = 6;
  ASSERT_EQ((n_free + n_evict) % 2, 0);
  const kv_alloc_plan plan = kv.plan_allocation({{4, 0, (n_free + n_evict) / 2 * 4}});
  ASSERT_TRUE(plan.fits);
  ASSERT_EQ(plan.evicted.size(), static_cast<size_t>(n_evict));
  ASSERT_TRUE(kv.commit(plan).is_ok());
  EXPECT_EQ(kv.check_invariants(), "");

  // Every prefix of the conversation: the full-attention group still holds
  // all of it, but a hit of n tokens needs windowed rows
  // [(n - 8 + 1) / 4, n / 4) too. From 32 tokens on those are rows 6..9,
  // resident; every shorter prefix needs an evicted row: no hit at all.
  for (int32_t n = 4; n <= 40; n += 4) {
    std::vector<int32_t> q(t.begin(), t.begin() + n);
    q.push_back(123456);  // the query's own last token, never shared
    const int32_t hit = kv.lookup_prefix(100 + n, q);
    EXPECT_EQ(hit, n >= 32 ? n : 0) << n;
    const std::vector<int32_t>& wt = kv.block_table(100 + n, 1);
    for (int32_t i = std::max(0, hit - 8 + 1) / 4; i < hit / 4; ++i) EXPECT_GE(wt[static_cast<size_t>(i)], 0) << n;
    kv.free(100 + n);
    ASSERT_EQ(kv.check_invariants(), "") << n;
  }
}

// The same scenario with the LRU order spelt out: the windowed blocks a
// prefix needs are evicted while its full-attention blocks stay; the prefix
// is then no hit at its length, a still-resident one is.
TEST(kv_cache_windows, a_prefix_whose_window_was_evicted_is_not_a_hit_and_a_resident_one_is) {
  kv_cache_manager kv(window_cfg(24, 4, true, {0, 8}));
  const std::vector<int32_t> t = iota_tokens(41, 500);
  compute_in_chunks(kv, 1, t, 0, 41, 4);
  kv.free(1);
  // LRU, least recent first: windowed rows 0..7 (released while it ran),
  // then its last row first: row 9 (full, windowed), row 8 (full, windowed),
  // rows 7..0 (full). The free list holds the 4 blocks of the partial rows.
  ASSERT_EQ(kv.stats().n_blocks_free, 4);
  // Evict windowed rows 0..7 and nothing else.
  const kv_alloc_plan plan = kv.plan_allocation({{2, 0, 24}});  // 6 rows = 12 blocks: 4 free + 8 evicted
  ASSERT_TRUE(plan.fits);
  ASSERT_EQ(plan.evicted.size(), 8u);
  ASSERT_TRUE(kv.commit(plan).is_ok());
  EXPECT_EQ(kv.stats().n_evictions, 8u);

  // The whole conversation still hits: its window (rows 8, 9) is resident.
  EXPECT_EQ(kv.lookup_prefix(3, t), 40);
  EXPECT_EQ(kv.check_invariants(), "");
  kv.free(3);
  // Its first 20 tokens: the full-attention group holds rows 0..4, but the
  // window before position 20 (rows 3, 4) was evicted, and so was every
  // shorter prefix's window: not a hit at all.
  std::vector<int32_t> u(t.begin(), t.begin() + 20);
  u.push_back(4242);
  EXPECT_EQ(kv.lookup_prefix(4, u), 0);
  EXPECT_TRUE(kv.block_table(4, 0).empty());
  kv.free(4);
  EXPECT_EQ(kv.check_invariants(), "");
}

TEST(kv_cache_windows, truncate_keeps_released_entries_and_frees_the_tail) {
  kv_cache_manager kv(window_cfg(40, 4, true, {0, 8}));
  const std::vector<int32_t> t = iota_tokens(40, 3);
  compute(kv, 1, t, 0, 24);  // rows 0..5; window rows 0..3 released (next query 24 sees 17..24)
  EXPECT_EQ(kv.stats().groups[1].n_blocks_released, 4);
  // A speculative step wrote 24..35, only 24..26 were accepted.
  ASSERT_TRUE(kv.commit(kv.plan_allocation({{1, 24, 12}})).is_ok());
  EXPECT_EQ(kv.block_table(1, 1).size(), 9u);
  kv.truncate(1, 27);
  EXPECT_EQ(kv.block_table(1, 0).size(), 7u);
  EXPECT_EQ(kv.block_table(1, 1).size(), 7u);
  EXPECT_EQ(kv.stats().groups[1].n_blocks_released, 4);
  EXPECT_EQ(kv.stats().n_blocks_used, 7 + 3);
  EXPECT_EQ(kv.check_invariants(), "");
  kv.free(1);
  EXPECT_EQ(kv.stats().n_blocks_used, 0);
  EXPECT_EQ(kv.check_invariants(), "");
}

TEST(kv_cache_windows, one_full_group_is_the_cache_it_always_was) {
  kv_cache_manager kv(testing::kv_cfg(8, 4, true));
  EXPECT_EQ(kv.n_groups(), 1);
  const std::vector<int32_t> t = iota_tokens(20, 1);
  compute(kv, 1, t, 0, 20);
  EXPECT_EQ(kv.block_table(1), (std::vector<int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(kv.stats().groups.size(), 1u);
  EXPECT_EQ(kv.stats().groups[0].n_blocks_released, 0);
  EXPECT_EQ(kv.stats().n_bytes_used(), kv.stats().n_bytes_full());
  EXPECT_EQ(kv.n_rows_available(), kv.n_blocks_available());
}

// Random steps over three groups (full, windows 8 and 13) with and without
// the prefix cache: invariants after every operation, and what each
// sequence reads back in each group is what it wrote there (or what the
// prefix it hit had written), for every position its window still sees.
TEST(kv_cache_windows, random_workload_keeps_invariants_and_contents) {
  const std::vector<int32_t> windows = {0, 8, 13};
  for (const bool caching : {true, false}) {
    for (const uint32_t seed : {1u, 2u, 3u}) {
      std::mt19937 rng(seed);
      const int32_t n_blocks = 96;
      const int32_t bs = 4;
      kv_cache_manager kv(window_cfg(n_blocks, bs, caching, windows));
      std::vector<int32_t> slots(static_cast<size_t>(n_blocks * bs), -1);  // (block, slot) -> token written
      std::vector<std::vector<int32_t>> prefixes;
      for (int i = 0; i < 3; ++i) prefixes.push_back(iota_tokens(13 + 9 * i, 1000 * (i + 1)));
      struct live_seq { std::vector<int32_t> tokens; int32_t n_computed; };
      std::map<request_id, live_seq> live;
      request_id next_id = 1;
      const auto first_seen = [&](size_t g, int32_t n_computed) {
        return windows[g] == 0 ? 0 : std::max(0, n_computed - windows[g] + 1);
      };
      for (int op = 0; op < 3000; ++op) {
        const int kind = static_cast<int>(rng() % 10);
        if (kind < 3 && live.size() < 10) {
          live_seq s;
          s.tokens = prefixes[rng() % prefixes.size()];
          const int32_t n_extra = static_cast<int32_t>(rng() % 30);
          for (int32_t i = 0; i < n_extra; ++i) s.tokens.push_back(static_cast<int32_t>(rng() % 50));
          s.n_computed = kv.lookup_prefix(next_id, s.tokens);
          ASSERT_LE(s.n_computed, static_cast<int32_t>(s.tokens.size()) - 1);
          ASSERT_EQ(s.n_computed % bs, 0);
          live.emplace(next_id++, std::move(s));
        } else if (kind < 8 && !live.empty()) {
          auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
          const request_id id = it->first;
          live_seq& s = it->second;
          if (s.n_computed == static_cast<int32_t>(s.tokens.size())) s.tokens.push_back(static_cast<int32_t>(rng() % 50));
          const int32_t n_new = 1 + static_cast<int32_t>(rng() % std::min<size_t>(9, s.tokens.size() - s.n_computed));
          const kv_alloc_plan plan = kv.plan_allocation({{id, s.n_computed, n_new}});
          if (!plan.fits) {
            ASSERT_FALSE(kv.commit(plan).is_ok());
            kv.free(id);
            live.erase(it);
          } else {
            ASSERT_TRUE(kv.commit(plan).is_ok());
            for (size_t g = 0; g < windows.size(); ++g) {
              const std::vector<int32_t>& table = kv.block_table(id, static_cast<int32_t>(g));
              // What the step's first query reads: [first_seen(pos0), pos0).
              for (int32_t p = first_seen(g, s.n_computed); p < s.n_computed; ++p) {
                const int32_t b = table[static_cast<size_t>(p / bs)];
                ASSERT_GE(b, 0) << "group " << g << " released a block still seen, seq " << id << " pos " << p;
                ASSERT_EQ(slots[static_cast<size_t>(b * bs + p % bs)], s.tokens[static_cast<size_t>(p)])
                    << "group " << g << " seq " << id << " pos " << p;
              }
              for (int32_t p = s.n_computed; p < s.n_computed + n_new; ++p) {
                const int32_t b = table[static_cast<size_t>(p / bs)];
                ASSERT_GE(b, 0);
                for (const auto& [other, o] : live) {
                  if (other == id) continue;
                  for (size_t h = 0; h < windows.size(); ++h) {
                    const std::vector<int32_t>& to = kv.block_table(other, static_cast<int32_t>(h));
                    ASSERT_EQ(std::count(to.begin(), to.end(), b), 0) << "writing a shared block";
                  }
                }
                slots[static_cast<size_t>(b * bs + p % bs)] = s.tokens[static_cast<size_t>(p)];
              }
            }
            s.n_computed += n_new;
            if (rng() % 5 == 0 && n_new > 1) {  // a speculative step: only part was accepted
              s.n_computed -= static_cast<int32_t>(rng() % static_cast<uint32_t>(n_new - 1));
              kv.truncate(id, s.n_computed);
            }
            kv.register_full_blocks(id, s.tokens, s.n_computed);
            kv.release_out_of_window(id, s.n_computed);
          }
        } else if (!live.empty()) {
          auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
          kv.free(it->first);
          live.erase(it);
        }
        ASSERT_EQ(kv.check_invariants(), "") << "seed " << seed << " op " << op;
      }
      for (const auto& entry : live) kv.free(entry.first);
      const kv_cache_stats st = kv.stats();
      EXPECT_EQ(st.n_blocks_used, 0);
      EXPECT_EQ(st.n_blocks_free + st.n_blocks_cached_idle, n_blocks);
      for (const auto& g : st.groups) EXPECT_EQ(g.n_blocks_released, 0);
      if (caching) {
        EXPECT_GT(st.n_tokens_hit, 0u);
        EXPECT_GT(st.n_evictions, 0u);
      }
    }
  }
}

}  // namespace
}  // namespace cortex
