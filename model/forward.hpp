// The forward pass over a ragged batch: several sequences, each adding
// n_tokens tokens (a prefill chunk or one decode token) at consecutive
// positions, reading earlier K/V from the arena and writing its own. It
// looks up the embeddings, runs each layer as the model's architecture file
// writes it (model/arch/, on the shared blocks of model/blocks.hpp), and
// computes the logits.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/thread_pool.hpp"
#include "model/blocks.hpp"
#include "model/kv_arena.hpp"
#include "model/model.hpp"

namespace cortex {

class forward_pass {
 public:
  // `pool` is the compute pool; the pass never allocates once its buffers
  // have grown to the largest step seen. Where the CPU has packed kernels
  // (kernels/matmul_packed.hpp), the constructor repacks the matrices whose
  // type has a packed layout (q4_0, q8_0, q4_K, q6_K: their rows in
  // kernels/quant_traits.cpp) into a copy the pass owns (about the size of
  // those weights); the model's mapping stays the source of truth, but the
  // pages of the repacked weights are released from the resident set
  // (gguf::file::release_pages), so memory is about the file's size, not twice.
  // n_ctx_seq: the context one sequence may reach (blocks' LongRoPE choice);
  // 0: the model's training context.
  forward_pass(const model& m, kernels::thread_pool& pool, int n_ctx_seq = 0);

  // Runs one step. Returns the number of logits rows written: for each
  // sequence in order, its last token's row (logits_mode::last) or one row
  // per token (all). Adds into each non-null hidden_sum. An encoder
  // (hp.encoder.enabled) writes each sequence's pooled output into its
  // batch_seq::embd instead and returns 0; it throws std::invalid_argument
  // for a sequence that is not whole in the step or has no embd, and for
  // rank pooling on a model without a classifier head. REQUIRES: every block table covers its positions and
  // tokens are < n_vocab (callers validate outside input first).
  int run(const std::vector<batch_seq>& batch, kv_arena& kv);

  // Row r of the last run's logits, (n_vocab,).
  const float* logits(int row) const { return logits_.data() + static_cast<size_t>(row) * n_vocab_; }
  float* logits_mut(int row) { return logits_.data() + static_cast<size_t>(row) * n_vocab_; }

 private:
  void ensure_rows(int n_rows);
  // Adds the output-normed rows of s's tokens (first: its first token in the step) into s.hidden_sum.
  void add_hidden_rows(const batch_seq& s, int first);
  // An encoder's sequence s (first: its first token in the step): its
  // pooling of the final rows into s.embd (batch_seq::embd).
  void pool_encoder_rows(const batch_seq& s, int first);

  const model& m_;
  blocks blocks_;
  linear_group output_;
  linear_group cls_, cls_out_;  // a reranker's classifier head (rank pooling)
  std::vector<float> head_, head_out_;  // (n_embd,) the classifier's input and hidden row
  int n_vocab_;
  int capacity_rows_ = 0;
  std::vector<float> sel_;    // (rows, n_embd) normed rows that need logits
  std::vector<float> normed_; // (n_embd,) one normed row for a hidden_sum
  std::vector<float> logits_; // (rows, n_vocab)
};

}  // namespace cortex
