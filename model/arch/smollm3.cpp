// smollm3: SmolLM3. A llama block in which every fourth layer
// ((il + 1) % 4 == 0) has no rotary embedding at all (NoPE). Nothing in the
// GGUF marks these layers: llama.cpp fixes the step at 4, and so do we.
#include "model/arch.hpp"
#include "model/blocks.hpp"
#include "model/dense_tensors.hpp"
#include "model/hparam_reader.hpp"

namespace cortex {
namespace {

constexpr int no_rope_layer_step = 4;

status read(hparam_reader& r, model_hparams& hp) {
  if (auto st = r.read_common(hp, rope_kind::normal); !st) return st;
  for (int il = 0; il < hp.n_layer; ++il) {
    if ((il + 1) % no_rope_layer_step == 0) hp.attn[static_cast<size_t>(il)].rope = rope_kind::none;
  }
  return status::ok();
}

void tensors(const model_hparams& hp, model_weights& w, tensor_table& t) { dense_tensors(hp, w, t, dense_layout{}); }

void layer(blocks& b, int il) { pre_norm_layer(b, il, ffn_activation::silu); }

}  // namespace

extern const arch_def arch_smollm3{"smollm3", read, tensors, layer};

}  // namespace cortex
