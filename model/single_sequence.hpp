// One sequence run directly on a forward pass, with its own contiguous
// block table: what the command-line tools and golden tests need when there
// is no scheduler. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/forward.hpp"

namespace cortex {

class single_sequence {
 public:
  // Capacity: n_ctx tokens, in blocks of block_size, K/V stored as kv
  // (golden comparisons use f32: the references were made with an F32 cache).
  // REQUIRES: kv_type_fits(m.hparams(), kv).
  single_sequence(const model& m, kernels::thread_pool& pool, int n_ctx, kernels::kv_type kv, int block_size = 16);

  int n_ctx() const { return n_ctx_; }
  int n_past() const { return n_past_; }
  // Forgets all tokens (the K/V memory is reused).
  void reset() { n_past_ = 0; }

  // Appends tokens in chunks of at most `chunk` and returns the number of
  // logits rows (`mode` all: one per token; last: one). A non-null
  // `hidden_sum` ((n_embd,), borrowed) gets every fed token's final normed
  // hidden row added (batch_seq::hidden_sum). REQUIRES: n_past() +
  // tokens.size() <= n_ctx().
  int feed(const std::vector<int32_t>& tokens, logits_mode mode, int chunk = 512, float* hidden_sum = nullptr);
  // Row r of the logits of the last feed() (for mode all, rows accumulate
  // across chunks of that call).
  const float* logits(int row) const;

 private:
  const model& m_;
  forward_pass fwd_;
  kv_arena kv_;
  std::vector<int32_t> table_;
  std::vector<float> state_;  // the recurrent state (hp.state_floats()), if the model has one
  int n_ctx_;
  int n_past_ = 0;
  std::vector<float> rows_;  // (rows, n_vocab) of the last feed
  std::vector<batch_seq> batch_;  // one entry, reused (no allocation per step)
};

}  // namespace cortex
