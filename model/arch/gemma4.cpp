// gemma4: Gemma 4 (dense text model). Gemma 3's sandwich block with
//  - per-layer sizes: sliding layers (attention.sliding_window_pattern) use
//    key_length_swa heads, rope.dimension_count_swa rotary dims and
//    rope.freq_base_swa; full layers key_length, rope.dimension_count and
//    rope.freq_base with proportional RoPE (rope_freqs divisors, 1e30 = not
//    rotated); head_count_kv and feed_forward_length may be per-layer arrays
//    (read by read_common);
//  - attention scale 1; q/k norms; V RMS-normalised without a weight; a
//    layer without attn_v uses its K projection (before the K norm) as V;
//  - KV sharing: the last attention.shared_kv_layers layers compute no K/V
//    and read the cache of layer n_kv - 2 (sliding) or n_kv - 1 (full),
//    n_kv = n_layer - shared (llama.cpp's rule), holding no K/V memory;
//  - per-layer token embeddings (embedding_length_per_layer_input) added
//    after each layer's FFN (blocks::per_layer_input), then the layer's
//    output * layer_output_scale;
//  - embeddings * sqrt(n_embd); final logit softcapping; output tied unless
//    the file has output.weight;
//  - experts (26B-A4B: expert_count > 0), in every layer beside the dense
//    FFN, as llama.cpp's gemma4 graph runs them: the dense FFN on
//    ffn_norm(h) then post_ffw_norm_1; the experts (GeGLU; gate and up
//    split or fused in ffn_gate_up_exps; ffn_down_exps.scale per expert) on
//    pre_ffw_norm_2(h), routed by softmax over ffn_gate_inp ·
//    (rmsnorm(h) / sqrt(n_embd) * ffn_gate_inp.scale), the top
//    expert_used_count renormalised to sum 1, then post_ffw_norm_2; the sum
//    through post_ffw_norm. h is the residual stream after attention.
#include <cmath>

#include "model/arch.hpp"
#include "model/dense_tensors.hpp"

namespace cortex {
namespace {

status read(hparam_reader& r, model_hparams& hp) {
  if (auto st = r.read_common(hp, rope_kind::neox); !st) return st;
  auto bad = [&](const std::string& k, const std::string& why) {
    return fail(errc::malformed, "metadata key '" + r.key(k) + "' " + why);
  };
  hp.embd_scale = std::sqrt(static_cast<float>(hp.n_embd));
  if (auto st = r.f32("final_logit_softcapping", hp.final_softcap); !st) return st;
  if (hp.final_softcap < 0.0f) return bad("final_logit_softcapping", "is negative");
  int window = 0, hd_swa = 0, v_swa = 0, shared = 0;
  if (auto st = r.u32("attention.sliding_window", window); !st) return st;
  if (auto st = r.u32("attention.key_length_swa", hd_swa); !st) return st;
  v_swa = hd_swa;
  if (auto st = r.u32("attention.value_length_swa", v_swa, false); !st) return st;
  if (v_swa != hd_swa) return fail(errc::unsupported, "value_length_swa differs from key_length_swa (not supported)");
  int n_rot_swa = hd_swa;
  if (auto st = r.u32("rope.dimension_count_swa", n_rot_swa, false); !st) return st;
  if (n_rot_swa > hd_swa || n_rot_swa % 2) return bad("rope.dimension_count_swa", "is odd or above key_length_swa");
  float base_swa = hp.rope_freq_base;
  if (auto st = r.f32("rope.freq_base_swa", base_swa); !st) return st;
  if (auto st = r.u32("attention.shared_kv_layers", shared, false); !st) return st;
  if (auto st = r.u32("embedding_length_per_layer_input", hp.n_embd_per_layer, false); !st) return st;
  if (r.file().find(r.key("expert_count")) != nullptr) {
    if (auto st = r.read_moe(hp, moe_gating::softmax, /*norm_weights=*/true); !st) return st;
  }
  const auto pattern = r.file().get_i32_array(r.key("attention.sliding_window_pattern"));
  if (!pattern || pattern->size() != static_cast<size_t>(hp.n_layer)) {
    return bad("attention.sliding_window_pattern", "is missing or not one bool per layer");
  }
  for (int il = 0; il < hp.n_layer; ++il) {
    layer_attention& a = hp.attn[static_cast<size_t>(il)];
    a.scale = 1.0f;
    a.v_norm = true;
    a.head_dim = hp.head_dim;
    a.n_head_kv = hp.n_head_kv_of(il);
    a.n_rot = hp.n_rot;
    if ((*pattern)[static_cast<size_t>(il)] != 0) {
      a.window = window;
      a.head_dim = hd_swa;
      a.n_rot = n_rot_swa;
      a.rope_freq_base = base_swa;
      a.rope_factors = false;  // proportional RoPE is the full layers'
    }
    if (a.head_dim > 512) {
      return fail(errc::unsupported, "layer " + std::to_string(il) + " has head dimension " + std::to_string(a.head_dim) +
                                         " > 512, which the attention kernel does not support");
    }
  }
  // KV sharing, as llama.cpp's gemma4 assigns it.
  const int n_kv = hp.n_layer - shared;
  if (shared > 0 && n_kv < 2) return bad("attention.shared_kv_layers", "leaves fewer than 2 layers with K/V");
  for (int il = n_kv; il < hp.n_layer; ++il) {
    layer_attention& a = hp.attn[static_cast<size_t>(il)];
    const int src = n_kv - (a.window > 0 ? 2 : 1);
    const layer_attention& s = hp.attn[static_cast<size_t>(src)];
    if (s.window != a.window || s.head_dim != a.head_dim || s.n_head_kv != a.n_head_kv) {
      return bad("attention.shared_kv_layers", ": layer " + std::to_string(il) + " would read layer " + std::to_string(src) +
                                                   "'s K/V, whose window or head sizes differ");
    }
    a.kv_source = src;
  }
  return status::ok();
}

constexpr dense_layout layout =
    dense_layout{}.with(&dense_layout::post_norms).with(&dense_layout::qk_norm).with(&dense_layout::optional_v);

void tensors(const model_hparams& hp, model_weights& w, tensor_table& t) {
  using R = tensor_role;
  dense_tensors(hp, w, t, layout);
  const int64_t d = hp.n_embd, P = hp.n_embd_per_layer;
  if (P > 0) {
    t.matrix("per_layer_token_embd.weight", hp.n_layer * P, hp.n_vocab, &w.per_layer_token_embd, R::token_embd, -1);
    t.matrix("per_layer_model_proj.weight", d, hp.n_layer * P, &w.per_layer_model_proj, R::per_layer_embd, -1);
    t.vec("per_layer_proj_norm.weight", P, &w.per_layer_proj_norm, R::norm, -1);
  }
  for (int l = 0; l < hp.n_layer; ++l) {
    layer_weights& L = w.layers[static_cast<size_t>(l)];
    t.vec(layer_tensor(l, "layer_output_scale"), 1, &L.out_scale, R::norm, l, false);
    if (hp.moe.enabled()) {
      const int64_t ne = hp.moe.n_expert, fe = hp.moe.n_ff_exp;
      t.matrix(layer_tensor(l, "ffn_gate_inp"), d, ne, &L.ffn_gate_inp, R::ffn_gate_inp, l);
      t.vec(layer_tensor(l, "ffn_gate_inp", "scale"), d, &L.ffn_gate_inp_s, R::norm, l);
      t.gate_up_experts(l, d, fe, ne, &L.gate_exps, &L.up_exps);
      t.experts(layer_tensor(l, "ffn_down_exps"), fe, d, ne, &L.down_exps, R::ffn_down_exps, l);
      t.vec(layer_tensor(l, "ffn_down_exps", "scale"), ne, &L.down_exps_s, R::norm, l, false);
      t.vec(layer_tensor(l, "pre_ffw_norm_2"), d, &L.ffn_pre_norm_2, R::norm, l);
      t.vec(layer_tensor(l, "post_ffw_norm_1"), d, &L.ffn_post_norm_1, R::norm, l);
      t.vec(layer_tensor(l, "post_ffw_norm_2"), d, &L.ffn_post_norm_2, R::norm, l);
    }
    if (P == 0) continue;
    t.matrix(layer_tensor(l, "inp_gate"), d, P, &L.per_layer_inp_gate, R::per_layer_embd, l);
    t.matrix(layer_tensor(l, "proj"), P, d, &L.per_layer_proj, R::per_layer_embd, l);
    t.vec(layer_tensor(l, "post_norm"), d, &L.per_layer_post_norm, R::norm, l);
  }
}

// Attention as sandwich_norm_layer, then the dense FFN and the experts side
// by side (see the top of the file).
void experts_layer(blocks& b, int il) {
  const layer_weights& L = b.weights(il);
  constexpr ffn_activation act = ffn_activation::gelu_tanh;
  sandwich_attention(b, il);
  b.norm(b.x(), L.ffn_norm, b.xn());
  b.ffn_dense(il, act);
  b.norm(b.out(), L.ffn_post_norm_1, b.side());
  b.norm_scaled(b.x(), L.ffn_gate_inp_s, 1.0f / std::sqrt(static_cast<float>(b.hp().n_embd)), b.router_input());
  b.norm(b.x(), L.ffn_pre_norm_2, b.xn());
  b.experts(il, act, b.router_input());
  b.norm(b.out(), L.ffn_post_norm_2, b.out());
  b.add_to_out(b.side());
  b.norm(b.out(), L.post_ffn_norm, b.out());
  b.residual();
}

void layer(blocks& b, int il) {
  if (b.hp().moe.enabled()) {
    experts_layer(b, il);
  } else {
    sandwich_norm_layer(b, il, ffn_activation::gelu_tanh);
  }
  if (b.hp().n_embd_per_layer > 0) b.per_layer_input(il);
  b.scale_output(il);
}

void step_inputs(blocks& b) {
  if (b.hp().n_embd_per_layer > 0) b.per_layer_inputs();
}

}  // namespace

extern const arch_def arch_gemma4{"gemma4", read, tensors, layer, step_inputs};

}  // namespace cortex
