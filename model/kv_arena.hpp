// The K/V memory of every sequence: one arena allocated at start, divided
// into fixed-size blocks of tokens. Which blocks belong to which sequence is
// decided elsewhere (the KV-cache manager); the forward pass reads and writes
// blocks in place through each sequence's block table.
//
// A block holds the layers of one K/V group (model/kv_groups.hpp) for
// block_size positions: the arena has one slot per layer of a group, and
// layer l reads and writes slot slot_of[l] of the blocks in its group's
// table. Built without a layout, the arena has one group of every layer
// (layer l in slot l), and one table serves all layers.
//
// Layers may differ in KV heads and head_dim (Gemma 4): each layer has its
// own kv_layout, and a slot is as large as the largest layer that lives in
// it (in any group); a layer that shares an earlier layer's K/V
// (layer_attention::kv_source) has no slot and reads its source's.
//
// Elements are stored as the arena's kv_type (kernels/kv_type.hpp): f32,
// f16 (llama.cpp's default cache type), bf16 or q8_0 blocks along head_dim.
// Writes convert from f32 (store_token); attention reads the stored type
// directly (kernels/attention.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/attention.hpp"
#include "kernels/kv_type.hpp"
#include "base/expected.hpp"
#include "model/kv_groups.hpp"
#include "model/model.hpp"

namespace cortex {

class kv_arena {
 public:
  // REQUIRES: n_blocks > 0, block_size > 0, kv_type_fits(hp, type).
  kv_arena(const model_hparams& hp, int n_blocks, int block_size, kernels::kv_type type);
  // With groups: n_blocks blocks of groups.layers_per_group slots each.
  // REQUIRES: the above, and groups is kv_group_layout::...(hp).
  kv_arena(const model_hparams& hp, const kv_group_layout& groups, int n_blocks, int block_size, kernels::kv_type type);

  int n_blocks() const { return n_blocks_; }
  int block_size() const { return block_size_; }
  kernels::kv_type type() const { return type_; }
  // The layout attention reads for layer l (block size, its KV heads and
  // head_dim, type).
  const kernels::kv_layout& layout(int layer) const { return layouts_[static_cast<size_t>(layer)]; }
  const kv_group_layout& groups() const { return groups_; }
  // The group whose block table layer l reads (0 without groups).
  int group_of(int layer) const { return groups_.group_of[static_cast<size_t>(layer)]; }
  // Layer l's keys: (n_blocks, block_size, its n_head_kv, row_bytes(its head_dim))
  // bytes, of which layer l uses the blocks of its group.
  uint8_t* k(int layer) { return data_.get() + k_offset(layer); }
  uint8_t* v(int layer) { return data_.get() + v_offset(layer); }
  const uint8_t* k(int layer) const { return data_.get() + k_offset(layer); }
  const uint8_t* v(int layer) const { return data_.get() + v_offset(layer); }
  // Converts one token's K and V rows (n_head_kv * head_dim floats each, the
  // layer's) to the arena's type and writes them at slot (block * block_size
  // + offset) of layer l. REQUIRES: slot < n_blocks * block_size, l has K/V
  // of its own.
  void store_token(int layer, size_t slot, const float* k_row, const float* v_row);
  size_t bytes() const { return total_bytes_; }
  // Bytes one token occupies across all layers that hold K/V (K and V) with
  // element type t.
  static size_t bytes_per_token(const model_hparams& hp, kernels::kv_type t);
  // Bytes one block holds: a group's slots (K and V, each as large as the
  // largest layer in that slot) for block_size tokens.
  static size_t bytes_per_block(const model_hparams& hp, const kv_group_layout& groups, kernels::kv_type t,
                                int block_size);
  // One token of layer l, K or V, with element type t.
  static size_t layer_token_bytes(const model_hparams& hp, int layer, kernels::kv_type t);

 private:
  struct free_deleter { void operator()(uint8_t* p) const; };
  size_t k_offset(int layer) const { return slot_offset_[static_cast<size_t>(groups_.slot_of[static_cast<size_t>(layer)])]; }
  size_t v_offset(int layer) const {
    const size_t s = static_cast<size_t>(groups_.slot_of[static_cast<size_t>(layer)]);
    return slot_offset_[s] + (slot_offset_[s + 1] - slot_offset_[s]) / 2;
  }
  kv_group_layout groups_;
  int n_blocks_;
  int block_size_;
  kernels::kv_type type_;
  std::vector<kernels::kv_layout> layouts_;  // (n_layer,) each layer's
  std::vector<size_t> slot_offset_;          // (layers_per_group + 1,) where each slot's K starts; its V at the middle
  size_t total_bytes_ = 0;
  std::unique_ptr<uint8_t, free_deleter> data_;
};

// Whether heads of this model (every layer's head_dim) can be stored as t
// (q8_0 needs head_dim a multiple of 32); the error names the option and
// what to choose instead.
status kv_type_fits(const model_hparams& hp, kernels::kv_type t);

}  // namespace cortex
