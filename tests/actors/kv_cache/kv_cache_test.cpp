// block_pool and kv_cache_manager: allocation, prefix sharing, LRU eviction,
// plan/commit, and invariants after every operation of random workloads.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "actors/kv_cache/block_pool.hpp"
#include "actors/kv_cache/kv_cache_manager.hpp"
#include "tests/support/engine_configs.hpp"

namespace cortex {
namespace {

using testing::kv_cfg;

#define EXPECT_CONSISTENT(kv) EXPECT_EQ((kv).check_invariants(), "")

std::vector<int32_t> iota_tokens(int32_t n, int32_t first) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) t[i] = first + i;
  return t;
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Allocates slots for tokens [pos0, pos_end) of seq and registers them as computed.
void compute(kv_cache_manager& kv, request_id seq, const std::vector<int32_t>& tokens, int32_t pos0, int32_t pos_end) {
  const kv_alloc_plan plan = kv.plan_allocation({{seq, pos0, pos_end - pos0}});
  ASSERT_TRUE(plan.fits);
  ASSERT_TRUE(kv.commit(plan).is_ok());
  kv.register_full_blocks(seq, tokens, pos_end);
}

TEST(block_pool, allocate_and_release_are_lifo_and_counted) {
  block_pool pool(4, 16);
  EXPECT_EQ(pool.check_invariants(), "");
  EXPECT_EQ(pool.allocate(), 0);
  EXPECT_EQ(pool.allocate(), 1);
  EXPECT_EQ(pool.n_used(), 2);
  EXPECT_EQ(pool.n_free(), 2);
  pool.ref(1);
  EXPECT_EQ(pool.ref_count(1), 2);
  pool.unref(1);
  EXPECT_EQ(pool.n_used(), 2);
  pool.unref(1);
  EXPECT_EQ(pool.n_used(), 1);
  EXPECT_EQ(pool.allocate(), 1);  // the block just freed comes back first
  EXPECT_EQ(pool.allocate(), 2);
  EXPECT_EQ(pool.allocate(), 3);
  EXPECT_EQ(pool.allocate(), -1);  // nothing free, nothing cached
  EXPECT_EQ(pool.check_invariants(), "");
}

TEST(block_pool, collision_with_other_tokens_is_not_a_hit) {
  block_pool pool(2, 4);
  const std::vector<int32_t> a = {1, 2, 3, 4};
  const std::vector<int32_t> b = {1, 2, 3, 5};
  const int32_t blk = pool.allocate();
  ASSERT_TRUE(pool.cache_block(blk, 42, a.data()));
  EXPECT_EQ(pool.find_cached(42, a.data()), blk);
  EXPECT_EQ(pool.find_cached(42, b.data()), -1);  // same hash, other tokens
  EXPECT_EQ(pool.find_cached(43, a.data()), -1);
  const int32_t other = pool.allocate();
  EXPECT_FALSE(pool.cache_block(other, 42, b.data()));  // hash taken: stays private
  EXPECT_EQ(pool.check_invariants(), "");
}

TEST(block_pool, checker_reports_a_block_both_free_and_referenced) {
  block_pool pool(3, 4);
  pool.ref(2);  // violates ref()'s REQUIRES: block 2 is free
  EXPECT_NE(pool.check_invariants(), "");
}

TEST(block_pool, hash_depends_on_parent_and_every_token) {
  const std::vector<int32_t> t = iota_tokens(16, 100);
  const uint64_t h = kv_block_hash(kv_block_hash_root, t.data(), 16);
  EXPECT_NE(h, kv_block_hash(h, t.data(), 16));
  for (int i = 0; i < 16; ++i) {
    std::vector<int32_t> u = t;
    u[i] += 1;
    EXPECT_NE(h, kv_block_hash(kv_block_hash_root, u.data(), 16)) << "token " << i;
  }
}

TEST(kv_cache_manager, block_table_covers_positions) {
  kv_cache_manager kv(kv_cfg(8, 16, true));
  EXPECT_EQ(kv.lookup_prefix(1, iota_tokens(40, 0)), 0);
  const kv_alloc_plan plan = kv.plan_allocation({{1, 0, 40}});
  ASSERT_EQ(plan.entries.size(), 1u);
  EXPECT_EQ(plan.entries[0].n_blocks_new, 3);
  EXPECT_TRUE(plan.fits);
  EXPECT_TRUE(kv.commit(plan).is_ok());
  EXPECT_EQ(kv.block_table(1).size(), 3u);
  EXPECT_CONSISTENT(kv);
  // One more token within the last block needs nothing; past it, one block.
  EXPECT_EQ(kv.n_blocks_needed(1, 48), 0);
  EXPECT_EQ(kv.n_blocks_needed(1, 49), 1);
  EXPECT_EQ(kv.stats().n_blocks_used, 3);
  kv.free(1);
  EXPECT_EQ(kv.stats().n_blocks_used, 0);
  EXPECT_EQ(kv.stats().n_blocks_free, 8);
  EXPECT_TRUE(kv.block_table(1).empty());
  EXPECT_CONSISTENT(kv);
}

TEST(kv_cache_manager, plan_has_no_side_effects_and_stale_plans_are_refused) {
  kv_cache_manager kv(kv_cfg(4, 16, true));
  const kv_alloc_plan too_big = kv.plan_allocation({{1, 0, 48}, {2, 0, 32}});
  EXPECT_FALSE(too_big.fits);
  EXPECT_TRUE(too_big.entries[0].fits);
  EXPECT_FALSE(too_big.entries[1].fits);
  EXPECT_EQ(too_big.n_blocks_new, 5);
  EXPECT_FALSE(kv.commit(too_big).is_ok());
  EXPECT_EQ(kv.stats().n_blocks_used, 0);
  EXPECT_TRUE(kv.block_table(1).empty());

  const kv_alloc_plan a = kv.plan_allocation({{1, 0, 20}});
  const kv_alloc_plan b = kv.plan_allocation({{2, 0, 20}});
  EXPECT_EQ(kv.stats().n_blocks_used, 0);
  EXPECT_TRUE(kv.commit(a).is_ok());
  EXPECT_FALSE(kv.commit(b).is_ok());  // made before a was committed
  EXPECT_EQ(kv.block_table(2).size(), 0u);
  EXPECT_EQ(kv.stats().n_blocks_used, 2);
  EXPECT_CONSISTENT(kv);
}

// Two requests sharing a 200-token prefix, block size 16.
TEST(kv_cache_manager, shared_200_token_prefix_is_reused) {
  kv_cache_manager kv(kv_cfg(64, 16, true));
  const std::vector<int32_t> prefix = iota_tokens(200, 1000);
  const std::vector<int32_t> a = concat(prefix, iota_tokens(20, 5000));
  EXPECT_EQ(kv.lookup_prefix(1, a), 0);
  compute(kv, 1, a, 0, static_cast<int32_t>(a.size()));
  EXPECT_CONSISTENT(kv);

  // Still running: shared read-only, ref counts go up.
  const std::vector<int32_t> b = concat(prefix, iota_tokens(30, 7000));
  const int32_t n_cached = kv.lookup_prefix(2, b);
  EXPECT_EQ(n_cached, 192);
  EXPECT_CONSISTENT(kv);
  const std::vector<int32_t>& ta = kv.block_table(1);
  const std::vector<int32_t>& tb = kv.block_table(2);
  ASSERT_EQ(tb.size(), 12u);
  EXPECT_TRUE(std::equal(tb.begin(), tb.end(), ta.begin()));
  compute(kv, 2, b, n_cached, static_cast<int32_t>(b.size()));
  EXPECT_NE(kv.block_table(2)[12], ta[12]);  // the diverging block is private
  EXPECT_CONSISTENT(kv);

  // Finished: the blocks stay cached.
  kv.free(1);
  kv.free(2);
  EXPECT_CONSISTENT(kv);
  EXPECT_EQ(kv.stats().n_blocks_used, 0);
  EXPECT_GE(kv.stats().n_blocks_cached_idle, 13);
  // The prompt alone: everything but the block of its last token.
  EXPECT_EQ(kv.lookup_prefix(3, prefix), 192);
  kv.free(3);
  // 208 tokens are 13 full blocks, but the last token must be computed.
  EXPECT_EQ(kv.lookup_prefix(4, std::vector<int32_t>(a.begin(), a.begin() + 208)), 192);
  kv.free(4);
  EXPECT_EQ(kv.lookup_prefix(5, std::vector<int32_t>(a.begin(), a.begin() + 209)), 208);
  kv.free(5);
  // A different first token shares nothing: hashes chain.
  std::vector<int32_t> c = b;
  c[0] = 1;
  EXPECT_EQ(kv.lookup_prefix(6, c), 0);
  kv.free(6);
  EXPECT_CONSISTENT(kv);
  EXPECT_GT(kv.stats().hit_rate(), 0.0);
}

TEST(kv_cache_manager, prefix_caching_off_shares_nothing) {
  kv_cache_manager kv(kv_cfg(64, 16, false));
  const std::vector<int32_t> a = iota_tokens(100, 0);
  kv.lookup_prefix(1, a);
  compute(kv, 1, a, 0, 100);
  kv.free(1);
  EXPECT_EQ(kv.stats().n_blocks_cached, 0);
  EXPECT_EQ(kv.stats().n_blocks_free, 64);
  EXPECT_EQ(kv.lookup_prefix(2, a), 0);
  EXPECT_CONSISTENT(kv);
}

TEST(kv_cache_manager, evicts_cached_blocks_lru_only_when_the_free_list_is_empty) {
  kv_cache_manager kv(kv_cfg(8, 4, true));
  const std::vector<int32_t> a = iota_tokens(16, 0);
  kv.lookup_prefix(1, a);
  compute(kv, 1, a, 0, 16);  // blocks 0..3
  kv.free(1);                // cached idle: 3, 2, 1, 0 from least to most recent
  EXPECT_EQ(kv.stats().n_blocks_cached_idle, 4);

  kv.lookup_prefix(2, iota_tokens(16, 100));
  kv_alloc_plan plan = kv.plan_allocation({{2, 0, 16}});
  EXPECT_TRUE(plan.evicted.empty());  // four free blocks left
  ASSERT_TRUE(kv.commit(plan).is_ok());
  EXPECT_EQ(kv.stats().n_evictions, 0u);

  kv.lookup_prefix(3, iota_tokens(8, 200));
  plan = kv.plan_allocation({{3, 0, 8}});
  EXPECT_EQ(plan.evicted, (std::vector<int32_t>{3, 2}));  // a's tail first
  ASSERT_TRUE(kv.commit(plan).is_ok());
  EXPECT_EQ(kv.stats().n_evictions, 2u);
  EXPECT_CONSISTENT(kv);
  kv.free(2);
  kv.free(3);
  // a's head survived: two blocks still hit (its third block was evicted).
  EXPECT_EQ(kv.lookup_prefix(4, a), 8);
  EXPECT_CONSISTENT(kv);
  // Attached blocks are not evictable: a plan cannot count them.
  EXPECT_EQ(kv.n_blocks_available(), 6);
}

TEST(kv_cache_manager, duplicate_content_computed_twice_stays_private) {
  kv_cache_manager kv(kv_cfg(8, 4, true));
  const std::vector<int32_t> a = iota_tokens(9, 0);
  kv.lookup_prefix(1, a);
  kv.lookup_prefix(2, a);  // both miss: computed twice concurrently
  compute(kv, 1, a, 0, 9);
  compute(kv, 2, a, 0, 9);
  EXPECT_EQ(kv.stats().n_blocks_cached, 2);
  EXPECT_CONSISTENT(kv);
  kv.free(1);
  kv.free(2);
  EXPECT_EQ(kv.stats().n_blocks_cached_idle, 2);
  EXPECT_EQ(kv.stats().n_blocks_free, 6);
  EXPECT_CONSISTENT(kv);
}

// Random sequences drawn from a few shared prefixes. A shadow copy of every
// slot's content checks that a sequence reads exactly its own tokens through
// its table (shared blocks included) and never writes a block someone else
// holds.
TEST(kv_cache_manager, random_workload_keeps_invariants_and_contents) {
  for (const bool caching : {true, false}) {
    for (const uint32_t seed : {1u, 2u, 3u}) {
      std::mt19937 rng(seed);
      const int32_t n_blocks = 48;
      const int32_t bs = 4;
      kv_cache_manager kv(kv_cfg(n_blocks, bs, caching));
      std::vector<int32_t> slots(static_cast<size_t>(n_blocks * bs), -1);
      std::vector<std::vector<int32_t>> prefixes;
      for (int i = 0; i < 3; ++i) prefixes.push_back(iota_tokens(13 + 7 * i, 1000 * (i + 1)));
      struct live_seq { std::vector<int32_t> tokens; int32_t n_computed; };
      std::map<request_id, live_seq> live;
      request_id next_id = 1;
      for (int op = 0; op < 3000; ++op) {
        const int kind = static_cast<int>(rng() % 10);
        if (kind < 3 && live.size() < 12) {
          live_seq s;
          s.tokens = prefixes[rng() % prefixes.size()];
          const int32_t n_extra = static_cast<int32_t>(rng() % 20);
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
            const std::vector<int32_t>& table = kv.block_table(id);
            for (int32_t p = 0; p < s.n_computed; ++p) {
              ASSERT_EQ(slots[table[p / bs] * bs + p % bs], s.tokens[p]) << "seq " << id << " pos " << p;
            }
            for (int32_t p = s.n_computed; p < s.n_computed + n_new; ++p) {
              for (const auto& [other, o] : live) {
                if (other == id) continue;
                const std::vector<int32_t>& to = kv.block_table(other);
                ASSERT_EQ(std::count(to.begin(), to.end(), table[p / bs]), 0) << "writing a shared block";
              }
              slots[table[p / bs] * bs + p % bs] = s.tokens[p];
            }
            s.n_computed += n_new;
            kv.register_full_blocks(id, s.tokens, s.n_computed);
          }
        } else if (!live.empty()) {
          auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
          kv.free(it->first);
          live.erase(it);
        }
        ASSERT_EQ(kv.check_invariants(), "") << "seed " << seed << " op " << op;
      }
      for (const auto& entry : live) kv.free(entry.first);
      EXPECT_EQ(kv.stats().n_blocks_used, 0);
      EXPECT_EQ(kv.stats().n_blocks_free + kv.stats().n_blocks_cached_idle, n_blocks);
      if (caching) {
        EXPECT_GT(kv.stats().n_tokens_hit, 0u);
        EXPECT_GT(kv.stats().n_evictions, 0u);
      } else {
        EXPECT_EQ(kv.stats().n_tokens_hit, 0u);
      }
      EXPECT_CONSISTENT(kv);
    }
  }
}

}  // namespace
}  // namespace cortex
