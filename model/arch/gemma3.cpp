// gemma3: Gemma 3 (text). Gemma 2's block without the attention softcap,
// plus per-head q/k norms; five windowed ("local") layers to one global;
// local layers use rope.freq_base_swa (10000 when absent) and no rope
// scaling, global ones rope.freq_base with the file's (linear) scaling;
// final softcapping only when the file gives it; output tied unless the file
// has output.weight.
#include "model/arch.hpp"
#include "model/arch/gemma_common.hpp"
#include "model/dense_tensors.hpp"

namespace cortex {
namespace {

status read(hparam_reader& r, model_hparams& hp) {
  if (auto st = gemma::read_shared(r, hp, /*n_layer_27b=*/62, /*pattern=*/6); !st) return st;
  float local_base = 10000.0f;
  if (auto st = r.f32("rope.freq_base_swa", local_base); !st) return st;
  for (auto& a : hp.attn) {
    if (a.window == 0) continue;
    a.rope_freq_base = local_base;
    a.rope_freq_scale = 1.0f;
  }
  return status::ok();
}

constexpr dense_layout layout = dense_layout{}.with(&dense_layout::post_norms).with(&dense_layout::qk_norm);

}  // namespace

extern const arch_def arch_gemma3{"gemma3", read, dense_table<layout>, sandwich_gelu_layer};

}  // namespace cortex
