// Paged flash attention against the naive reference, over shuffled
// non-contiguous block tables, GQA ratios, chunked prefill and head ranges,
// on every ISA path this CPU can run.
#include "kernels/attention.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cpu_features.hpp"
#include "tests/kernels/isa_paths.hpp"

namespace cortex::kernels {
namespace {

struct attention_case {
  int block_size, n_kv_heads, group, head_dim, n_q, pos0;
  float value_range;  // q/k entries drawn from [-r, r]: large r = peaked softmax
};

struct arena_fixture {
  kv_layout layout;
  int n_heads;
  std::vector<float> k, v, q;
  std::vector<int32_t> table;

  arena_fixture(const attention_case& c, uint64_t seed)
      : layout{c.block_size, c.n_kv_heads, c.head_dim}, n_heads(c.n_kv_heads * c.group) {
    std::mt19937_64 rng(seed);
    const int n_pos = c.pos0 + c.n_q;
    const int n_used = (n_pos + c.block_size - 1) / c.block_size;
    const int n_blocks = 2 * n_used + 3;  // spare blocks hold garbage
    std::vector<int32_t> ids(n_blocks);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng);
    table.assign(ids.begin(), ids.begin() + n_used);
    const size_t per_block = static_cast<size_t>(c.block_size) * c.n_kv_heads * c.head_dim;
    std::uniform_real_distribution<float> kq(-c.value_range, c.value_range), vv(-1.0f, 1.0f);
    k.resize(per_block * n_blocks);
    v.resize(per_block * n_blocks);
    for (auto& x : k) x = kq(rng);
    for (auto& x : v) x = vv(rng);
    q.resize(static_cast<size_t>(c.n_q) * n_heads * c.head_dim);
    for (auto& x : q) x = kq(rng);
  }
};

void expect_paged_matches_reference(const attention_case& c, int head_begin, int head_end,
                                    uint64_t seed) {
  arena_fixture f(c, seed);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  const size_t n_out = f.q.size();
  const float sentinel = 12345.0f;
  std::vector<float> got(n_out, sentinel), want(n_out, sentinel);
  attention_paged(f.q.data(), c.n_q, c.pos0, f.n_heads, head_begin, head_end, f.k.data(),
                  f.v.data(), f.table.data(), f.layout, scale, got.data());
  attention_reference(f.q.data(), c.n_q, c.pos0, f.n_heads, head_begin, head_end, f.k.data(),
                      f.v.data(), f.table.data(), f.layout, scale, want.data());
  for (int i = 0; i < c.n_q; ++i) {
    for (int h = 0; h < f.n_heads; ++h) {
      for (int d = 0; d < c.head_dim; ++d) {
        const size_t at = (static_cast<size_t>(i) * f.n_heads + h) * c.head_dim + d;
        if (h < head_begin || h >= head_end) {
          ASSERT_EQ(got[at], sentinel) << "head outside the range was written: h=" << h;
          continue;
        }
        ASSERT_NEAR(got[at], want[at], 2e-5)
            << "bs=" << c.block_size << " kv=" << c.n_kv_heads << " group=" << c.group
            << " hd=" << c.head_dim << " n_q=" << c.n_q << " pos0=" << c.pos0 << " i=" << i
            << " h=" << h << " d=" << d;
      }
    }
  }
}

class attention : public ::testing::TestWithParam<isa> {
 protected:
  void SetUp() override { set_isa_for_testing(GetParam()); }
  void TearDown() override { restore_default_isa(); }
};

TEST_P(attention, paged_matches_reference_over_shapes) {
  uint64_t seed = 1;
  for (int block_size : {16, 7}) {
    for (int group : {1, 2, 4}) {
      for (int n_q : {1, 2, 5, 13, 20}) {
        for (int pos0 : {0, 3, 30}) {
          const attention_case c{block_size, 2, group, 64, n_q, pos0, 1.0f};
          expect_paged_matches_reference(c, 0, 2 * group, seed++);
        }
      }
    }
  }
}

TEST_P(attention, odd_head_dims_and_large_blocks) {
  uint64_t seed = 100;
  for (int head_dim : {8, 20, 72, 128, 256}) {
    for (int block_size : {1, 48, 64}) {
      const attention_case c{block_size, 2, 2, head_dim, 9, 70, 1.0f};
      expect_paged_matches_reference(c, 0, 4, seed++);
    }
  }
}

TEST_P(attention, head_ranges_write_only_their_heads) {
  // 8 heads over 2 KV heads; ranges that start and end inside a GQA group.
  const attention_case c{7, 2, 4, 32, 6, 11, 1.0f};
  const int ranges[][2] = {{0, 8}, {0, 1}, {3, 5}, {5, 8}, {2, 2}, {7, 8}};
  uint64_t seed = 200;
  for (const auto& r : ranges) expect_paged_matches_reference(c, r[0], r[1], seed++);
}

TEST_P(attention, peaked_scores_stay_finite_and_exact) {
  // |q.k| * scale reaches hundreds: the online max must shift before exp.
  const attention_case c{16, 1, 4, 64, 20, 150, 6.0f};
  expect_paged_matches_reference(c, 0, 4, 300);
}

TEST_P(attention, long_decode_context) {
  const attention_case c{16, 4, 2, 128, 1, 1500, 1.0f};
  expect_paged_matches_reference(c, 0, 8, 400);
}

TEST_P(attention, long_prefill_chunk) {
  const attention_case c{16, 2, 4, 64, 100, 37, 1.0f};
  expect_paged_matches_reference(c, 0, 8, 500);
}

INSTANTIATE_TEST_SUITE_P(isas, attention, ::testing::ValuesIn(runnable_isas()),
                         [](const auto& info) { return isa_name(info.param); });

TEST(attention_reference, single_position_returns_its_value) {
  // One position: softmax weight 1, so the output is exactly v.
  const kv_layout layout{4, 1, 3};
  std::vector<float> k(12, 0.5f), v(12, 0.0f);
  const float v0[3] = {1.0f, -2.0f, 3.0f};
  const int32_t table[1] = {0};
  std::copy(v0, v0 + 3, v.begin());  // position 0 = block 0, slot 0
  const float q[3] = {1.0f, 1.0f, 1.0f};
  float out[3];
  attention_reference(q, 1, 0, 1, 0, 1, k.data(), v.data(), table, layout, 1.0f, out);
  for (int d = 0; d < 3; ++d) EXPECT_FLOAT_EQ(out[d], v0[d]);
  attention_paged(q, 1, 0, 1, 0, 1, k.data(), v.data(), table, layout, 1.0f, out);
  for (int d = 0; d < 3; ++d) EXPECT_FLOAT_EQ(out[d], v0[d]);
}

}  // namespace
}  // namespace cortex::kernels
