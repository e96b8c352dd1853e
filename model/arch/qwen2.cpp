// qwen2: Qwen2 / Qwen2.5. As llama with RoPE "neox" (pairs i, i + n_rot/2)
// and biases on the q, k and v projections.
#include "model/arch.hpp"
#include "model/blocks.hpp"
#include "model/dense_tensors.hpp"
#include "model/hparam_reader.hpp"

namespace cortex {
namespace {

status read(hparam_reader& r, model_hparams& hp) { return r.read_common(hp, rope_kind::neox); }

void tensors(const model_hparams& hp, model_weights& w, tensor_table& t) {
  dense_layout o;
  o.qkv_bias = true;
  dense_tensors(hp, w, t, o);
}

void layer(blocks& b, int il) { pre_norm_layer(b, il, ffn_activation::silu); }

}  // namespace

extern const arch_def arch_qwen2{"qwen2", read, tensors, layer};

}  // namespace cortex
