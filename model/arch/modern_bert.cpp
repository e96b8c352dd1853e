// modern-bert: ModernBERT (answerdotai), and IBM granite-embedding R2. A
// pre-norm encoder without biases, as llama.cpp's modern-bert graph runs it:
//   x = LN(token_embd[t], token_embd_norm)
//   per layer: h = x + attn(LN(x, attn_norm))   (layer 0: attn(x), it has no attn_norm)
//              x = h + down(act(gate) * up), [gate; up] = ffn_up · LN(h, ffn_norm)
//   then LN(x, output_norm) before pooling.
// Every LayerNorm has a weight and no bias. Attention: a fused [q; k; v],
// rotary positions (neox), no position table or token types. Every third
// layer from layer 0 attends the whole input with rope.freq_base; the others
// (attention.sliding_window_pattern says which, where the file gives it)
// attend a symmetric window, |i - j| <= attention.sliding_window / 2, with
// rope.freq_base_swa (10000 when absent) and no rope scaling. The FFN is a
// GeGLU, or a SwiGLU where hidden_activation says silu (granite-embedding
// R2). Rank pooling reads the mean row through cls, GELU, cls.norm and
// cls.output (gte-reranker-modernbert).
#include <string>

#include "model/arch/encoder_common.hpp"

namespace cortex {
namespace {

// llama.cpp's defaults: load_swa_pattern(3, dense_first) and
// hparams.rope_freq_base_train_swa.
constexpr int k_default_pattern = 3;
constexpr float k_default_swa_base = 10000.0f;

status read_activation(hparam_reader& r, model_hparams& hp) {
  hp.encoder.gated_act = ffn_activation::gelu_fp16;
  const auto act = r.str("hidden_activation");
  if (!act) return status::ok();
  if (*act == "silu" || *act == "swish" || *act == "swiglu") hp.encoder.gated_act = ffn_activation::silu;
  if (*act == "relu" || *act == "reglu") {
    return fail(errc::unsupported, r.key("hidden_activation") + " is '" + *act + "': modern-bert with a ReLU FFN is not supported (gelu and silu are)");
  }
  // Any other name is a GeGLU, as llama.cpp falls back to it.
  return status::ok();
}

// Which layers are windowed: attention.sliding_window_pattern as one bool per
// layer, or a period n (layer il windowed unless il % n == 0; n = 0: every
// layer), 3 when absent.
status read_windowed_layers(hparam_reader& r, int n_layer, std::vector<bool>& windowed) {
  const gguf::file& f = r.file();
  const std::string key = r.key("attention.sliding_window_pattern");
  windowed.assign(static_cast<size_t>(n_layer), false);
  if (f.find(key) != nullptr && !f.get_uint(key)) {
    const auto flags = f.get_i32_array(key);
    if (!flags || flags->size() != static_cast<size_t>(n_layer)) {
      return fail(errc::malformed, "metadata key '" + key + "' is neither a period nor one bool per layer");
    }
    for (int il = 0; il < n_layer; ++il) windowed[static_cast<size_t>(il)] = (*flags)[static_cast<size_t>(il)] != 0;
    return status::ok();
  }
  const uint64_t n = f.get_uint(key).value_or(k_default_pattern);
  for (int il = 0; il < n_layer; ++il) windowed[static_cast<size_t>(il)] = n == 0 || il % n != 0;
  return status::ok();
}

status read_modern_bert(hparam_reader& r, model_hparams& hp) {
  if (auto st = encoder::read_encoder_base_keys(r, hp, rope_kind::neox); !st) return st;
  if (auto st = read_activation(r, hp); !st) return st;
  hp.encoder.rank_reads_mean = true;
  hp.encoder.rank_gelu = true;
  int window = 0;  // absent or 0: every layer attends the whole input
  if (r.has("attention.sliding_window")) {
    const auto n = r.file().get_uint(r.key("attention.sliding_window"));
    if (!n || *n > (1u << 30)) return fail(errc::malformed, "invalid metadata key '" + r.key("attention.sliding_window") + "'");
    window = static_cast<int>(*n);
  }
  if (window == 0) return status::ok();
  std::vector<bool> windowed;
  if (auto st = read_windowed_layers(r, hp.n_layer, windowed); !st) return st;
  float swa_base = k_default_swa_base;
  if (auto st = r.f32("rope.freq_base_swa", swa_base); !st) return st;
  for (int il = 0; il < hp.n_layer; ++il) {
    if (!windowed[static_cast<size_t>(il)]) continue;
    layer_attention& a = hp.attn[static_cast<size_t>(il)];
    a.window_symmetric = window;
    a.rope_freq_base = swa_base;
    a.rope_freq_scale = 1.0f;
  }
  return status::ok();
}

void modern_bert_tensors(const model_hparams& hp, model_weights& w, tensor_table& t) {
  using R = tensor_role;
  const int64_t d = hp.n_embd;
  t.matrix("token_embd.weight", d, hp.n_vocab, &w.token_embd, R::token_embd, -1);
  t.vec("token_embd_norm.weight", d, &w.embd_norm, R::norm, -1);
  t.vec("output_norm.weight", d, &w.output_norm, R::norm, -1);
  for (int l = 0; l < hp.n_layer; ++l) {
    const int64_t dq = hp.n_embd_q(l), dkv = hp.n_embd_kv(l), ff = hp.n_ff_of(l);
    layer_weights& L = w.layers[static_cast<size_t>(l)];
    // Layer 0's attention reads the normed embeddings as they are (llama.cpp
    // uses a blk.0.attn_norm where a file has one).
    t.vec(layer_tensor(l, "attn_norm"), d, &L.attn_norm, R::norm, l, l != 0);
    t.fused(layer_tensor(l, "attn_qkv"), d, {{&L.wq, dq}, {&L.wk, dkv}, {&L.wv, dkv}}, R::attn_qkv, l);
    t.matrix(layer_tensor(l, "attn_output"), dq, d, &L.wo, R::attn_output, l);
    t.vec(layer_tensor(l, "ffn_norm"), d, &L.ffn_norm, R::norm, l);
    t.fused(layer_tensor(l, "ffn_up"), d, {{&L.w_gate, ff}, {&L.w_up, ff}}, R::ffn_gate_up, l);
    t.matrix(layer_tensor(l, "ffn_down"), ff, d, &L.w_down, R::ffn_down, l);
  }
  // The classifier head, used by rank pooling; cls.output is required there
  // (the forward pass says so), the rest optional as in llama.cpp.
  t.matrix("cls.weight", d, d, &w.cls, R::classifier, -1, false);
  t.vec("cls.norm.weight", d, &w.cls_norm, R::norm, -1, false);
  t.matrix("cls.output.weight", d, hp.encoder.n_cls_out, &w.cls_out, R::classifier, -1, false);
  t.vec("cls.output.bias", hp.encoder.n_cls_out, &w.cls_out_b, R::bias, -1, false);
}

void modern_bert_layer(blocks& b, int il) {
  static const std::vector<float> no_bias;
  const layer_weights& L = b.weights(il);
  if (L.attn_norm.empty()) {
    b.copy_to_input();
  } else {
    b.layer_norm(b.x(), L.attn_norm, no_bias, b.xn());
  }
  b.attention(il);
  b.residual();
  b.layer_norm(b.x(), L.ffn_norm, no_bias, b.xn());
  b.ffn(il, b.hp().encoder.gated_act);
  b.residual();
  if (il == b.hp().n_layer - 1) b.layer_norm(b.x(), b.model_weights_of().output_norm, no_bias, b.x());
}

}  // namespace

extern const arch_def arch_modern_bert{"modern-bert", read_modern_bert, modern_bert_tensors, modern_bert_layer,
                                       encoder::encoder_inputs};

}  // namespace cortex
