// gemma2: Gemma 2. Sandwich norms (post-attention and post-FFN norms before
// each residual add), GELU-tanh gate, RoPE "neox", embeddings * sqrt(n_embd),
// attention scores softcapped c * tanh(s / c) (attn_logit_softcapping) and
// final logits likewise (final_logit_softcapping), a sliding window on the
// even layers, output always tied to the embeddings.
#include "model/arch.hpp"
#include "model/arch/gemma_common.hpp"
#include "model/dense_tensors.hpp"

namespace cortex {
namespace {

status read(hparam_reader& r, model_hparams& hp) {
  if (auto st = gemma::read_shared(r, hp, /*n_layer_27b=*/46, /*pattern=*/2); !st) return st;
  float softcap = 0.0f;
  if (auto st = r.f32("attn_logit_softcapping", softcap); !st) return st;
  if (softcap < 0.0f) return fail(errc::malformed, "invalid metadata key '" + r.key("attn_logit_softcapping") + "'");
  for (auto& a : hp.attn) a.softcap = softcap;
  return status::ok();
}

constexpr dense_layout layout = dense_layout{}.with(&dense_layout::post_norms).with(&dense_layout::always_tied);

}  // namespace

extern const arch_def arch_gemma2{"gemma2", read, dense_table<layout>, sandwich_gelu_layer};

}  // namespace cortex
