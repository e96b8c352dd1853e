// kv_group_layout: how layers are grouped by memory kind (full attention,
// each window size) into groups of one size that share the pool, what a
// pool of a given memory holds, and how long a sequence it fits alone.
#include <gtest/gtest.h>

#include <set>

#include "model/kv_arena.hpp"
#include "model/kv_groups.hpp"

namespace cortex {
namespace {

// n_layer layers; layer il is windowed when windowed(il).
template <class F>
model_hparams layers(int n_layer, int window, F windowed) {
  model_hparams hp;
  hp.n_layer = n_layer;
  hp.attn.resize(static_cast<size_t>(n_layer));
  for (int il = 0; il < n_layer; ++il) hp.attn[static_cast<size_t>(il)].window = windowed(il) ? window : 0;
  return hp;
}

// Every layer in exactly one group, at a slot of its own there; groups of
// one kind; no group larger than the group size.
void expect_partition(const kv_group_layout& g) {
  std::set<std::pair<int, int>> seen;  // (group, slot)
  for (int l = 0; l < g.n_layer; ++l) {
    const int gi = g.group_of[static_cast<size_t>(l)];
    const int slot = g.slot_of[static_cast<size_t>(l)];
    ASSERT_GE(gi, 0);
    ASSERT_LT(gi, g.n_groups());
    ASSERT_GE(slot, 0);
    ASSERT_LT(slot, g.layers_per_group);
    EXPECT_TRUE(seen.insert({gi, slot}).second) << "layer " << l;
    EXPECT_EQ(g.groups[static_cast<size_t>(gi)].layers[static_cast<size_t>(slot)], l);
  }
  for (const auto& grp : g.groups) EXPECT_LE(static_cast<int>(grp.layers.size()), g.layers_per_group);
}

TEST(kv_groups, a_model_without_windows_is_one_group_in_layer_order) {
  const kv_group_layout g = kv_group_layout::by_window(layers(22, 0, [](int) { return false; }));
  ASSERT_EQ(g.n_groups(), 1);
  EXPECT_EQ(g.layers_per_group, 22);
  EXPECT_EQ(g.groups[0].window, 0);
  for (int l = 0; l < 22; ++l) EXPECT_EQ(g.slot_of[static_cast<size_t>(l)], l);
  EXPECT_EQ(g.n_blocks_for_memory_of(1000), 1000);
  EXPECT_EQ(g.max_context(1000, 16), 16000);  // the pool's blocks, as before groups
  EXPECT_EQ(g.n_padding_slots(), 0);
  expect_partition(g);
}

TEST(kv_groups, gemma3_4b_five_global_layers_group_the_29_local_ones_by_five) {
  // Gemma 3 4B: 34 layers, layer il global when il % 6 == 5, window 1024.
  const kv_group_layout g = kv_group_layout::by_window(layers(34, 1024, [](int il) { return il % 6 != 5; }));
  EXPECT_EQ(g.layers_per_group, 5);
  ASSERT_EQ(g.n_groups(), 7);  // one global group, six local ones (the last of 4 layers)
  EXPECT_EQ(g.groups[0].window, 0);
  EXPECT_EQ(g.groups[0].layers, (std::vector<int>{5, 11, 17, 23, 29}));
  for (int i = 1; i < 7; ++i) EXPECT_EQ(g.groups[static_cast<size_t>(i)].window, 1024);
  EXPECT_EQ(g.groups[6].layers.size(), 4u);
  EXPECT_EQ(g.n_padding_slots(), 1);
  EXPECT_EQ(g.n_blocks_for_memory_of(100), 680);  // 100 * 34 / 5: the same memory
  expect_partition(g);
}

TEST(kv_groups, six_layers_of_gemma3_are_six_groups_of_one) {
  const model_hparams hp = layers(6, 1024, [](int il) { return il % 6 != 5; });
  const kv_group_layout g = kv_group_layout::by_window(hp);
  EXPECT_EQ(g.layers_per_group, 1);
  ASSERT_EQ(g.n_groups(), 6);
  EXPECT_EQ(g.windows(), (std::vector<int32_t>{0, 1024, 1024, 1024, 1024, 1024}));
  EXPECT_EQ(g.groups[0].layers, std::vector<int>{5});
  expect_partition(g);
  // The memory of an 8192-token cache of all six layers (512 blocks): a lone
  // sequence reaches 5.4x as far: 2747 rows of the global layer beside 65
  // blocks of each local one.
  const int n_blocks = g.n_blocks_for_memory_of(512);
  EXPECT_EQ(n_blocks, 3072);
  EXPECT_EQ(g.max_context(n_blocks, 16), (3072 - 5 * 65) * 16);
  EXPECT_EQ(kv_group_layout::single(hp).max_context(512, 16), 8192);
  // single() ignores the windows: one group, nothing released.
  EXPECT_EQ(kv_group_layout::single(hp).windows(), std::vector<int32_t>{0});
}

TEST(kv_groups, gemma2_alternating_layers_are_two_groups) {
  const kv_group_layout g = kv_group_layout::by_window(layers(26, 4096, [](int il) { return il % 2 == 0; }));
  EXPECT_EQ(g.layers_per_group, 13);
  ASSERT_EQ(g.n_groups(), 2);
  EXPECT_EQ(g.windows(), (std::vector<int32_t>{0, 4096}));
  EXPECT_EQ(g.n_blocks_for_memory_of(10), 20);
  expect_partition(g);
}

TEST(kv_groups, kinds_of_nearly_equal_size_share_the_larger_size) {
  // 13 full, 12 windowed: groups of 13 (one padding slot), not 12 (12 padding slots).
  const kv_group_layout g = kv_group_layout::by_window(layers(25, 128, [](int il) { return il >= 13; }));
  EXPECT_EQ(g.layers_per_group, 13);
  EXPECT_EQ(g.n_groups(), 2);
  EXPECT_EQ(g.n_padding_slots(), 1);
  expect_partition(g);
}

TEST(kv_groups, a_model_windowed_everywhere_is_one_group_that_never_grows) {
  const kv_group_layout g = kv_group_layout::by_window(layers(8, 256, [](int) { return true; }));
  ASSERT_EQ(g.n_groups(), 1);
  EXPECT_EQ(g.groups[0].window, 256);
  EXPECT_EQ(g.layers_per_group, 8);
  EXPECT_GT(g.max_context(18, 16), 1 << 28);  // 17 blocks of a window of 256 fit: any length
  EXPECT_EQ(g.max_context(16, 16), 16 * 16);   // one short: only what the pool holds outright
}

}  // namespace
}  // namespace cortex

namespace cortex {
namespace {

// Gemma 4's shape (golden/arch/gemma4-f32): sliding layers 0, 2, 4, 5 with 2
// KV heads of 32, full layers 1, 3, 6 with 1 of 64; layers 4-6 read the K/V
// of layers 2 (sliding) and 3 (full). Only the four layers with K/V of
// their own take slots; the others read their source's.
model_hparams gemma4_like(int hd_full) {
  model_hparams hp = layers(7, 12, [](int il) { return il == 0 || il == 2 || il == 4 || il == 5; });
  hp.n_head = 4;
  hp.head_dim = hd_full;
  hp.n_head_kv = 1;
  for (int il = 0; il < 7; ++il) {
    layer_attention& a = hp.attn[static_cast<size_t>(il)];
    if (a.window > 0) {
      a.head_dim = 32;
      a.n_head_kv = 2;
    }
  }
  hp.attn[4].kv_source = 2;
  hp.attn[5].kv_source = 2;
  hp.attn[6].kv_source = 3;
  return hp;
}

TEST(kv_groups, layers_that_share_kv_take_no_slot_and_read_their_sources) {
  const model_hparams hp = gemma4_like(64);
  for (const kv_group_layout& g : {kv_group_layout::by_window(hp), kv_group_layout::single(hp)}) {
    EXPECT_EQ(g.n_layer, 4);
    expect_partition(g);
    EXPECT_EQ(g.n_padding_slots(), 0);
    for (int il = 4; il < 7; ++il) {
      const int src = hp.attn[static_cast<size_t>(il)].kv_source;
      EXPECT_EQ(g.group_of[static_cast<size_t>(il)], g.group_of[static_cast<size_t>(src)]) << il;
      EXPECT_EQ(g.slot_of[static_cast<size_t>(il)], g.slot_of[static_cast<size_t>(src)]) << il;
    }
  }
  const kv_group_layout g = kv_group_layout::by_window(hp);
  EXPECT_EQ(g.windows(), (std::vector<int32_t>{0, 12}));
  EXPECT_EQ(g.layer_counts(), (std::vector<int32_t>{2, 2}));
  EXPECT_EQ(g.n_blocks_for_memory_of(10), 20);
}

// Layers of different sizes: bytes per token count each layer that holds
// K/V at its own size; a block's slot is as large as the largest layer in it.
TEST(kv_groups, per_layer_sizes_count_each_layer_once_at_its_own_size) {
  const model_hparams hp = gemma4_like(128);  // full layers 1 x 128, sliding 2 x 32
  EXPECT_EQ(kv_arena::bytes_per_token(hp, kernels::kv_type::f32), 2u * 4 * (2 * 128 + 2 * 64));
  const kv_group_layout g = kv_group_layout::by_window(hp);
  EXPECT_EQ(kv_arena::bytes_per_block(hp, g, kernels::kv_type::f32, 16), 2u * 4 * 16 * (128 + 128));
  kv_arena arena(hp, g, 4, 16, kernels::kv_type::f32);
  EXPECT_EQ(arena.bytes(), 4 * kv_arena::bytes_per_block(hp, g, kernels::kv_type::f32, 16));
  EXPECT_EQ(arena.layout(0).head_dim, 32);
  EXPECT_EQ(arena.layout(0).n_kv_heads, 2);
  EXPECT_EQ(arena.layout(3).head_dim, 128);
  EXPECT_EQ(arena.k(6), arena.k(3));  // a sharing layer reads its source's memory
  EXPECT_EQ(arena.v(5), arena.v(2));
  // Layers 0 and 1 share slot 0 in their groups, 2 and 3 slot 1: different memory.
  EXPECT_NE(arena.k(0), arena.k(2));
  EXPECT_EQ(arena.k(0), arena.k(1));
}

}  // namespace
}  // namespace cortex
