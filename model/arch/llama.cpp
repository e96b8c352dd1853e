// llama: Llama 1-3, Mistral, TinyLlama and the many files converted as
// "llama". RoPE "normal" (adjacent pairs), GQA, SwiGLU, tied output when the
// file has no output.weight, Llama 3.1's rope_freqs where present.
#include "model/arch.hpp"
#include "model/blocks.hpp"
#include "model/dense_tensors.hpp"
#include "model/hparam_reader.hpp"

namespace cortex {
namespace {

status read(hparam_reader& r, model_hparams& hp) { return r.read_common(hp, rope_kind::normal); }

void tensors(const model_hparams& hp, model_weights& w, tensor_table& t) { dense_tensors(hp, w, t, dense_layout{}); }

void layer(blocks& b, int il) { pre_norm_layer(b, il, ffn_activation::silu); }

}  // namespace

extern const arch_def arch_llama{"llama", read, tensors, layer};

}  // namespace cortex
