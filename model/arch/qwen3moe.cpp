// qwen3moe: Qwen3's MoE models (Qwen3-30B-A3B, 235B-A22B). Qwen3's attention
// (neox rope, per-head q/k RMS norms, no biases); every layer's FFN is a
// mixture of experts: softmax router (ffn_gate_inp), the top
// expert_used_count experts by probability, their weights renormalised to
// sum 1, SwiGLU experts of expert_feed_forward_length (3-D
// ffn_{gate,up,down}_exps); no shared expert.
#include "model/arch.hpp"
#include "model/dense_tensors.hpp"

namespace cortex {
namespace {

status read(hparam_reader& r, model_hparams& hp) {
  if (auto st = r.read_common(hp, rope_kind::neox); !st) return st;
  return r.read_moe(hp, moe_gating::softmax, /*norm_weights=*/true);
}

constexpr dense_layout layout = dense_layout{}.with(&dense_layout::qk_norm).with(&dense_layout::moe);

}  // namespace

extern const arch_def arch_qwen3moe{"qwen3moe", read, dense_table<layout>, pre_norm_silu_layer};

}  // namespace cortex
