// Paged causal attention over the KV block arena (one layer at a time).
//
// The arena of one layer holds K and V separately, each
//   [n_blocks][block_size][n_kv_heads][row_bytes(head_dim)]
// where a row is one head's head_dim values stored as layout.type
// (kernels/kv_type.hpp: f32, f16, bf16 or q8_0 blocks along head_dim).
// Position p of a sequence lives in block block_table[p / block_size], slot
// p % block_size. Blocks of one sequence need not be contiguous or ordered.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>

#include "kernels/kv_type.hpp"

namespace cortex::kernels {

// A block-table entry whose block was released: every position it covered
// lies before the window of any query still to come (a windowed group only).
// Nothing reads it; the table keeps its place so that position p stays at
// entry p / block_size. The K/V cache manager writes it, the forward pass
// and the executor skip it.
constexpr int32_t kv_block_released = -1;

struct kv_layout {
  int block_size;  // tokens per block
  int n_kv_heads;  // K/V heads (GQA groups)
  int head_dim;    // values per head
  kv_type type = kv_type::f32;

  size_t row_bytes() const { return kv_traits(type).row_bytes(head_dim); }
  size_t slot_bytes() const { return static_cast<size_t>(n_kv_heads) * row_bytes(); }
};

// One call's work. q (n_q, n_heads, head_dim) holds the queries of n_q
// consecutive tokens at positions pos0 .. pos0+n_q-1 of one sequence; K/V of
// positions [0, pos0+n_q) are already in the arena. Query i attends to
// positions <= pos0+i (causal) that also lie in [key_begin, key_end). Head h
// reads KV head h / (n_heads / n_kv_heads). Scores are (q . k) * scale,
// softmaxed over the attended positions. Only heads [head_begin, head_end)
// of out (n_q, n_heads, head_dim) are written, so threads may split heads
// (and queries, by offsetting q, out and pos0) across calls on the same
// buffers.
//
// Sliding window (llama.cpp's LLAMA_SWA_TYPE_STANDARD: Gemma 2 / 3, gpt-oss):
// with window > 0 in causal attention, query i at position p = pos0+i
// attends only positions p' with p - p' < window (window positions, p
// itself included), on top of the causal rule and [key_begin, key_end); 0
// means no window. attention_paged reads no position before every row's
// window, so its cost grows with the window, not with pos0.
//
// Bidirectional attention (encoders): with n_keys > 0 every query attends
// positions [0, n_keys) ∩ [key_begin, key_end), whatever its own position
// (no causal rule); K/V of all n_keys positions must be in the arena. 0:
// causal. With a window as well the window is symmetric (llama.cpp's
// LLAMA_SWA_TYPE_SYMMETRIC: ModernBERT's local layers): the query at
// position p attends only positions p' with |p - p'| <= window / 2 (integer
// halving, as llama.cpp masks it), before and after p alike.
//
// Score softcapping (Gemma 2's attn_logit_softcapping): with softcap > 0
// each score s = (q . k) * scale becomes softcap * tanh(s / softcap) before
// the mask and the softmax; 0 means none.
//
// Key ranges split one row's positions across calls: with lse set, each call
// also writes lse (n_q, n_heads) = log(sum over its positions of
// exp(score)), and out is normalised over its own positions (a row with none,
// e.g. a part entirely before its window, gets out 0 and lse -inf);
// attention_merge combines the parts.
struct attention_args {
  const float* q = nullptr;
  int n_q = 1;
  int pos0 = 0;
  int n_heads = 1;
  int head_begin = 0, head_end = 1;
  const void* k_arena = nullptr;
  const void* v_arena = nullptr;
  const int32_t* block_table = nullptr;
  kv_layout layout{1, 1, 1};
  float scale = 1.0f;
  float* out = nullptr;
  int key_begin = 0;
  int key_end = INT_MAX;
  float* lse = nullptr;  // (n_q, n_heads) or nullptr
  int window = 0;         // sliding window in positions (symmetric with n_keys); 0: none
  float softcap = 0.0f;   // score cap; 0: none
  int part_keys = 0;      // > 0: keys taken in parts of this many positions (below); 0: in one pass
  int n_keys = 0;         // > 0: bidirectional over positions [0, n_keys); 0: causal
  // (n_heads,) or nullptr. ALiBi: head h's scaled (and capped) score of the
  // key at position p, for the query at position i, gets
  // -alibi_slopes[h] * |i - p| added. REQUIRES window == 0 with it.
  const float* alibi_slopes = nullptr;
};

// ALiBi slopes as ggml computes them for soft_max's max_bias (llama.cpp's
// f_max_alibi_bias): with n2 the largest power of two <= n_heads,
// m0 = 2^(-max_bias / n2), m1 = 2^(-max_bias / 2 / n2), head h < n2 gets
// m0^(h + 1), head h >= n2 m1^(2 (h - n2) + 1). out (n_heads,).
// REQUIRES: n_heads >= 1, max_bias > 0.
void alibi_slopes(int n_heads, float max_bias, float* out);

// Key parts, for batch invariance. With part_keys = P > 0, a row's keys are
// cut at the absolute positions j * P; each part is normalised on its own
// and the parts are folded left to right (attention_fold), which gives the
// same bits as one call per part (key_begin/key_end on its bounds) merged by
// attention_merge. A row's result then depends only on the row: not on the
// rows beside it in the call, nor on how the caller split its keys across
// threads. The engine uses attention_part_keys. P must be a multiple of 32.
constexpr int attention_part_keys = 1024;

// Flash-style: one pass over K/V with an online softmax, no heap allocation;
// queries (and GQA heads) sharing a KV head are processed in tiles so that a
// K/V chunk is read (and, for f16 / bf16 / q8_0, widened to f32 in a
// tile-local buffer) once per tile, not once per query: the cache itself is
// never widened. SIMD per the run-time isa (kernels/cpu_features.hpp).
// REQUIRES: n_q >= 1, pos0 >= 0, 0 <= head_begin <= head_end <= n_heads,
//   n_heads % n_kv_heads == 0, 0 < head_dim <= 512, head_dim a multiple of
//   the type's block, block_size >= 1, key_begin >= 0, window >= 0,
//   softcap >= 0, block_table has at
//   least ceil((pos0+n_q)/block_size) valid entries, out does not alias q
//   or the arena.
// With alibi_slopes, a row at a time in one pass over its keys (a portable
// body: ALiBi models are small encoders), the same contract.
void attention_paged(const attention_args& a);

// Same contract, computed naively (K/V rows loaded with the type's scalar
// load, all scores, softmax in double, weighted sum). Allocates; for tests
// and benchmarks only. No head_dim limit.
void attention_reference(const attention_args& a);

// Folds one part (part: head_dim values normalised over its keys, part_lse
// their log-sum-exp) into a running result (out, *lse) of the parts before
// it: out becomes the attention over both key sets, *lse their log-sum-exp.
// A part with lse -inf (no key) changes nothing; into a running -inf it is
// copied. The one way parts are combined, so that the result of a row does
// not depend on where the fold ran.
void attention_fold(float* out, float* lse, const float* part, float part_lse, int head_dim);

// Combines n_parts results of the same rows over disjoint key ranges, given
// in the keys' order: outs[j] (n_rows, head_dim) normalised over part j,
// lses[j] (n_rows,) its log-sum-exp; out (n_rows, head_dim) is their
// attention_fold from part 0 to part n_parts - 1 (0 for a row with no key),
// lse_out (n_rows,), if not null, its log-sum-exp (-inf for none).
// REQUIRES: n_parts >= 1. out does not alias a part.
void attention_merge(const float* const* outs, const float* const* lses, int n_parts, int n_rows,
                     int head_dim, float* out, float* lse_out = nullptr);

}  // namespace cortex::kernels
