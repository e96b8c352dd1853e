#include "model/kv_arena.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

namespace cortex {

void kv_arena::free_deleter::operator()(uint8_t* p) const { std::free(p); }

kv_arena::kv_arena(const model_hparams& hp, int n_blocks, int block_size, kernels::kv_type type)
    : kv_arena(hp, kv_group_layout::single(hp), n_blocks, block_size, type) {}

kv_arena::kv_arena(const model_hparams& hp, const kv_group_layout& groups, int n_blocks, int block_size,
                   kernels::kv_type type)
    : groups_(groups), n_blocks_(n_blocks), block_size_(block_size), type_(type) {
  for (int l = 0; l < hp.n_layer; ++l) layouts_.push_back({block_size, hp.n_head_kv_of(l), hp.head_dim_of(l), type});
  const size_t positions = static_cast<size_t>(n_blocks) * block_size;
  slot_offset_.push_back(0);
  for (int s = 0; s < groups_.layers_per_group; ++s) {
    size_t slot_bytes = 0;  // the largest layer in this slot, over the groups
    for (const kv_group& g : groups_.groups) {
      if (static_cast<size_t>(s) < g.layers.size()) {
        slot_bytes = std::max(slot_bytes, layouts_[static_cast<size_t>(g.layers[static_cast<size_t>(s)])].slot_bytes());
      }
    }
    slot_offset_.push_back(slot_offset_.back() + 2 * positions * slot_bytes);
  }
  total_bytes_ = slot_offset_.back();
  const size_t rounded = (std::max<size_t>(total_bytes_, 1) + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) throw std::bad_alloc();
  // No memset: a large allocation comes from fresh zero pages, faulted in as
  // blocks are first written (zeroing a GiB arena up front costs ~0.3 s of
  // the first request's latency), and attention never reads a position
  // before it is written.
  data_.reset(static_cast<uint8_t*>(p));
}

void kv_arena::store_token(int layer, size_t slot, const float* k_row, const float* v_row) {
  const kernels::kv_layout& lay = layout(layer);
  const auto& tr = kernels::kv_traits(type_);
  const size_t slot_bytes = lay.slot_bytes();
  uint8_t* k_dst = k(layer) + slot * slot_bytes;
  uint8_t* v_dst = v(layer) + slot * slot_bytes;
  if (type_ == kernels::kv_type::f32) {
    std::memcpy(k_dst, k_row, slot_bytes);
    std::memcpy(v_dst, v_row, slot_bytes);
    return;
  }
  // Row by row: q8_0 blocks run along one head's head_dim.
  const size_t row_bytes = lay.row_bytes();
  const int hd = lay.head_dim;
  for (int h = 0; h < lay.n_kv_heads; ++h) {
    tr.store_row(k_row + static_cast<size_t>(h) * hd, k_dst + h * row_bytes, hd);
    tr.store_row(v_row + static_cast<size_t>(h) * hd, v_dst + h * row_bytes, hd);
  }
}

size_t kv_arena::layer_token_bytes(const model_hparams& hp, int layer, kernels::kv_type t) {
  return kernels::kv_layout{1, hp.n_head_kv_of(layer), hp.head_dim_of(layer), t}.slot_bytes();
}

size_t kv_arena::bytes_per_token(const model_hparams& hp, kernels::kv_type t) {
  size_t n = 0;
  for (int l = 0; l < hp.n_layer; ++l) {
    if (hp.holds_kv(l)) n += 2 * layer_token_bytes(hp, l, t);
  }
  return n;
}

size_t kv_arena::bytes_per_block(const model_hparams& hp, const kv_group_layout& groups, kernels::kv_type t,
                                 int block_size) {
  size_t n = 0;
  for (int s = 0; s < groups.layers_per_group; ++s) {
    size_t slot_bytes = 0;
    for (const kv_group& g : groups.groups) {
      if (static_cast<size_t>(s) < g.layers.size()) {
        slot_bytes = std::max(slot_bytes, layer_token_bytes(hp, g.layers[static_cast<size_t>(s)], t));
      }
    }
    n += 2 * slot_bytes;
  }
  return n * static_cast<size_t>(block_size);
}

status kv_type_fits(const model_hparams& hp, kernels::kv_type t) {
  const auto& tr = kernels::kv_traits(t);
  for (int l = 0; l < std::max(hp.n_layer, 1); ++l) {
    const int hd = hp.head_dim_of(l);
    if (tr.fits_head_dim(hd)) continue;
    return fail(errc::invalid_param, std::string("option kv-type ") + tr.name + " stores blocks of " +
                                         std::to_string(tr.block_elems) + " values along a head, but this model's head_dim is " +
                                         std::to_string(hd) + ": use f32, f16 or bf16");
  }
  return status::ok();
}

}  // namespace cortex
