// phi3: Phi-3, Phi-3.5 and Phi-4-mini. RoPE "neox"; q, k and v stacked in one
// attn_qkv matrix ([q; k; v] rows), gate and up in one ffn_up matrix
// ([gate; up] rows, gate first: down(silu(gate) * up)); untied output. The
// file's sliding window is ignored, as llama.cpp ignores it.
// LongRoPE (rope_factors_long / rope_factors_short) is not run yet: such a
// file is refused, naming the tensor, rather than run with wrong logits.
#include "model/arch.hpp"
#include "model/blocks.hpp"
#include "model/dense_tensors.hpp"
#include "model/hparam_reader.hpp"

namespace cortex {
namespace {

status read(hparam_reader& r, model_hparams& hp) {
  if (auto st = r.read_common(hp, rope_kind::neox); !st) return st;
  for (const char* t : {"rope_factors_long.weight", "rope_factors_short.weight"}) {
    if (r.file().find_tensor(t) != nullptr) {
      return fail(errc::unsupported, std::string("LongRoPE (tensor '") + t + "') is not supported yet");
    }
  }
  return status::ok();
}

void tensors(const model_hparams& hp, model_weights& w, tensor_table& t) {
  dense_layout o;
  o.fused_qkv = true;
  o.fused_gate_up = true;
  dense_tensors(hp, w, t, o);
}

void layer(blocks& b, int il) { pre_norm_layer(b, il, ffn_activation::silu); }

}  // namespace

extern const arch_def arch_phi3{"phi3", read, tensors, layer};

}  // namespace cortex
