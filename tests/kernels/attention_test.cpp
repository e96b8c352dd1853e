// Paged flash attention against the naive reference, over shuffled
// non-contiguous block tables, GQA ratios, chunked prefill, head ranges,
// key-range splits, sliding windows (causal, and symmetric for encoders)
// and score softcapping, for every K/V element type, on every ISA path this
// CPU can run. Typed caches are also held to an error bound derived from
// their rounding against attention over the unrounded f32 values. The
// reference itself is checked by hand on tiny cases.
#include "kernels/attention.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
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

// attention_args's window, softcap, n_keys, alibi_slopes and part_keys (0: off).
struct score_rules {
  int window = 0;
  float softcap = 0.0f;
  int n_keys = 0;
  const float* alibi = nullptr;
  int part_keys = 0;
};

// Largest |x - load(store(x))| a type allows for each element of a row, from
// its definition: f16 keeps 11 significant bits (2^-24 absolute below its
// normal range), bf16 8; q8_0 rounds x / d to an integer (half a step) and
// stores d = amax / 127 as f16 (a relative 2^-11 on each of up to 127 steps).
std::vector<float> rounding_bound(kv_type t, const float* x, int n) {
  std::vector<float> b(static_cast<size_t>(n), 0.0f);
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (t == kv_type::f16) b[static_cast<size_t>(i)] = std::max(ax * 0x1p-11f, 0x1p-24f);
    if (t == kv_type::bf16) b[static_cast<size_t>(i)] = ax * 0x1p-8f;
  }
  if (t == kv_type::q8_0) {
    for (int i0 = 0; i0 < n; i0 += 32) {
      float amax = 0.0f;
      for (int i = i0; i < i0 + 32; ++i) amax = std::max(amax, std::fabs(x[i]));
      const float d = amax / 127.0f;
      for (int i = i0; i < i0 + 32; ++i) b[static_cast<size_t>(i)] = d * (0.5f + 127.0f * 0x1p-11f);
    }
  }
  return b;
}

struct arena_fixture {
  kv_layout layout;
  kv_layout layout_f32;
  int n_heads;
  std::vector<float> k32, v32, q;          // exact values, f32 arena layout
  std::vector<float> k_err, v_err;         // per-element rounding bounds
  std::vector<uint8_t> k, v;               // the typed arena
  std::vector<int32_t> table;

  arena_fixture(const attention_case& c, kv_type type, uint64_t seed)
      : layout{c.block_size, c.n_kv_heads, c.head_dim, type},
        layout_f32{c.block_size, c.n_kv_heads, c.head_dim, kv_type::f32},
        n_heads(c.n_kv_heads * c.group) {
    std::mt19937_64 rng(seed);
    const int n_pos = c.pos0 + c.n_q;
    const int n_used = (n_pos + c.block_size - 1) / c.block_size;
    const int n_blocks = 2 * n_used + 3;  // spare blocks hold garbage
    std::vector<int32_t> ids(n_blocks);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng);
    table.assign(ids.begin(), ids.begin() + n_used);
    const size_t n_rows = static_cast<size_t>(n_blocks) * c.block_size * c.n_kv_heads;
    std::uniform_real_distribution<float> kq(-c.value_range, c.value_range), vv(-1.0f, 1.0f);
    k32.resize(n_rows * c.head_dim);
    v32.resize(n_rows * c.head_dim);
    for (auto& x : k32) x = kq(rng);
    for (auto& x : v32) x = vv(rng);
    q.resize(static_cast<size_t>(c.n_q) * n_heads * c.head_dim);
    for (auto& x : q) x = kq(rng);
    const auto& tr = kv_traits(type);
    const size_t rb = tr.row_bytes(c.head_dim);
    k.resize(n_rows * rb);
    v.resize(n_rows * rb);
    for (size_t r = 0; r < n_rows; ++r) {
      const float* kr = k32.data() + r * c.head_dim;
      const float* vr = v32.data() + r * c.head_dim;
      tr.store_row(kr, k.data() + r * rb, c.head_dim);
      tr.store_row(vr, v.data() + r * rb, c.head_dim);
      auto ek = rounding_bound(type, kr, c.head_dim), ev = rounding_bound(type, vr, c.head_dim);
      k_err.insert(k_err.end(), ek.begin(), ek.end());
      v_err.insert(v_err.end(), ev.begin(), ev.end());
    }
  }

  attention_args args(const attention_case& c, int head_begin, int head_end, float* out,
                      score_rules rules = {}) const {
    attention_args a;
    a.window = rules.window;
    a.softcap = rules.softcap;
    a.n_keys = rules.n_keys;
    a.alibi_slopes = rules.alibi;
    a.part_keys = rules.part_keys;
    a.q = q.data();
    a.n_q = c.n_q;
    a.pos0 = c.pos0;
    a.n_heads = n_heads;
    a.head_begin = head_begin;
    a.head_end = head_end;
    a.k_arena = k.data();
    a.v_arena = v.data();
    a.block_table = table.data();
    a.layout = layout;
    a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    a.out = out;
    return a;
  }

  // Bound on |attention over the typed cache - attention over k32 / v32| for
  // query i, head h: scores move by at most delta = scale * sum_d |q_d| *
  // k_err, so each softmax weight by a factor within e^(+-2 delta), and the
  // output by (e^(2 delta) - 1) * max|v| plus the largest V rounding. It
  // holds with a window (a subset of these positions) and with softcapping
  // (cap * tanh(s / cap) moves by at most what s moves).
  double bound(const attention_case& c, int i, int h) const {
    const int hd = c.head_dim, g = h / c.group;
    const float* qh = q.data() + (static_cast<size_t>(i) * n_heads + h) * hd;
    double delta = 0, ev = 0;
    for (int p = 0; p <= c.pos0 + i; ++p) {
      const size_t slot = static_cast<size_t>(table[p / c.block_size]) * c.block_size + p % c.block_size;
      const size_t row = (slot * c.n_kv_heads + g) * hd;
      double dp = 0;
      for (int d = 0; d < hd; ++d) {
        dp += std::fabs(qh[d]) * k_err[row + d];
        ev = std::max(ev, static_cast<double>(v_err[row + d]));
      }
      delta = std::max(delta, dp / std::sqrt(static_cast<double>(hd)));
    }
    return std::expm1(2 * delta) * 1.0 + ev + 2e-5;
  }
};

// The kernel against the reference over the same typed cache (tight: only
// float summation order differs), and the typed reference against the f32
// values within the type's rounding bound.
void expect_paged_matches_reference(const attention_case& c, kv_type type, int head_begin, int head_end,
                                    uint64_t seed, score_rules rules = {}) {
  arena_fixture f(c, type, seed);
  const size_t n_out = f.q.size();
  const float sentinel = 12345.0f;
  std::vector<float> got(n_out, sentinel), want(n_out, sentinel), exact(n_out, sentinel);
  attention_paged(f.args(c, head_begin, head_end, got.data(), rules));
  attention_reference(f.args(c, head_begin, head_end, want.data(), rules));
  attention_args a32 = f.args(c, head_begin, head_end, exact.data(), rules);
  a32.k_arena = f.k32.data();
  a32.v_arena = f.v32.data();
  a32.layout = f.layout_f32;
  attention_reference(a32);
  for (int i = 0; i < c.n_q; ++i) {
    for (int h = 0; h < f.n_heads; ++h) {
      const double tol = f.bound(c, i, h);
      for (int d = 0; d < c.head_dim; ++d) {
        const size_t at = (static_cast<size_t>(i) * f.n_heads + h) * c.head_dim + d;
        if (h < head_begin || h >= head_end) {
          ASSERT_EQ(got[at], sentinel) << "head outside the range was written: h=" << h;
          continue;
        }
        ASSERT_NEAR(got[at], want[at], 2e-5)
            << kv_type_name(type) << " bs=" << c.block_size << " kv=" << c.n_kv_heads << " group=" << c.group
            << " hd=" << c.head_dim << " n_q=" << c.n_q << " pos0=" << c.pos0 << " window=" << rules.window
            << " softcap=" << rules.softcap << " i=" << i << " h=" << h << " d=" << d;
        ASSERT_NEAR(want[at], exact[at], tol) << kv_type_name(type) << " rounding bound, i=" << i << " h=" << h;
      }
    }
  }
}

struct isa_and_type {
  isa i;
  kv_type t;
};

class attention : public ::testing::TestWithParam<isa_and_type> {
 protected:
  void SetUp() override { set_isa_for_testing(GetParam().i); }
  void TearDown() override { restore_default_isa(); }
  kv_type type() const { return GetParam().t; }
  // q8_0 stores blocks of 32 along head_dim: smaller heads are not allowed.
  bool fits(int head_dim) const { return kv_traits(type()).fits_head_dim(head_dim); }
};

TEST_P(attention, paged_matches_reference_over_shapes) {
  uint64_t seed = 1;
  for (int block_size : {16, 7}) {
    for (int group : {1, 2, 4}) {
      for (int n_q : {1, 2, 5, 13, 20}) {
        for (int pos0 : {0, 3, 30}) {
          const attention_case c{block_size, 2, group, 64, n_q, pos0, 1.0f};
          expect_paged_matches_reference(c, type(), 0, 2 * group, seed++);
        }
      }
    }
  }
}

TEST_P(attention, odd_head_dims_and_large_blocks) {
  uint64_t seed = 100;
  for (int head_dim : {8, 20, 32, 72, 128, 256, 512}) {
    if (!fits(head_dim)) continue;
    for (int block_size : {1, 48, 64}) {
      const attention_case c{block_size, 2, 2, head_dim, 9, 70, 1.0f};
      expect_paged_matches_reference(c, type(), 0, 4, seed++);
    }
    // 20 queries x 2 heads per KV head: the prefill tiles and lanes.
    const attention_case prefill{16, 2, 2, head_dim, 20, 33, 1.0f};
    expect_paged_matches_reference(prefill, type(), 0, 4, seed++);
  }
}

TEST_P(attention, head_ranges_write_only_their_heads) {
  // 8 heads over 2 KV heads; ranges that start and end inside a GQA group.
  // 6 queries: the decode path; 10 (40 rows per KV head): rows in lanes.
  const int ranges[][2] = {{0, 8}, {0, 1}, {3, 5}, {5, 8}, {2, 2}, {7, 8}};
  uint64_t seed = 200;
  for (int n_q : {6, 10}) {
    const attention_case c{7, 2, 4, 32, n_q, 11, 1.0f};
    for (const auto& r : ranges) expect_paged_matches_reference(c, type(), r[0], r[1], seed++);
  }
}

TEST_P(attention, peaked_scores_stay_finite_and_exact) {
  // |q.k| * scale reaches hundreds: the online max must shift before exp.
  const attention_case c{16, 1, 4, 64, 20, 150, 6.0f};
  expect_paged_matches_reference(c, type(), 0, 4, 300);
}

TEST_P(attention, long_decode_context) {
  // GQA 8 as TinyLlama, head_dim 128 as Llama 2/3, past many block edges.
  const attention_case c{16, 4, 8, 128, 1, 1500, 1.0f};
  expect_paged_matches_reference(c, type(), 0, 32, 400);
}

TEST_P(attention, long_prefill_chunk) {
  const attention_case c{16, 2, 4, 64, 100, 37, 1.0f};
  expect_paged_matches_reference(c, type(), 0, 8, 500);
}

// Batch invariance: a row's bits are the same whichever rows share its call
// (one query per call, every query in one call) and whether its key parts
// are folded inside the kernel (part_keys) or computed one call per part and
// merged; with and without a window. Past two part bounds (1024, 2048).
TEST_P(attention, a_rows_bits_do_not_depend_on_its_call) {
  const int pk = attention_part_keys;
  for (int window : {0, 1500}) {
    const attention_case c{16, 2, 4, 64, 40, 2 * pk + 30, 1.0f};
    arena_fixture f(c, type(), 900 + window);
    const size_t row_floats = static_cast<size_t>(f.n_heads) * c.head_dim;
    const score_rules rules{window, 0.0f};
    std::vector<float> together(c.n_q * row_floats);
    attention_args a = f.args(c, 0, f.n_heads, together.data(), rules);
    a.part_keys = pk;
    attention_paged(a);
    // One query per call.
    for (int i = 0; i < c.n_q; i += 7) {
      std::vector<float> alone(row_floats);
      attention_args b = f.args(c, 0, f.n_heads, alone.data(), rules);
      b.part_keys = pk;
      b.q = f.q.data() + i * row_floats;
      b.n_q = 1;
      b.pos0 = c.pos0 + i;
      attention_paged(b);
      ASSERT_EQ(0, std::memcmp(alone.data(), together.data() + i * row_floats, row_floats * sizeof(float)))
          << "window " << window << ": query " << i << " alone differs from it among " << c.n_q;
    }
    // One call per part, merged.
    const int n_parts = (c.pos0 + c.n_q + pk - 1) / pk;
    std::vector<std::vector<float>> outs(n_parts, std::vector<float>(together.size()));
    std::vector<std::vector<float>> lses(n_parts, std::vector<float>(static_cast<size_t>(c.n_q) * f.n_heads));
    std::vector<const float*> o, l;
    for (int j = 0; j < n_parts; ++j) {
      attention_args b = f.args(c, 0, f.n_heads, outs[j].data(), rules);
      b.part_keys = pk;
      b.key_begin = j * pk;
      b.key_end = (j + 1) * pk;
      b.lse = lses[j].data();
      attention_paged(b);
      o.push_back(outs[j].data());
      l.push_back(lses[j].data());
    }
    std::vector<float> merged(together.size());
    attention_merge(o.data(), l.data(), n_parts, c.n_q * f.n_heads, c.head_dim, merged.data());
    ASSERT_EQ(0, std::memcmp(merged.data(), together.data(), merged.size() * sizeof(float)))
        << "window " << window << ": parts merged differ from the parts folded in the kernel";
  }
}

TEST_P(attention, key_range_parts_merge_to_the_whole) {
  // Decode and a short prefill split into key ranges cut inside blocks, one
  // of them past some queries (those rows get out 0, lse -inf); merged, they
  // equal attention over all positions.
  // n_q 9: 36 rows per KV head, the prefill path (rows in vector lanes).
  for (int n_q : {1, 7, 9}) {
    const attention_case c{16, 2, 4, 64, n_q, 200, 1.0f};
    arena_fixture f(c, type(), 600 + n_q);
    const int n_rows = n_q * f.n_heads;
    const int cuts[] = {0, 37, 150, 203, std::max(207, c.pos0 + n_q)};  // the last part ends past every query
    std::vector<std::vector<float>> outs, lses;
    for (int j = 0; j + 1 < 5; ++j) {
      outs.emplace_back(static_cast<size_t>(n_rows) * c.head_dim, 7.0f);
      lses.emplace_back(static_cast<size_t>(n_rows), 7.0f);
      attention_args a = f.args(c, 0, f.n_heads, outs.back().data());
      a.key_begin = cuts[j];
      a.key_end = cuts[j + 1];
      a.lse = lses.back().data();
      attention_paged(a);
    }
    EXPECT_EQ(lses[3][0], -INFINITY) << "query 0 (position 200) has no key in [203, 207)";
    const float* o[4] = {outs[0].data(), outs[1].data(), outs[2].data(), outs[3].data()};
    const float* l[4] = {lses[0].data(), lses[1].data(), lses[2].data(), lses[3].data()};
    std::vector<float> merged(static_cast<size_t>(n_rows) * c.head_dim), want(merged.size());
    attention_merge(o, l, 4, n_rows, c.head_dim, merged.data());
    attention_reference(f.args(c, 0, f.n_heads, want.data()));
    for (size_t x = 0; x < merged.size(); ++x) ASSERT_NEAR(merged[x], want[x], 2e-5) << "n_q=" << n_q << " at " << x;
  }
}

TEST_P(attention, sliding_window_matches_reference) {
  // Windows of 1 (the query's own position), shorter than a block, not a
  // multiple of either block size, and longer than the context; decode (1
  // and 6 queries: partial slabs) and prefill (40 queries: a full slab and a
  // partial one on AVX-512).
  uint64_t seed = 700;
  for (int window : {1, 5, 37, 1000}) {
    for (int block_size : {16, 7}) {
      for (int group : {1, 4}) {
        for (int n_q : {1, 6, 40}) {
          for (int pos0 : {0, 100}) {
            const attention_case c{block_size, 2, group, 64, n_q, pos0, 1.0f};
            expect_paged_matches_reference(c, type(), 0, 2 * group, seed++, {window, 0.0f});
          }
        }
      }
    }
  }
}

// Encoders: every query attends all n_keys positions, later ones too; the
// queries may be a tile from the middle of the input (pos0 > 0). With a
// window (ModernBERT's local layers) it is symmetric, each query seeing the
// keys within window / 2 either side of it (window 1: the query alone; even
// and odd windows; one wider than the input), in one pass and in key parts
// of 32 positions (part_keys: the parts path under per-row windows).
TEST_P(attention, bidirectional_matches_reference) {
  if (type() != kv_type::f32) GTEST_SKIP() << "encoders attend over f32 rows";
  uint64_t seed = 900;
  for (int window : {0, 1, 2, 9, 64, 1000}) {
    for (int block_size : {32, 7}) {
      for (int group : {1, 3}) {
        for (int n_q : {1, 6, 40}) {
          for (int pos0 : {0, 33}) {
            const attention_case c{block_size, 2, group, 32, n_q, pos0, 1.0f};
            for (int n_keys : {pos0 + n_q, pos0 + 1}) {
              for (int part_keys : {0, 32}) {
                expect_paged_matches_reference(c, type(), 0, 2 * group, seed++,
                                               {window, 0.0f, n_keys, nullptr, part_keys});
              }
            }
          }
        }
      }
    }
  }
}

// ALiBi (jina-bert-v2's encoder attention): bidirectional and causal, GQA
// groups, slopes steep enough to dominate the scores and nearly flat.
TEST_P(attention, alibi_matches_reference) {
  if (type() != kv_type::f32) GTEST_SKIP() << "ALiBi encoders attend over f32 rows";
  uint64_t seed = 1900;
  for (int group : {1, 3}) {
    std::vector<float> slopes(static_cast<size_t>(2 * group));
    alibi_slopes(2 * group, 8.0f, slopes.data());
    for (int n_q : {1, 6, 40}) {
      for (int pos0 : {0, 33}) {
        const attention_case c{7, 2, group, 16, n_q, pos0, 1.0f};
        for (int n_keys : {pos0 + n_q, 0}) {
          expect_paged_matches_reference(c, type(), 0, 2 * group, seed++, {0, 0.0f, n_keys, slopes.data()});
        }
      }
    }
  }
}

TEST_P(attention, window_reads_no_position_before_every_row) {
  // A long context and a window of 40: K and V of every position before the
  // first query's window are poisoned (all bits set: NaN in every type, also
  // q8_0's scale), so one read of them makes the output NaN. The result must
  // match the reference, so cost follows the window, not the context.
  const int window = 40;
  for (int n_q : {1, 40}) {
    const attention_case c{16, 2, 4, 64, n_q, 3000, 1.0f};
    arena_fixture f(c, type(), 800 + n_q);
    const size_t slot_bytes = f.layout.slot_bytes();
    for (int p = 0; p < c.pos0 - window + 1; ++p) {
      const size_t slot = static_cast<size_t>(f.table[p / c.block_size]) * c.block_size + p % c.block_size;
      std::fill_n(f.k.begin() + slot * slot_bytes, slot_bytes, uint8_t{0xFF});
      std::fill_n(f.v.begin() + slot * slot_bytes, slot_bytes, uint8_t{0xFF});
    }
    std::vector<float> got(f.q.size()), want(f.q.size());
    attention_paged(f.args(c, 0, f.n_heads, got.data(), {window, 0.0f}));
    attention_reference(f.args(c, 0, f.n_heads, want.data(), {window, 0.0f}));
    for (size_t x = 0; x < got.size(); ++x) {
      ASSERT_TRUE(std::isfinite(got[x])) << "n_q=" << n_q << " at " << x;
      ASSERT_NEAR(got[x], want[x], 2e-5) << "n_q=" << n_q << " at " << x;
    }
  }
}

TEST_P(attention, window_covering_the_context_is_no_window) {
  // Every query sees its whole causal prefix: the same result, bit for bit.
  for (int n_q : {1, 6, 40}) {
    const attention_case c{7, 2, 4, 64, n_q, 50, 1.0f};
    arena_fixture f(c, type(), 850 + n_q);
    std::vector<float> plain(f.q.size()), wide(f.q.size());
    attention_paged(f.args(c, 0, f.n_heads, plain.data()));
    attention_paged(f.args(c, 0, f.n_heads, wide.data(), {c.pos0 + n_q, 0.0f}));
    EXPECT_EQ(plain, wide) << "n_q=" << n_q;
  }
}

TEST_P(attention, softcap_matches_reference) {
  // Gemma 2's cap of 50 on peaked scores (|s| up to tens: the cap reshapes
  // the softmax), small caps on ordinary scores, and caps with a window.
  uint64_t seed = 900;
  for (int n_q : {1, 6, 40}) {
    const attention_case peaked{16, 1, 4, 64, n_q, 150, 6.0f};
    const attention_case plain{7, 2, 2, 64, n_q, 60, 1.0f};
    expect_paged_matches_reference(peaked, type(), 0, 4, seed++, {0, 50.0f});
    expect_paged_matches_reference(peaked, type(), 0, 4, seed++, {20, 50.0f});
    expect_paged_matches_reference(plain, type(), 0, 4, seed++, {0, 0.5f});
    expect_paged_matches_reference(plain, type(), 0, 4, seed++, {13, 2.0f});
  }
}

TEST_P(attention, key_range_parts_merge_with_a_window) {
  // The cuts of key_range_parts_merge_to_the_whole under windows: part [0,
  // 37) lies before every row's window (out 0, lse -inf), others are cut
  // inside windows or hold none of a row's positions; merged, they equal
  // windowed attention over all positions. Window 20 also caps scores.
  for (int window : {1, 20, 150}) {
    for (int n_q : {1, 7, 9, 40}) {
      const attention_case c{16, 2, 4, 64, n_q, 200, 1.0f};
      const score_rules rules{window, window == 20 ? 3.0f : 0.0f};
      arena_fixture f(c, type(), 1000 + window + n_q);
      const int n_rows = n_q * f.n_heads;
      const int cuts[] = {0, 37, 150, 203, std::max(207, c.pos0 + n_q)};
      std::vector<std::vector<float>> outs, lses;
      for (int j = 0; j + 1 < 5; ++j) {
        outs.emplace_back(static_cast<size_t>(n_rows) * c.head_dim, 7.0f);
        lses.emplace_back(static_cast<size_t>(n_rows), 7.0f);
        attention_args a = f.args(c, 0, f.n_heads, outs.back().data(), rules);
        a.key_begin = cuts[j];
        a.key_end = cuts[j + 1];
        a.lse = lses.back().data();
        attention_paged(a);
      }
      for (int r = 0; r < n_rows; ++r) ASSERT_EQ(lses[0][static_cast<size_t>(r)], -INFINITY) << "row " << r;
      for (float x : outs[0]) ASSERT_EQ(x, 0.0f);
      const float* o[4] = {outs[0].data(), outs[1].data(), outs[2].data(), outs[3].data()};
      const float* l[4] = {lses[0].data(), lses[1].data(), lses[2].data(), lses[3].data()};
      std::vector<float> merged(static_cast<size_t>(n_rows) * c.head_dim), want(merged.size());
      attention_merge(o, l, 4, n_rows, c.head_dim, merged.data());
      attention_reference(f.args(c, 0, f.n_heads, want.data(), rules));
      for (size_t x = 0; x < merged.size(); ++x) {
        ASSERT_NEAR(merged[x], want[x], 2e-5) << "window=" << window << " n_q=" << n_q << " at " << x;
      }
    }
  }
}

std::vector<isa_and_type> all_params() {
  std::vector<isa_and_type> out;
  for (isa i : runnable_isas()) {
    for (kv_type t : {kv_type::f32, kv_type::f16, kv_type::bf16, kv_type::q8_0}) out.push_back({i, t});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(isas, attention, ::testing::ValuesIn(all_params()), [](const auto& info) {
  return std::string(isa_name(info.param.i)) + "_" + kv_type_name(info.param.t);
});

TEST(attention_reference, single_position_returns_its_value) {
  // One position: softmax weight 1, so the output is exactly v.
  std::vector<float> k(12, 0.5f), v(12, 0.0f);
  const float v0[3] = {1.0f, -2.0f, 3.0f};
  const int32_t table[1] = {0};
  std::copy(v0, v0 + 3, v.begin());  // position 0 = block 0, slot 0
  const float q[3] = {1.0f, 1.0f, 1.0f};
  float out[3], lse = 0.0f;
  attention_args a;
  a.q = q;
  a.k_arena = k.data();
  a.v_arena = v.data();
  a.block_table = table;
  a.layout = kv_layout{4, 1, 3, kv_type::f32};
  a.out = out;
  a.lse = &lse;
  attention_reference(a);
  for (int d = 0; d < 3; ++d) EXPECT_FLOAT_EQ(out[d], v0[d]);
  EXPECT_FLOAT_EQ(lse, 1.5f) << "log(exp(q.k)) = 3 * 0.5";
  attention_paged(a);
  for (int d = 0; d < 3; ++d) EXPECT_FLOAT_EQ(out[d], v0[d]);
  EXPECT_NEAR(lse, 1.5f, 1e-6);
}

TEST(attention_reference, bidirectional_and_alibi_by_hand) {
  // Two positions of head_dim 1, keys 0 and 1, values 2 and 4; the query
  // at position 0 with q = ln 3 (scale 1): causal it sees only position 0,
  // bidirectional the weights are e^0 : e^(ln 3) = 1 : 3, output 3.5. With
  // ALiBi of slope ln 3 the key one position away loses ln 3: weights 1 : 1,
  // output 3 (the reference and the kernel).
  std::vector<float> k = {0.0f, 1.0f}, v = {2.0f, 4.0f};
  const int32_t table[1] = {0};
  const float q[1] = {std::log(3.0f)};
  float out[1];
  attention_args a;
  a.q = q;
  a.k_arena = k.data();
  a.v_arena = v.data();
  a.block_table = table;
  a.layout = kv_layout{2, 1, 1, kv_type::f32};
  a.out = out;
  attention_reference(a);
  EXPECT_FLOAT_EQ(out[0], 2.0f);
  a.n_keys = 2;
  attention_reference(a);
  EXPECT_NEAR(out[0], 3.5f, 1e-6);
  const float slope[1] = {std::log(3.0f)};
  a.alibi_slopes = slope;
  attention_reference(a);
  EXPECT_NEAR(out[0], 3.0f, 1e-6);
  out[0] = 0.0f;
  attention_paged(a);
  EXPECT_NEAR(out[0], 3.0f, 1e-6);
}

TEST(attention_reference, symmetric_window_by_hand) {
  // Five positions of head_dim 1, values 1, 2, 4, 8, 16, and q = 0: every
  // attended key weighs the same, so the output is the mean of the values
  // the window lets through. Bidirectional over all five, the query at
  // position p sees |p - p'| <= window / 2: window 1 the query alone, 2 and
  // 3 one position either side, 4 two (cut by the input's ends).
  std::vector<float> k(5, 0.0f), v = {1.0f, 2.0f, 4.0f, 8.0f, 16.0f};
  const int32_t table[1] = {0};
  const float q[1] = {0.0f};
  struct expect_row { int pos, window; float mean; };
  for (const expect_row& e : {expect_row{2, 1, 4.0f}, expect_row{2, 2, 14.0f / 3}, expect_row{2, 3, 14.0f / 3},
                              expect_row{2, 4, 31.0f / 5}, expect_row{0, 2, 1.5f}, expect_row{4, 3, 12.0f},
                              expect_row{0, 4, 7.0f / 3}, expect_row{1, 0, 31.0f / 5}}) {
    float out[1] = {0.0f};
    attention_args a;
    a.q = q;
    a.pos0 = e.pos;
    a.k_arena = k.data();
    a.v_arena = v.data();
    a.block_table = table;
    a.layout = kv_layout{5, 1, 1, kv_type::f32};
    a.out = out;
    a.n_keys = 5;
    a.window = e.window;
    attention_reference(a);
    EXPECT_NEAR(out[0], e.mean, 1e-6) << "reference, pos " << e.pos << " window " << e.window;
    out[0] = 0.0f;
    attention_paged(a);
    EXPECT_NEAR(out[0], e.mean, 1e-6) << "paged, pos " << e.pos << " window " << e.window;
  }
}

TEST(attention_alibi, slopes_are_ggmls) {
  // ggml's soft_max with max_bias 8: n2 = 2 for 3 heads, m0 = 2^-4, m1 = 2^-2:
  // heads 0, 1 get m0, m0^2, head 2 gets m1^1; for 4 heads (n2 = 4,
  // m0 = 2^-2) the powers 1..4 of 1/4.
  float s3[3], s4[4];
  alibi_slopes(3, 8.0f, s3);
  EXPECT_FLOAT_EQ(s3[0], 0.0625f);
  EXPECT_FLOAT_EQ(s3[1], 0.00390625f);
  EXPECT_FLOAT_EQ(s3[2], 0.25f);
  alibi_slopes(4, 8.0f, s4);
  EXPECT_FLOAT_EQ(s4[0], 0.25f);
  EXPECT_FLOAT_EQ(s4[1], 0.0625f);
  EXPECT_FLOAT_EQ(s4[2], 0.015625f);
  EXPECT_FLOAT_EQ(s4[3], 0.00390625f);
}

TEST(attention_reference, window_and_softcap_by_hand) {
  // Five positions of head_dim 2 in blocks of 2, table {2, 0, 1}; two
  // queries (positions 3 and 4) of two heads sharing the one KV head. The
  // expected values are computed here from the definition: scores
  // cap * tanh(scale * q.k / cap) over p - window < p' <= p, softmax, the
  // weighted sum of values, and the log of the softmax's sum.
  const int block_size = 2, hd = 2, n_heads = 2, n_q = 2, pos0 = 3;
  const int32_t table[3] = {2, 0, 1};
  std::vector<float> k(3 * block_size * hd, 99.0f), v(k.size(), 99.0f);  // block 1's slot 1 stays unused
  double key[5][2], val[5][2];
  for (int p = 0; p < 5; ++p) {
    key[p][0] = 0.25 * p - 0.5;
    key[p][1] = 1.0 - 0.5 * p;
    val[p][0] = p;
    val[p][1] = 10 - 2 * p;
    const int slot = table[p / block_size] * block_size + p % block_size;
    for (int d = 0; d < hd; ++d) {
      k[static_cast<size_t>(slot * hd + d)] = static_cast<float>(key[p][d]);
      v[static_cast<size_t>(slot * hd + d)] = static_cast<float>(val[p][d]);
    }
  }
  const float q[n_q * n_heads * hd] = {1.0f, 2.0f, -3.0f, 0.5f, 4.0f, -1.0f, 0.0f, 1.5f};
  for (int window : {1, 2, 3}) {
    for (float cap : {0.0f, 1.5f}) {
      float out[n_q * n_heads * hd], lse[n_q * n_heads];
      attention_args a;
      a.q = q;
      a.n_q = n_q;
      a.pos0 = pos0;
      a.n_heads = n_heads;
      a.head_end = n_heads;
      a.k_arena = k.data();
      a.v_arena = v.data();
      a.block_table = table;
      a.layout = kv_layout{block_size, 1, hd, kv_type::f32};
      a.scale = 0.5f;
      a.out = out;
      a.lse = lse;
      a.window = window;
      a.softcap = cap;
      attention_reference(a);
      for (int i = 0; i < n_q; ++i) {
        for (int h = 0; h < n_heads; ++h) {
          const float* qh = q + (i * n_heads + h) * hd;
          double sum = 0.0, o[2] = {0.0, 0.0};
          for (int p = pos0 + i - window + 1; p <= pos0 + i; ++p) {
            double s = 0.5 * (qh[0] * key[p][0] + qh[1] * key[p][1]);
            if (cap > 0.0f) s = cap * std::tanh(s / cap);
            const double w = std::exp(s);
            sum += w;
            for (int d = 0; d < hd; ++d) o[d] += w * val[p][d];
          }
          const int row = i * n_heads + h;
          for (int d = 0; d < hd; ++d) {
            EXPECT_NEAR(out[row * hd + d], o[d] / sum, 1e-5) << "window=" << window << " cap=" << cap << " row=" << row;
          }
          EXPECT_NEAR(lse[row], std::log(sum), 1e-6) << "window=" << window << " cap=" << cap << " row=" << row;
        }
      }
    }
  }
}

TEST(attention_merge, weights_parts_by_their_sums) {
  // Part 0 holds one key of score log 1, part 1 one of score log 3: the
  // whole weighs them 1:3.
  const float o0[2] = {1.0f, 0.0f}, o1[2] = {0.0f, 2.0f};
  const float l0 = 0.0f, l1 = std::log(3.0f), l2 = -INFINITY;
  const float o2[2] = {100.0f, 100.0f};  // a part with no keys: ignored
  const float* outs[3] = {o0, o1, o2};
  const float* lses[3] = {&l0, &l1, &l2};
  float out[2];
  attention_merge(outs, lses, 3, 1, 2, out);
  EXPECT_FLOAT_EQ(out[0], 0.25f);
  EXPECT_FLOAT_EQ(out[1], 1.5f);
}

}  // namespace
}  // namespace cortex::kernels
