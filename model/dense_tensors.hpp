// The tensor table of a dense transformer layer stack as llama.cpp's
// converter names it, with the variations today's families use. An
// architecture file states its variation as a dense_layout value; the
// names, shapes and bindings are written once, here.
#pragma once

#include "model/blocks.hpp"
#include "model/hparam_reader.hpp"
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
  bool optional_v = false;      // attn_v where the file has it; a layer without uses its K projection as V
  bool fused_gate_up = false;   // ffn_up = [gate; up] rows, no ffn_gate
  bool always_tied = false;     // output is token_embd even if output.weight exists
  bool rope_freqs = true;       // an optional rope_freqs.weight (n_rot/2,)
  bool longrope = false;        // optional rope_factors_long / rope_factors_short (n_rot/2,)
  // The FFN is a mixture of experts (hp.moe): ffn_gate_inp and
  // ffn_{gate,up,down}_exps instead of ffn_gate / ffn_up / ffn_down.
  bool moe = false;
  bool moe_biases = false;      // and their biases (gpt-oss)
  bool attn_sinks = false;      // attn_sinks (n_head,) (gpt-oss)
  bool out_bias = false;        // attn_output.bias, required (gpt-oss)
  // The FFN's pre-norm is stored as post_attention_norm (gpt-oss's
  // converter's name for it), not ffn_norm.
  bool ffn_norm_is_post_attention = false;

  // This layout with `flag` set: dense_layout{}.with(&dense_layout::qk_norm).
  constexpr dense_layout with(bool dense_layout::*flag) const {
    dense_layout o = *this;
    o.*flag = true;
    return o;
  }
};

void dense_tensors(const model_hparams& hp, model_weights& w, tensor_table& t, const dense_layout& layout);

// The pieces of an arch_def for a family whose differences are only data, so
// that its file states just those: the common keys with its rope kind, its
// layout's table, and one of the two layer shapes.
template <rope_kind R>
status read_common_keys(hparam_reader& r, model_hparams& hp) {
  return r.read_common(hp, R);
}
template <const dense_layout& L>
void dense_table(const model_hparams& hp, model_weights& w, tensor_table& t) {
  dense_tensors(hp, w, t, L);
}
inline void pre_norm_silu_layer(blocks& b, int il) { pre_norm_layer(b, il, ffn_activation::silu); }
inline void sandwich_gelu_layer(blocks& b, int il) { sandwich_norm_layer(b, il, ffn_activation::gelu_tanh); }

}  // namespace cortex
