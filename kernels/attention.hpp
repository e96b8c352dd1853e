// Paged causal attention over the KV block arena (one layer at a time).
//
// The arena of one layer holds K and V separately, each
//   [n_blocks][block_size][n_kv_heads][head_dim] f32.
// Position p of a sequence lives in block block_table[p / block_size], slot
// p % block_size. Blocks of one sequence need not be contiguous or ordered.
#pragma once

#include <cstdint>

namespace cortex::kernels {

struct kv_layout {
  int block_size;  // tokens per block
  int n_kv_heads;  // K/V heads (GQA groups)
  int head_dim;    // floats per head
};

// q (n_q, n_heads, head_dim) holds the queries of n_q consecutive tokens at
// positions pos0 .. pos0+n_q-1 of one sequence; K/V of positions
// [0, pos0+n_q) are already in the arena. Query i attends to positions
// <= pos0+i (causal). Head h reads KV head h / (n_heads / n_kv_heads).
// Scores are (q . k) * scale, softmaxed over the attended positions.
// Only heads [head_begin, head_end) of out (n_q, n_heads, head_dim) are
// written, so threads may split heads across calls on the same buffers.
//
// Flash-style: one pass over K/V with an online softmax, no heap allocation;
// queries (and GQA heads) sharing a KV head are processed in tiles so that a
// K/V block is read once per tile, not once per query.
// REQUIRES: n_q >= 1, pos0 >= 0, 0 <= head_begin <= head_end <= n_heads,
//   n_heads % n_kv_heads == 0, 0 < head_dim <= 256, block_size >= 1,
//   block_table has at least ceil((pos0+n_q)/block_size) valid entries,
//   out does not alias q or the arena.
void attention_paged(const float* q, int n_q, int pos0, int n_heads, int head_begin, int head_end,
                     const float* k_arena, const float* v_arena, const int32_t* block_table,
                     const kv_layout& layout, float scale, float* out);

// Same contract, computed naively (all scores, softmax in double, weighted
// sum). Allocates; for tests and benchmarks only. No head_dim limit.
void attention_reference(const float* q, int n_q, int pos0, int n_heads, int head_begin,
                         int head_end, const float* k_arena, const float* v_arena,
                         const int32_t* block_table, const kv_layout& layout, float scale,
                         float* out);

}  // namespace cortex::kernels
