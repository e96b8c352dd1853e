// jina-bert-v2: jina-embeddings-v2 (and jina-reranker-v1's encoder). As
// bert without a position table: ALiBi biases the attention scores instead
// (-slope_h * |i - j| per head, maximum bias 8 as llama.cpp fixes it for
// this architecture), and the FFN is a GEGLU whose ffn_up holds [gate; up]:
// down(gelu(gate x) * up x) + b_down, as llama.cpp's bert graph runs it.
// Attention with biases, post-norm LayerNorms, the file's pooling.
#include "model/arch/encoder_common.hpp"

namespace cortex {
namespace {

// llama.cpp sets hparams.f_max_alibi_bias to this for jina-bert-v2 (no key).
constexpr float k_max_alibi_bias = 8.0f;

status read_jina_bert_v2(hparam_reader& r, model_hparams& hp) {
  if (auto st = encoder::read_encoder_keys(r, hp, rope_kind::none); !st) return st;
  hp.encoder.alibi_max_bias = k_max_alibi_bias;
  if (hp.encoder.pooling == pooling_kind::rank) {
    return fail(errc::unsupported, r.key("pooling_type") +
                                       " is 4 (rank): a jina-bert-v2 reranker (a cls head without cls.output) "
                                       "is not supported; embedding files (mean, cls, last, none) are");
  }
  // Variations llama.cpp also loads, which this file does not compute: refuse them by name.
  const gguf::file& f = r.file();
  const char* unsupported[][2] = {
      {"blk.0.attn_q_norm.weight", "LayerNorms of q and k"},
      {"blk.0.attn_norm_2.weight", "a second attention LayerNorm (attn_norm_2)"},
      {"blk.0.attn_qkv.weight", "a fused q/k/v projection"},
      {"blk.0.ffn_gate.weight", "a separate ffn_gate (an old conversion: convert it again, ffn_up then holds [gate; up])"},
      {"blk.0.ffn_up.bias", "a bias on the gated ffn_up"},
  };
  for (const auto& [tensor, what] : unsupported) {
    if (f.find_tensor(tensor) != nullptr) {
      return fail(errc::unsupported, std::string("tensor '") + tensor + "': jina-bert-v2 with " + what + " is not supported");
    }
  }
  return status::ok();
}

constexpr encoder::encoder_layout layout = [] {
  encoder::encoder_layout o;
  o.position_embd = false;
  o.fused_gate_up = true;
  return o;
}();
void jina_bert_v2_tensors(const model_hparams& hp, model_weights& w, tensor_table& t) {
  encoder::encoder_tensors(hp, w, t, layout);
}

void jina_bert_v2_layer(blocks& b, int il) { encoder::encoder_layer_gated(b, il, ffn_activation::gelu_fp16); }

}  // namespace

extern const arch_def arch_jina_bert_v2{"jina-bert-v2", read_jina_bert_v2, jina_bert_v2_tensors, jina_bert_v2_layer,
                                        encoder::post_norm_inputs};

}  // namespace cortex
