#include "model/arch/qwen35_common.hpp"

namespace cortex::qwen35 {

status read_hybrid(hparam_reader& r, model_hparams& hp) {
  if (auto st = r.read_common(hp, rope_kind::neox); !st) return st;
  int nextn = 0;
  if (r.has("nextn_predict_layers")) {
    if (auto st = r.u32("nextn_predict_layers", nextn); !st) return st;
    if (nextn >= hp.n_layer) return fail(errc::malformed, "invalid metadata key '" + r.key("nextn_predict_layers") + "'");
    hp.n_layer -= nextn;
    hp.attn.resize(static_cast<size_t>(hp.n_layer));
    hp.notes.push_back("the file's " + std::to_string(nextn) +
                       " multi-token-prediction layer(s) are not run (no speculative use yet)");
  }
  delta_net_spec& dn = hp.delta_net;
  int inner = 0;
  for (auto [k, dst] : std::initializer_list<std::pair<const char*, int*>>{{"ssm.conv_kernel", &dn.conv_kernel},
                                                                          {"ssm.state_size", &dn.head_k_dim},
                                                                          {"ssm.group_count", &dn.n_k_heads},
                                                                          {"ssm.time_step_rank", &dn.n_v_heads},
                                                                          {"ssm.inner_size", &inner}}) {
    if (auto st = r.u32(k, *dst); !st) return st;
  }
  if (inner % dn.n_v_heads != 0 || dn.n_v_heads % dn.n_k_heads != 0) {
    return fail(errc::malformed, r.key("ssm.inner_size") + " / " + r.key("ssm.time_step_rank") + " / " +
                                     r.key("ssm.group_count") + " do not divide into whole heads");
  }
  dn.head_v_dim = inner / dn.n_v_heads;
  if (dn.head_k_dim > 256 || dn.head_v_dim > 256 || dn.conv_kernel > 16) {
    return fail(errc::unsupported, "delta-net heads wider than 256 or a conv kernel over 16 taps are not supported");
  }
  const auto marked = r.file().get_i32_array(r.key("attention.recurrent_layers"));
  int interval = 4;
  if (!marked) {
    if (auto st = r.u32("full_attention_interval", interval, false); !st) return st;
  } else if (marked->size() < static_cast<size_t>(hp.n_layer)) {
    return fail(errc::malformed, r.key("attention.recurrent_layers") + " has fewer entries than layers");
  }
  for (int il = 0; il < hp.n_layer; ++il) {
    layer_attention& a = hp.attn[static_cast<size_t>(il)];
    a.recurrent = marked ? (*marked)[static_cast<size_t>(il)] != 0 : (il + 1) % interval != 0;
    a.q_gate = !a.recurrent;
  }
  return status::ok();
}

void hybrid_tensors(const model_hparams& hp, model_weights& w, tensor_table& t) {
  using R = tensor_role;
  const delta_net_spec& dn = hp.delta_net;
  const int64_t d = hp.n_embd, dq = hp.n_embd_q(), dkv = hp.n_embd_kv(), hd = hp.head_dim, ff = hp.n_ff;
  const int64_t C = dn.conv_channels(), V = dn.value_dim(), H = dn.n_v_heads;
  t.matrix("token_embd.weight", d, hp.n_vocab, &w.token_embd, R::token_embd, -1);
  t.vec("output_norm.weight", d, &w.output_norm, R::norm, -1);
  t.output(d, hp.n_vocab, &w.output, &w.token_embd);
  for (int l = 0; l < hp.n_layer; ++l) {
    layer_weights& L = w.layers[static_cast<size_t>(l)];
    t.vec(layer_tensor(l, "attn_norm"), d, &L.attn_norm, R::norm, l);
    if (hp.attn[static_cast<size_t>(l)].recurrent) {
      t.matrix(layer_tensor(l, "attn_qkv"), d, C, &L.ssm_qkv, R::attn_qkv, l);
      t.matrix(layer_tensor(l, "attn_gate"), d, V, &L.ssm_gate, R::attn_q, l);
      t.vecs(layer_tensor(l, "ssm_conv1d"), dn.conv_kernel, C, &L.ssm_conv1d, R::norm, l);
      t.vec(layer_tensor(l, "ssm_dt", "bias"), H, &L.ssm_dt_b, R::bias, l);
      t.vec("blk." + std::to_string(l) + ".ssm_a", H, &L.ssm_a, R::norm, l);
      t.matrix(layer_tensor(l, "ssm_beta"), d, H, &L.ssm_beta, R::attn_q, l);
      t.matrix(layer_tensor(l, "ssm_alpha"), d, H, &L.ssm_alpha, R::attn_q, l);
      t.vec(layer_tensor(l, "ssm_norm"), dn.head_v_dim, &L.ssm_norm, R::norm, l);
      t.matrix(layer_tensor(l, "ssm_out"), V, d, &L.ssm_out, R::attn_output, l);
    } else {
      t.matrix(layer_tensor(l, "attn_q"), d, 2 * dq, &L.wq, R::attn_q, l);
      t.matrix(layer_tensor(l, "attn_k"), d, dkv, &L.wk, R::attn_k, l);
      t.matrix(layer_tensor(l, "attn_v"), d, dkv, &L.wv, R::attn_v, l);
      t.vec(layer_tensor(l, "attn_q_norm"), hd, &L.attn_q_norm, R::norm, l);
      t.vec(layer_tensor(l, "attn_k_norm"), hd, &L.attn_k_norm, R::norm, l);
      t.matrix(layer_tensor(l, "attn_output"), dq, d, &L.wo, R::attn_output, l);
    }
    t.vec(layer_tensor(l, "post_attention_norm"), d, &L.ffn_norm, R::norm, l);
    const char* gate = "ffn_gate";
    const char* up = "ffn_up";
    const char* down = "ffn_down";
    if (hp.moe.enabled()) {  // routed experts, and the shared one in the dense slots
      const int64_t ne = hp.moe.n_expert, fe = hp.moe.n_ff_exp;
      t.matrix(layer_tensor(l, "ffn_gate_inp"), d, ne, &L.ffn_gate_inp, R::ffn_gate_inp, l);
      t.gate_up_experts(l, d, fe, ne, &L.gate_exps, &L.up_exps);
      t.experts(layer_tensor(l, "ffn_down_exps"), fe, d, ne, &L.down_exps, R::ffn_down_exps, l);
      t.vec(layer_tensor(l, "ffn_gate_inp_shexp"), d, &L.ffn_gate_inp_shexp, R::bias, l);
      gate = "ffn_gate_shexp";
      up = "ffn_up_shexp";
      down = "ffn_down_shexp";
    }
    t.matrix(layer_tensor(l, gate), d, ff, &L.w_gate, R::ffn_gate, l);
    t.matrix(layer_tensor(l, up), d, ff, &L.w_up, R::ffn_up, l);
    t.matrix(layer_tensor(l, down), ff, d, &L.w_down, R::ffn_down, l);
  }
}

void hybrid_layer(blocks& b, int il) {
  const layer_weights& L = b.weights(il);
  b.norm(b.x(), L.attn_norm, b.xn());
  if (b.hp().attn[static_cast<size_t>(il)].recurrent) {
    b.delta_net(il);
  } else {
    b.attention(il);
  }
  b.residual();
  b.norm(b.x(), L.ffn_norm, b.xn());
  b.ffn(il, ffn_activation::silu);
  b.residual();
}

}  // namespace cortex::qwen35
