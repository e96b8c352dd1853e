// What the BERT-family encoders (bert, nomic-bert, jina-bert-v2; modern-bert
// the keys and the embedded input) share, for their arch files: the encoder keys (LayerNorm epsilon, bidirectional
// attention, pooling, token types, classifier labels), the tensor table of
// their variations as an encoder_layout value, and the embedded input
// (token + token type 0 [+ absolute position], then LayerNorm).
// llama.cpp's src/models/bert.cpp is the comparison.
#pragma once

#include "model/arch.hpp"
#include "model/blocks.hpp"
#include "model/hparam_reader.hpp"

namespace cortex::encoder {

struct encoder_layout {
  bool biases = true;            // attn_{q,k,v,output}.bias, ffn_up.bias, ffn_down.bias (required)
  bool optional_out_bias = false;  // without `biases`: attn_output.bias where the file has it
  bool fused_qkv = false;        // attn_qkv = [q; k; v] rows
  bool position_embd = true;     // absolute position_embd (n_ctx_train rows)
  bool optional_type_embd = false;  // token_types.weight may be absent
  bool gated_ffn = false;        // ffn_gate beside ffn_up: SwiGLU, down(silu(gate x) * up x), no biases
  // ffn_up holds [gate; up] (2 n_ff rows, no bias) and ffn_down has its bias:
  // jina-bert-v2's GEGLU, down(gelu(gate x) * up x) + b_down.
  bool fused_gate_up = false;
};

// The common keys with `rope` (none for absolute positions), then the
// encoder's: attention.layer_norm_epsilon (required), attention.causal
// (must be false), pooling_type (absent: none), and
// classifier.output_labels (their number is n_cls_out; absent: 1).
status read_encoder_base_keys(hparam_reader& r, model_hparams& hp, rope_kind rope);
// read_encoder_base_keys, then the token type count
// (tokenizer.ggml.token_type_count, required: the BERT family's
// token_types rows).
status read_encoder_keys(hparam_reader& r, model_hparams& hp, rope_kind rope);

// Every tensor of such a file: embeddings and their norm, per layer the
// attention (with biases per the layout), attn_output_norm, the FFN (up /
// down, sequential; or gated) and layer_output_norm, and for a file whose
// pooling is rank the classifier head (cls, cls.output with biases;
// required then).
void encoder_tensors(const model_hparams& hp, model_weights& w, tensor_table& t, const encoder_layout& layout);

// arch_def::step_inputs: x (token embeddings) += token type 0's row (every
// input is one segment, as llama.cpp feeds it) and each token's absolute
// position row, where the model has them; then the embedding LayerNorm.
void encoder_inputs(blocks& b);
// encoder_inputs, then xn = x: the step inputs of the post-norm layers below,
// which find their input in xn().
void post_norm_inputs(blocks& b);

// arch_def::layer: post-norm, x = LN(x + attn(x)); x = LN(x + ffn(x)), the
// FFN gated with `gated` where the layer has a gate (down's bias added
// where it has one), else sequential with GELU.
void encoder_layer_gated(blocks& b, int il, ffn_activation gated);
// encoder_layer_gated with SwiGLU (nomic-bert; bert has no gate).
void encoder_layer(blocks& b, int il);

}  // namespace cortex::encoder
