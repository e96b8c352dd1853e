#include "model/arch/encoder_common.hpp"

#include <string>

namespace cortex::encoder {

status read_encoder_keys(hparam_reader& r, model_hparams& hp, rope_kind rope) {
  if (auto st = read_encoder_base_keys(r, hp, rope); !st) return st;
  const auto types = r.file().get_uint("tokenizer.ggml.token_type_count");
  if (!types || *types == 0 || *types > 1024) {
    return fail(errc::malformed, "tokenizer.ggml.token_type_count is missing or not in [1, 1024] (an encoder's token type embeddings need it)");
  }
  hp.encoder.n_token_types = static_cast<int>(*types);
  return status::ok();
}

status read_encoder_base_keys(hparam_reader& r, model_hparams& hp, rope_kind rope) {
  if (auto st = r.read_common(hp, rope); !st) return st;
  const gguf::file& f = r.file();
  encoder_spec& e = hp.encoder;
  e.enabled = true;
  e.norm_eps = 0.0f;
  if (auto st = r.f32("attention.layer_norm_epsilon", e.norm_eps, true); !st) return st;
  if (!(e.norm_eps > 0.0f)) return fail(errc::malformed, r.key("attention.layer_norm_epsilon") + " must be positive");
  // llama.cpp runs a file without the key causally: refuse rather than differ.
  const auto causal = f.get_bool(r.key("attention.causal"));
  if (!causal || *causal) {
    return fail(errc::unsupported, r.key("attention.causal") + (causal ? " is true" : " is missing") +
                                       ": only bidirectional encoders (causal = false) are supported");
  }
  if (f.find(r.key("pooling_type")) != nullptr) {
    const auto p = f.get_uint(r.key("pooling_type"));
    if (!p || *p > 4) {
      return fail(errc::unsupported, r.key("pooling_type") + " must be 0 (none), 1 (mean), 2 (cls), 3 (last) or 4 (rank)");
    }
    e.pooling = static_cast<pooling_kind>(*p);
  }
  e.n_cls_out = 1;
  if (f.find(r.key("classifier.output_labels")) != nullptr) {
    const auto* labels = f.get_string_array(r.key("classifier.output_labels"));
    if (!labels || labels->empty() || labels->size() > 4096) {
      return fail(errc::malformed, r.key("classifier.output_labels") + " must be an array of 1 to 4096 strings");
    }
    e.n_cls_out = static_cast<int>(labels->size());
  }
  return status::ok();
}

void encoder_tensors(const model_hparams& hp, model_weights& w, tensor_table& t, const encoder_layout& o) {
  using R = tensor_role;
  const int64_t d = hp.n_embd;
  t.matrix("token_embd.weight", d, hp.n_vocab, &w.token_embd, R::token_embd, -1);
  t.vecs("token_types.weight", d, hp.encoder.n_token_types, &w.type_embd, R::token_embd, -1, !o.optional_type_embd);
  if (o.position_embd) t.vecs("position_embd.weight", d, hp.n_ctx_train, &w.pos_embd, R::token_embd, -1);
  t.vec("token_embd_norm.weight", d, &w.embd_norm, R::norm, -1);
  t.vec("token_embd_norm.bias", d, &w.embd_norm_b, R::bias, -1);
  if (hp.encoder.pooling == pooling_kind::rank) {
    t.matrix("cls.weight", d, d, &w.cls, R::classifier, -1);
    t.vec("cls.bias", d, &w.cls_b, R::bias, -1);
    t.matrix("cls.output.weight", d, hp.encoder.n_cls_out, &w.cls_out, R::classifier, -1);
    t.vec("cls.output.bias", hp.encoder.n_cls_out, &w.cls_out_b, R::bias, -1);
  }
  for (int l = 0; l < hp.n_layer; ++l) {
    const int64_t dq = hp.n_embd_q(l), dkv = hp.n_embd_kv(l), ff = hp.n_ff_of(l);
    layer_weights& L = w.layers[static_cast<size_t>(l)];
    if (o.fused_qkv) {
      t.fused(layer_tensor(l, "attn_qkv"), d, {{&L.wq, dq}, {&L.wk, dkv}, {&L.wv, dkv}}, R::attn_qkv, l);
    } else {
      t.matrix(layer_tensor(l, "attn_q"), d, dq, &L.wq, R::attn_q, l);
      t.matrix(layer_tensor(l, "attn_k"), d, dkv, &L.wk, R::attn_k, l);
      t.matrix(layer_tensor(l, "attn_v"), d, dkv, &L.wv, R::attn_v, l);
    }
    t.matrix(layer_tensor(l, "attn_output"), dq, d, &L.wo, R::attn_output, l);
    if (o.biases) {
      t.vec(layer_tensor(l, "attn_q", "bias"), dq, &L.bq, R::bias, l);
      t.vec(layer_tensor(l, "attn_k", "bias"), dkv, &L.bk, R::bias, l);
      t.vec(layer_tensor(l, "attn_v", "bias"), dkv, &L.bv, R::bias, l);
    }
    if (o.biases || o.optional_out_bias) t.vec(layer_tensor(l, "attn_output", "bias"), d, &L.bo, R::bias, l, o.biases);
    t.vec(layer_tensor(l, "attn_output_norm"), d, &L.attn_out_norm, R::norm, l);
    t.vec(layer_tensor(l, "attn_output_norm", "bias"), d, &L.attn_out_norm_b, R::bias, l);
    if (o.fused_gate_up) {
      t.fused(layer_tensor(l, "ffn_up"), d, {{&L.w_gate, ff}, {&L.w_up, ff}}, R::ffn_gate_up, l);
    } else {
      if (o.gated_ffn) t.matrix(layer_tensor(l, "ffn_gate"), d, ff, &L.w_gate, R::ffn_gate, l);
      t.matrix(layer_tensor(l, "ffn_up"), d, ff, &L.w_up, R::ffn_up, l);
    }
    t.matrix(layer_tensor(l, "ffn_down"), ff, d, &L.w_down, R::ffn_down, l);
    if (o.fused_gate_up) t.vec(layer_tensor(l, "ffn_down", "bias"), d, &L.b_down, R::bias, l);
    if (o.biases && !o.gated_ffn && !o.fused_gate_up) {
      t.vec(layer_tensor(l, "ffn_up", "bias"), ff, &L.b_up, R::bias, l);
      t.vec(layer_tensor(l, "ffn_down", "bias"), d, &L.b_down, R::bias, l);
    }
    t.vec(layer_tensor(l, "layer_output_norm"), d, &L.layer_out_norm, R::norm, l);
    t.vec(layer_tensor(l, "layer_output_norm", "bias"), d, &L.layer_out_norm_b, R::bias, l);
  }
}

void encoder_inputs(blocks& b) {
  const model_weights& w = b.model_weights_of();
  if (!w.type_embd.empty()) b.add_to_every_token(w.type_embd.data());
  if (!w.pos_embd.empty()) b.add_position_rows(w.pos_embd);
  b.layer_norm(b.x(), w.embd_norm, w.embd_norm_b, b.x());
}

void post_norm_inputs(blocks& b) {
  encoder_inputs(b);
  b.copy_to_input();  // the first layer's input
}

void encoder_layer(blocks& b, int il) { encoder_layer_gated(b, il, ffn_activation::silu); }

void encoder_layer_gated(blocks& b, int il, ffn_activation gated) {
  // Post-norm: xn() holds the layer's input (post_norm_inputs, or the layer
  // before, left it there), and each residual_layer_norm leaves its output
  // in both x() and xn().
  const layer_weights& L = b.weights(il);
  b.attention(il);
  b.residual_layer_norm({}, L.attn_out_norm, L.attn_out_norm_b);
  if (L.w_gate.data != nullptr) {
    b.ffn(il, gated);
  } else {
    b.ffn_sequential(il);
  }
  b.residual_layer_norm(L.b_down, L.layer_out_norm, L.layer_out_norm_b);
}

}  // namespace cortex::encoder
