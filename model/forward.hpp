// The forward pass over a ragged batch: several sequences, each adding
// n_tokens tokens (a prefill chunk or one decode token) at consecutive
// positions, reading earlier K/V from the arena and writing its own.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/matmul.hpp"
#include "kernels/matmul_packed.hpp"
#include "kernels/thread_pool.hpp"
#include "model/kv_arena.hpp"
#include "model/model.hpp"

namespace cortex {

enum class logits_mode : uint8_t { none, last, all };

// One sequence's share of a step: the model's borrowed view of the
// executor's step_entry (messages/engine.hpp; same names for tokens, pos0,
// block_table). Pointers are borrowed for the call.
struct batch_seq {
  const int32_t* tokens = nullptr;      // (n_tokens,) ids < n_vocab
  int32_t n_tokens = 0;                 // tokens to compute this step (>= 1)
  int32_t pos0 = 0;                     // position of tokens[0]; K/V of [0, pos0) already in the arena
  const int32_t* block_table = nullptr; // block ids covering positions [0, pos0 + n_tokens)
  int32_t n_blocks = 0;                 // entries in block_table
  logits_mode logits = logits_mode::last;  // rows run() writes; the executor asks for `last` exactly when the entry samples
  // Optional (n_embd,) accumulator, borrowed: when set, run() adds the sum of
  // this step's tokens' final hidden rows (after the output norm, llama.cpp's
  // result_norm) into it, so a caller can mean-pool a sequence whose prompt
  // spans several steps (model/embedding.hpp). Null (the generation path)
  // costs nothing.
  float* hidden_sum = nullptr;
};

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
  forward_pass(const model& m, kernels::thread_pool& pool);

  // Runs one step. Returns the number of logits rows written: for each
  // sequence in order, its last token's row (logits_mode::last) or one row
  // per token (all). Adds into each non-null hidden_sum. REQUIRES: every block table covers its positions and
  // tokens are < n_vocab (callers validate outside input first).
  int run(const std::vector<batch_seq>& batch, kv_arena& kv);

  // Row r of the last run's logits, (n_vocab,).
  const float* logits(int row) const { return logits_.data() + static_cast<size_t>(row) * n_vocab_; }
  float* logits_mut(int row) { return logits_.data() + static_cast<size_t>(row) * n_vocab_; }

 private:
  // Linear layers sharing one input (q/k/v, gate/up, or a single matrix):
  // units run in order; a packed unit covers parts [first, first + n).
  struct linear_unit {
    kernels::packed_matrix packed;           // empty: run `view` with matmul
    const kernels::weight_view* view = nullptr;
    int first = 0, n = 1;
  };
  struct linear_group {
    std::vector<linear_unit> units;
  };
  struct layer_linears {
    linear_group qkv, wo, gate_up, down;
  };

  static linear_group make_group(const std::vector<const kernels::weight_view*>& parts, kernels::thread_pool& pool,
                                 const gguf::file& f);
  // ys[s] (n_tokens, rows of part s) = x (n_tokens, cols) @ part_s^T.
  void run_group(const linear_group& g, const float* x, int n_tokens, float* const* ys);
  void ensure_capacity(int n_tokens, int n_rows);
  void attention_layer(int layer, const std::vector<batch_seq>& batch, kv_arena& kv);
  // Splits the step's attention into pool tasks (attn_tasks_): per
  // sequence, KV head and 32-query tile, and over key ranges (n_key_parts_)
  // when sequences x KV heads are fewer than the threads.
  void plan_attention(const std::vector<batch_seq>& batch, int block_size);
  // attn_ = the log-sum-exp merge of the key-range parts' outputs.
  void merge_key_parts(const std::vector<batch_seq>& batch);
  // Adds the output-normed rows of s's tokens (first: its first token in the step) into s.hidden_sum.
  void add_hidden_rows(const batch_seq& s, int first);

  const model& m_;
  kernels::thread_pool& pool_;
  kernels::matmul_scratch mm_scratch_;
  std::vector<layer_linears> linears_;  // (n_layer,)
  linear_group output_;
  int n_vocab_;
  int capacity_tokens_ = 0;
  int capacity_rows_ = 0;
  // Per-step activations; T = tokens in the step.
  std::vector<float> x_;      // (T, n_embd) residual stream
  std::vector<float> xn_;     // (T, n_embd) normed input
  std::vector<float> q_;      // (T, n_head*hd)
  std::vector<float> k_;      // (T, n_kv*hd)
  std::vector<float> v_;      // (T, n_kv*hd)
  std::vector<float> attn_;   // (T, n_head*hd)
  std::vector<float> gate_;   // (T, n_ff)
  std::vector<float> up_;     // (T, n_ff)
  std::vector<float> tmp_;    // (T, n_embd)
  std::vector<float> sel_;    // (rows, n_embd) normed rows that need logits
  std::vector<float> normed_; // (n_embd,) one normed row for a hidden_sum
  std::vector<float> logits_; // (rows, n_vocab)
  std::vector<int32_t> seq_first_;  // (n_seqs,) index of each sequence's first token in the step
  struct attn_task {
    int seq, kv_head;
    int q_begin, q_end;       // the sequence's queries [q_begin, q_end) of this step
    int key_begin, key_end;   // key range when part >= 0
    int part;                 // -1: all keys, written to attn_; else the part's buffers
  };
  std::vector<attn_task> attn_tasks_;
  int n_key_parts_ = 1;
  std::vector<float> part_out_;  // (n_key_parts, capacity T, n_head*hd) outputs of key-range parts
  std::vector<float> part_lse_;  // (n_key_parts, capacity T, n_head) their log-sum-exp
};

}  // namespace cortex
