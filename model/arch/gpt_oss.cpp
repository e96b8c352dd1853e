// gpt-oss (general.architecture "gpt-oss", llama.cpp's openai-moe):
// gpt-oss-20b and 120b. Pre-norm layers; attention with q/k/v/o biases, RoPE
// "neox" with YaRN scaling, one learned sink logit per head
// (attn_sinks), and a sliding window on alternating layers (even layers
// windowed unless attention.sliding_window_pattern says otherwise; the
// windowed layers' rope base is rope.freq_base_swa where given); a mixture
// of experts in every layer whose router takes the top expert_used_count
// logits (with the router's bias) and softmaxes just those, experts with
// biases and the clamped SwiGLU (alpha 1.702, limit 7). The FFN's pre-norm
// is stored as post_attention_norm. Expert weights are usually MXFP4.
#include "model/arch.hpp"
#include "model/dense_tensors.hpp"

namespace cortex {
namespace {

status read(hparam_reader& r, model_hparams& hp) {
  if (auto st = r.read_common(hp, rope_kind::neox); !st) return st;
  if (auto st = r.read_moe(hp, moe_gating::softmax_weight, /*norm_weights=*/false); !st) return st;
  int window = 0;
  if (auto st = r.u32("attention.sliding_window", window); !st) return st;
  int pattern = 2;  // llama.cpp's set_swa_pattern(2): il % 2 < 1
  if (r.has("attention.sliding_window_pattern")) {
    if (auto st = r.u32("attention.sliding_window_pattern", pattern); !st) return st;
  }
  float swa_base = hp.rope_freq_base;
  if (auto st = r.f32("rope.freq_base_swa", swa_base); !st) return st;
  for (int il = 0; il < hp.n_layer; ++il) {
    layer_attention& a = hp.attn[static_cast<size_t>(il)];
    if (il % pattern < pattern - 1) {
      a.window = window;
      a.rope_freq_base = swa_base;
    }
  }
  return status::ok();
}

constexpr dense_layout layout = dense_layout{}
                                    .with(&dense_layout::qkv_bias)
                                    .with(&dense_layout::out_bias)
                                    .with(&dense_layout::attn_sinks)
                                    .with(&dense_layout::ffn_norm_is_post_attention)
                                    .with(&dense_layout::moe)
                                    .with(&dense_layout::moe_biases);

void layer(blocks& b, int il) { pre_norm_layer(b, il, ffn_activation::swiglu_oai); }

}  // namespace

extern const arch_def arch_gpt_oss{"gpt-oss", read, dense_table<layout>, layer};

}  // namespace cortex
