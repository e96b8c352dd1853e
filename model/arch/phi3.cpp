// phi3: Phi-3, Phi-3.5 and Phi-4-mini. RoPE "neox"; q, k and v stacked in one
// attn_qkv matrix ([q; k; v] rows), gate and up in one ffn_up matrix
// ([gate; up] rows, gate first: down(silu(gate) * up)); untied output. The
// file's sliding window is ignored, as llama.cpp ignores it.
// LongRoPE (Phi-3.5-mini, Phi-4-mini): rope_factors_long / _short divide
// theta per pair, the long ones when a sequence's context exceeds
// rope.scaling.original_context_length (llama.cpp's choice, made by the
// blocks from the context the server runs with), and cos/sin are scaled by
// rope.scaling.attn_factor.
#include "model/arch.hpp"
#include "model/dense_tensors.hpp"

namespace cortex {
namespace {

status read(hparam_reader& r, model_hparams& hp) {
  if (auto st = r.read_common(hp, rope_kind::neox, "longrope"); !st) return st;
  hp.n_ctx_orig = hp.n_ctx_train;
  if (auto st = r.u32("rope.scaling.original_context_length", hp.n_ctx_orig, false); !st) return st;
  float attn_factor = 1.0f;
  if (auto st = r.f32("rope.scaling.attn_factor", attn_factor); !st) return st;
  for (auto& a : hp.attn) a.rope_attn_factor = attn_factor;
  return status::ok();
}

constexpr dense_layout layout =
    dense_layout{}.with(&dense_layout::fused_qkv).with(&dense_layout::fused_gate_up).with(&dense_layout::longrope);

}  // namespace

extern const arch_def arch_phi3{"phi3", read, dense_table<layout>, pre_norm_silu_layer};

}  // namespace cortex
