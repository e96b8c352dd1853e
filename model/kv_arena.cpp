#include "model/kv_arena.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

namespace cortex {

void kv_arena::free_deleter::operator()(float* p) const { std::free(p); }

kv_arena::kv_arena(const model_hparams& hp, int n_blocks, int block_size)
    : n_layer_(hp.n_layer), n_blocks_(n_blocks), block_size_(block_size), token_floats_(hp.n_embd_kv()) {
  layer_floats_ = static_cast<size_t>(n_blocks) * block_size * token_floats_;
  const size_t bytes = static_cast<size_t>(n_layer_) * 2 * layer_floats_ * sizeof(float);
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) throw std::bad_alloc();
  // No memset: a large allocation comes from fresh zero pages, faulted in as
  // blocks are first written (zeroing a GiB arena up front costs ~0.3 s of
  // the first request's latency), and attention never reads a position
  // before it is written.
  data_.reset(static_cast<float*>(p));
}

}  // namespace cortex
