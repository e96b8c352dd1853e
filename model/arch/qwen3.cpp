// qwen3: Qwen3 dense. RoPE "neox"; per-head RMS norms of q and k
// (attn_q_norm / attn_k_norm, head_dim wide) after the projections and
// before rope; no biases; head_dim from key_length (n_head * head_dim may
// differ from n_embd); tied output in the small sizes.
#include "model/arch.hpp"
#include "model/blocks.hpp"
#include "model/dense_tensors.hpp"
#include "model/hparam_reader.hpp"

namespace cortex {
namespace {

status read(hparam_reader& r, model_hparams& hp) { return r.read_common(hp, rope_kind::neox); }

void tensors(const model_hparams& hp, model_weights& w, tensor_table& t) {
  dense_layout o;
  o.qk_norm = true;
  dense_tensors(hp, w, t, o);
}

void layer(blocks& b, int il) { pre_norm_layer(b, il, ffn_activation::silu); }

}  // namespace

extern const arch_def arch_qwen3{"qwen3", read, tensors, layer};

}  // namespace cortex
