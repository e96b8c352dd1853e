#include "model/single_sequence.hpp"

#include <algorithm>
#include <cstring>

namespace cortex {

single_sequence::single_sequence(const model& m, kernels::thread_pool& pool, int n_ctx, kernels::kv_type kv, int block_size)
    : m_(m), fwd_(m, pool, n_ctx), kv_(m.hparams(), (n_ctx + block_size - 1) / block_size, block_size, kv), n_ctx_(n_ctx) {
  state_.assign(m.hparams().state_floats(), 0.0f);
  table_.resize(static_cast<size_t>(kv_.n_blocks()));
  for (int b = 0; b < kv_.n_blocks(); ++b) table_[static_cast<size_t>(b)] = b;
}

int single_sequence::feed(const std::vector<int32_t>& tokens, logits_mode mode, int chunk, float* hidden_sum) {
  const size_t n_vocab = static_cast<size_t>(m_.hparams().n_vocab);
  rows_.clear();
  int n_rows = 0;
  for (size_t at = 0; at < tokens.size(); at += static_cast<size_t>(chunk)) {
    const int n = static_cast<int>(std::min(tokens.size() - at, static_cast<size_t>(chunk)));
    const bool last_chunk = at + static_cast<size_t>(n) == tokens.size();
    batch_seq s;
    s.tokens = tokens.data() + at;
    s.n_tokens = n;
    s.pos0 = n_past_;
    s.block_table = table_.data();
    s.n_blocks = static_cast<int32_t>(table_.size());
    s.hidden_sum = hidden_sum;
    s.state = state_.data();
    s.logits = mode == logits_mode::all ? logits_mode::all : (last_chunk && mode == logits_mode::last ? logits_mode::last : logits_mode::none);
    batch_.assign(1, s);
    const int rows = fwd_.run(batch_, kv_);
    rows_.resize((static_cast<size_t>(n_rows) + rows) * n_vocab);
    if (rows > 0) std::memcpy(rows_.data() + n_rows * n_vocab, fwd_.logits(0), sizeof(float) * rows * n_vocab);
    n_rows += rows;
    n_past_ += n;
  }
  return n_rows;
}

const float* single_sequence::logits(int row) const {
  return rows_.data() + static_cast<size_t>(row) * m_.hparams().n_vocab;
}

}  // namespace cortex
