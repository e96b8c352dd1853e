// How a model's layers share the K/V memory (design.md, "Memory kinds").
//
// Layers are sorted by memory kind: full attention (window 0) and each
// sliding-window size. Each kind is split into groups of the same number of
// layers (layers_per_group), so that one pool of equal-sized blocks serves
// every group, as vLLM's hybrid KV cache does: a block belongs to one group
// at a time and holds that group's layers for block_size positions, and each
// group has its own block table per sequence. A windowed group can then give
// back the blocks its window has left behind while the full-attention group
// keeps growing, out of the same pool. (One pool per kind would have to be
// split in advance: short conversations would then get less room than today.)
//
// The arena (model/kv_arena.hpp) has layers_per_group slots; layer l lives in
// slot slot_of[l] of the blocks of group group_of[l]. A model without windows
// has one group of all its layers, layer l in slot l: the layout before groups.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/attention.hpp"
#include "model/hparams.hpp"

namespace cortex {

using kernels::kv_block_released;  // kernels/attention.hpp: a released block's table entry

struct kv_group {
  int window = 0;           // 0: full attention; else keys p' with p - p' < window
  std::vector<int> layers;  // (<= layers_per_group,) in model order; fewer: the last slots are padding
};

// Layers that read an earlier layer's K/V (layer_attention::kv_source) hold
// no slot: their group_of / slot_of are their source's.
struct kv_group_layout {
  int n_layer = 0;              // layers with K/V of their own
  int layers_per_group = 0;     // slots per block
  std::vector<kv_group> groups; // full-attention groups first, then windowed ones by first layer
  std::vector<int> group_of;    // (hp.n_layer,) the group of each layer
  std::vector<int> slot_of;     // (hp.n_layer,) its slot in that group's blocks

  // Every layer in one group, whatever its window: nothing is ever released
  // (the layout the arena had before groups; tools and golden tests).
  static kv_group_layout single(const model_hparams& hp);
  // By memory kind (hp.attn[l].window). The group size is the smallest
  // kind's layer count, or the largest's when that is under 1.5 times it
  // (fewer padding slots). A model with one kind gets single(hp), with that
  // kind's window.
  static kv_group_layout by_window(const model_hparams& hp);

  int n_groups() const { return static_cast<int>(groups.size()); }
  // Slots that hold no layer, over all groups (memory a block of such a group does not use).
  int n_padding_slots() const { return n_groups() * layers_per_group - n_layer; }
  std::vector<int32_t> windows() const;
  // Points every KV-sharing layer at its source's group and slot.
  void share_sources(const model_hparams& hp);
  std::vector<int32_t> layer_counts() const;

  // Pool blocks with the memory of n_blocks blocks of the whole model
  // (n_blocks * block_size positions of every layer).
  int n_blocks_for_memory_of(int n_blocks) const;
  // The longest sequence (a multiple of block_size) the pool holds by
  // itself, one token a step at worst: full-attention groups hold all its
  // positions, windowed groups at most ceil(window / block_size) + 1 blocks
  // each. INT32_MAX / 2 when no group grows with the sequence.
  int max_context(int n_blocks, int block_size) const;
};

}  // namespace cortex
