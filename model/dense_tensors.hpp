// The tensor table of a dense transformer layer stack as llama.cpp's
// converter names it, with the variations today's families use. An
// architecture file states its variation as a dense_layout value; the
// names, shapes and bindings are written once, here.
#pragma once

#include "model/hparams.hpp"
#include "model/tensor_table.hpp"
#include "model/weights.hpp"

namespace cortex {

struct dense_layout {
  bool qkv_bias = false;        // attn_{q,k,v}.bias (required when set)
  bool optional_qkv_bias = false;  // attn_{q,k,v}.bias and attn_output.bias where the file has them
  bool qk_norm = false;         // attn_q_norm / attn_k_norm (head_dim,)
  bool post_norms = false;      // post_attention_norm and post_ffw_norm (n_embd,)
  bool fused_qkv = false;       // attn_qkv = [q; k; v] rows
  bool fused_gate_up = false;   // ffn_up = [gate; up] rows, no ffn_gate
  bool always_tied = false;     // output is token_embd even if output.weight exists
  bool rope_freqs = true;       // an optional rope_freqs.weight (n_rot/2,)
};

void dense_tensors(const model_hparams& hp, model_weights& w, tensor_table& t, const dense_layout& layout);

}  // namespace cortex
