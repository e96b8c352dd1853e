#include "model/kv_arena.hpp"

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
    : groups_(groups), n_blocks_(n_blocks), block_size_(block_size), layout_{block_size, hp.n_head_kv, hp.head_dim, type} {
  slot_bytes_ = layout_.slot_bytes();
  layer_bytes_ = static_cast<size_t>(n_blocks) * block_size * slot_bytes_;
  const size_t rounded = (bytes() + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) throw std::bad_alloc();
  // No memset: a large allocation comes from fresh zero pages, faulted in as
  // blocks are first written (zeroing a GiB arena up front costs ~0.3 s of
  // the first request's latency), and attention never reads a position
  // before it is written.
  data_.reset(static_cast<uint8_t*>(p));
}

void kv_arena::store_token(int layer, size_t slot, const float* k_row, const float* v_row) {
  const auto& tr = kernels::kv_traits(layout_.type);
  uint8_t* k_dst = k(layer) + slot * slot_bytes_;
  uint8_t* v_dst = v(layer) + slot * slot_bytes_;
  if (layout_.type == kernels::kv_type::f32) {
    std::memcpy(k_dst, k_row, slot_bytes_);
    std::memcpy(v_dst, v_row, slot_bytes_);
    return;
  }
  // Row by row: q8_0 blocks run along one head's head_dim.
  const size_t row_bytes = layout_.row_bytes();
  const int hd = layout_.head_dim;
  for (int h = 0; h < layout_.n_kv_heads; ++h) {
    tr.store_row(k_row + static_cast<size_t>(h) * hd, k_dst + h * row_bytes, hd);
    tr.store_row(v_row + static_cast<size_t>(h) * hd, v_dst + h * row_bytes, hd);
  }
}

size_t kv_arena::bytes_per_token(const model_hparams& hp, kernels::kv_type t) {
  const kernels::kv_layout l{1, hp.n_head_kv, hp.head_dim, t};
  return static_cast<size_t>(hp.n_layer) * 2 * l.slot_bytes();
}

size_t kv_arena::bytes_per_block(const model_hparams& hp, const kv_group_layout& groups, kernels::kv_type t,
                                 int block_size) {
  const kernels::kv_layout l{1, hp.n_head_kv, hp.head_dim, t};
  return static_cast<size_t>(groups.layers_per_group) * 2 * l.slot_bytes() * static_cast<size_t>(block_size);
}

status kv_type_fits(const model_hparams& hp, kernels::kv_type t) {
  const auto& tr = kernels::kv_traits(t);
  if (tr.fits_head_dim(hp.head_dim)) return status::ok();
  return fail(errc::invalid_param, std::string("option kv-type ") + tr.name + " stores blocks of " +
                                       std::to_string(tr.block_elems) + " values along a head, but this model's head_dim is " +
                                       std::to_string(hp.head_dim) + ": use f32, f16 or bf16");
}

}  // namespace cortex
