#include "model/dense_tensors.hpp"

namespace cortex {

void dense_tensors(const model_hparams& hp, model_weights& w, tensor_table& t, const dense_layout& o) {
  using R = tensor_role;
  const int64_t d = hp.n_embd;
  t.matrix("token_embd.weight", d, hp.n_vocab, &w.token_embd, R::token_embd, -1);
  t.vec("output_norm.weight", d, &w.output_norm, R::norm, -1);
  if (o.always_tied) {
    t.matrix("token_embd.weight", d, hp.n_vocab, &w.output, R::output, -1);
  } else {
    t.output(d, hp.n_vocab, &w.output, &w.token_embd);
  }
  if (o.rope_freqs) t.vec("rope_freqs.weight", hp.n_rot / 2, &w.rope_freqs, R::rope_freqs, -1, false);
  if (o.longrope) {
    t.vec("rope_factors_long.weight", hp.n_rot / 2, &w.rope_long, R::rope_freqs, -1, false);
    t.vec("rope_factors_short.weight", hp.n_rot / 2, &w.rope_short, R::rope_freqs, -1, false);
  }
  for (int l = 0; l < hp.n_layer; ++l) {
    // Each layer at its own sizes (model_hparams::n_embd_q(il) and friends).
    const int64_t dq = hp.n_embd_q(l), dkv = hp.n_embd_kv(l), ff = hp.n_ff_of(l), hd = hp.head_dim_of(l);
    // A layer that reads an earlier layer's K/V has no K/V tensors of its
    // own (any the file has are not read).
    const bool kv = hp.has_own_kv(l);
    layer_weights& L = w.layers[static_cast<size_t>(l)];
    t.vec(layer_tensor(l, "attn_norm"), d, &L.attn_norm, R::norm, l);
    if (o.fused_qkv) {
      t.fused(layer_tensor(l, "attn_qkv"), d, {{&L.wq, dq}, {&L.wk, dkv}, {&L.wv, dkv}}, R::attn_qkv, l);
    } else {
      t.matrix(layer_tensor(l, "attn_q"), d, dq, &L.wq, R::attn_q, l);
      if (kv) {
        t.matrix(layer_tensor(l, "attn_k"), d, dkv, &L.wk, R::attn_k, l);
        t.matrix(layer_tensor(l, "attn_v"), d, dkv, &L.wv, R::attn_v, l, !o.optional_v);
      }
    }
    if (o.qkv_bias || o.optional_qkv_bias) {
      const bool req = o.qkv_bias;
      t.vec(layer_tensor(l, "attn_q", "bias"), dq, &L.bq, R::bias, l, req);
      if (kv) {
        t.vec(layer_tensor(l, "attn_k", "bias"), dkv, &L.bk, R::bias, l, req);
        t.vec(layer_tensor(l, "attn_v", "bias"), dkv, &L.bv, R::bias, l, req);
      }
    }
    if (o.optional_qkv_bias || o.out_bias) t.vec(layer_tensor(l, "attn_output", "bias"), d, &L.bo, R::bias, l, o.out_bias);
    if (o.qk_norm) {
      t.vec(layer_tensor(l, "attn_q_norm"), hd, &L.attn_q_norm, R::norm, l);
      if (kv) t.vec(layer_tensor(l, "attn_k_norm"), hd, &L.attn_k_norm, R::norm, l);
    }
    t.matrix(layer_tensor(l, "attn_output"), dq, d, &L.wo, R::attn_output, l);
    if (o.post_norms) t.vec(layer_tensor(l, "post_attention_norm"), d, &L.post_attn_norm, R::norm, l);
    t.vec(layer_tensor(l, o.ffn_norm_is_post_attention ? "post_attention_norm" : "ffn_norm"), d, &L.ffn_norm, R::norm, l);
    if (o.attn_sinks) t.vec(layer_tensor(l, "attn_sinks"), hp.n_head, &L.attn_sinks, R::attn_sinks, l);
    if (o.moe) {
      const int64_t ne = hp.moe.n_expert, fe = hp.moe.n_ff_exp;
      t.matrix(layer_tensor(l, "ffn_gate_inp"), d, ne, &L.ffn_gate_inp, R::ffn_gate_inp, l);
      t.experts(layer_tensor(l, "ffn_gate_exps"), d, fe, ne, &L.gate_exps, R::ffn_gate_exps, l);
      t.experts(layer_tensor(l, "ffn_up_exps"), d, fe, ne, &L.up_exps, R::ffn_up_exps, l);
      t.experts(layer_tensor(l, "ffn_down_exps"), fe, d, ne, &L.down_exps, R::ffn_down_exps, l);
      if (o.moe_biases) {
        t.vec(layer_tensor(l, "ffn_gate_inp", "bias"), ne, &L.ffn_gate_inp_b, R::bias, l);
        t.vecs(layer_tensor(l, "ffn_gate_exps", "bias"), fe, ne, &L.gate_exps_b, R::bias, l);
        t.vecs(layer_tensor(l, "ffn_up_exps", "bias"), fe, ne, &L.up_exps_b, R::bias, l);
        t.vecs(layer_tensor(l, "ffn_down_exps", "bias"), d, ne, &L.down_exps_b, R::bias, l);
      }
    } else if (o.fused_gate_up) {
      t.fused(layer_tensor(l, "ffn_up"), d, {{&L.w_gate, ff}, {&L.w_up, ff}}, R::ffn_gate_up, l);
    } else {
      t.matrix(layer_tensor(l, "ffn_gate"), d, ff, &L.w_gate, R::ffn_gate, l);
      t.matrix(layer_tensor(l, "ffn_up"), d, ff, &L.w_up, R::ffn_up, l);
    }
    if (!o.moe) t.matrix(layer_tensor(l, "ffn_down"), ff, d, &L.w_down, R::ffn_down, l);
    if (o.post_norms) t.vec(layer_tensor(l, "post_ffw_norm"), d, &L.post_ffn_norm, R::norm, l);
  }
}

}  // namespace cortex
