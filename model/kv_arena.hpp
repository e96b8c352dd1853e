// The K/V memory of every sequence: one arena allocated at start, divided
// into fixed-size blocks of tokens. Which blocks belong to which sequence is
// decided elsewhere (the KV-cache manager); the forward pass reads and writes
// blocks in place through each sequence's block table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "model/model.hpp"

namespace cortex {

class kv_arena {
 public:
  // REQUIRES: n_blocks > 0, block_size > 0.
  kv_arena(const model_hparams& hp, int n_blocks, int block_size);

  int n_blocks() const { return n_blocks_; }
  int block_size() const { return block_size_; }
  // Layer l's keys: (n_blocks, block_size, n_head_kv, head_dim) f32.
  float* k(int layer) { return data_.get() + static_cast<size_t>(layer) * 2 * layer_floats_; }
  float* v(int layer) { return k(layer) + layer_floats_; }
  const float* k(int layer) const { return data_.get() + static_cast<size_t>(layer) * 2 * layer_floats_; }
  const float* v(int layer) const { return k(layer) + layer_floats_; }
  // Floats per token per layer per K or V (n_head_kv * head_dim).
  int token_stride() const { return token_floats_; }
  size_t bytes() const { return static_cast<size_t>(n_layer_) * 2 * layer_floats_ * sizeof(float); }
  // Bytes one token occupies across all layers (K and V).
  static size_t bytes_per_token(const model_hparams& hp) {
    return static_cast<size_t>(hp.n_layer) * 2 * hp.n_embd_kv() * sizeof(float);
  }

 private:
  struct free_deleter { void operator()(float* p) const; };
  int n_layer_;
  int n_blocks_;
  int block_size_;
  int token_floats_;
  size_t layer_floats_;
  std::unique_ptr<float, free_deleter> data_;
};

}  // namespace cortex
