// bert: BERT and the encoders converted as "bert" (bge, MiniLM, e5, gte,
// bge-reranker): absolute position and token-type embeddings, bidirectional
// attention with biases, post-norm LayerNorms, a sequential GELU FFN; the
// file's pooling (mean, cls, last, none; rank through a classifier head).
#include "model/arch/encoder_common.hpp"

namespace cortex {
namespace {

status read_bert(hparam_reader& r, model_hparams& hp) { return encoder::read_encoder_keys(r, hp, rope_kind::none); }

constexpr encoder::encoder_layout layout{};
void bert_tensors(const model_hparams& hp, model_weights& w, tensor_table& t) {
  encoder::encoder_tensors(hp, w, t, layout);
}

}  // namespace

extern const arch_def arch_bert{"bert", read_bert, bert_tensors, encoder::encoder_layer, encoder::post_norm_inputs};

}  // namespace cortex
