// qwen35moe: Qwen3.5's mixture-of-experts models (35B-A3B, 122B-A10B,
// 397B-A17B). Qwen3.5's hybrid stack (model/arch/qwen35_common.hpp) with
// every FFN a mixture of experts: softmax router, the top expert_used_count
// by probability, weights renormalised to sum 1, SwiGLU experts of
// expert_feed_forward_length; plus a shared expert of
// expert_shared_feed_forward_length (feed_forward_length when absent) whose
// output is scaled by sigmoid(ffn_gate_inp_shexp . x). The experts' gate and
// up may be fused in one ffn_gate_up_exps, as newer conversions write them
// (tensor_table::gate_up_experts).
#include "model/arch/qwen35_common.hpp"

namespace cortex {
namespace {

status read(hparam_reader& r, model_hparams& hp) {
  if (auto st = qwen35::read_hybrid(r, hp); !st) return st;
  if (auto st = r.read_moe(hp, moe_gating::softmax, /*norm_weights=*/true); !st) return st;
  return r.u32("expert_shared_feed_forward_length", hp.n_ff, false);  // the shared expert's width
}

}  // namespace

extern const arch_def arch_qwen35moe{"qwen35moe", read, qwen35::hybrid_tensors, qwen35::hybrid_layer};

}  // namespace cortex
