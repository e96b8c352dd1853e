// granite: IBM Granite 3.x dense. A llama block with four scales from the
// file: embeddings * embedding_scale, scores * attention.scale (instead of
// 1/sqrt(head_dim)), each block output * residual_scale before its residual
// add, and logits / logit_scale. Biases where the file has them.
#include "model/arch.hpp"
#include "model/dense_tensors.hpp"

namespace cortex {
namespace {

status read(hparam_reader& r, model_hparams& hp) {
  if (auto st = r.read_common(hp, rope_kind::normal); !st) return st;
  float attn_scale = 0.0f, logit_scale = 1.0f;
  for (auto [key, dst] : std::initializer_list<std::pair<const char*, float*>>{
           {"embedding_scale", &hp.embd_scale}, {"residual_scale", &hp.residual_scale},
           {"attention.scale", &attn_scale}, {"logit_scale", &logit_scale}}) {
    if (auto st = r.f32(key, *dst); !st) return st;
  }
  if (!(logit_scale > 0.0f)) return fail(errc::malformed, "invalid metadata key '" + r.key("logit_scale") + "'");
  hp.logit_scale = 1.0f / logit_scale;
  if (attn_scale != 0.0f) {
    for (auto& a : hp.attn) a.scale = attn_scale;
  }
  return status::ok();
}

constexpr dense_layout layout = dense_layout{}.with(&dense_layout::optional_qkv_bias);

}  // namespace

extern const arch_def arch_granite{"granite", read, dense_table<layout>, pre_norm_silu_layer};

}  // namespace cortex
