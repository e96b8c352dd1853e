// nomic-bert: nomic-embed-text. As bert with rotary positions (neox pairs,
// the file's rope base) instead of a position table, a fused [q; k; v]
// projection, no biases but an optional attn_output.bias, and a SwiGLU FFN
// (ffn_gate, ffn_up, ffn_down), as llama.cpp's bert graph runs it.
#include "model/arch/encoder_common.hpp"

namespace cortex {
namespace {

status read_nomic_bert(hparam_reader& r, model_hparams& hp) {
  if (auto st = encoder::read_encoder_keys(r, hp, rope_kind::neox); !st) return st;
  // llama.cpp adds a fused qkv bias where a file has one; we do not split one.
  if (r.file().find_tensor("blk.0.attn_qkv.bias") != nullptr) {
    return fail(errc::unsupported, "tensor 'blk.0.attn_qkv.bias': nomic-bert with a fused q/k/v bias is not supported");
  }
  return status::ok();
}

constexpr encoder::encoder_layout layout = [] {
  encoder::encoder_layout o;
  o.biases = false;
  o.optional_out_bias = true;
  o.fused_qkv = true;
  o.position_embd = false;
  o.optional_type_embd = true;
  o.gated_ffn = true;
  return o;
}();
void nomic_bert_tensors(const model_hparams& hp, model_weights& w, tensor_table& t) {
  encoder::encoder_tensors(hp, w, t, layout);
}

}  // namespace

extern const arch_def arch_nomic_bert{"nomic-bert", read_nomic_bert, nomic_bert_tensors, encoder::encoder_layer,
                                      encoder::post_norm_inputs};

}  // namespace cortex
