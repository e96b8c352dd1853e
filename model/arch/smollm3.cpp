// smollm3: SmolLM3. A llama block in which every fourth layer
// ((il + 1) % 4 == 0) has no rotary embedding at all (NoPE). Nothing in the
// GGUF marks these layers: llama.cpp fixes the step at 4, and so do we.
#include "model/arch.hpp"
#include "model/dense_tensors.hpp"

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

constexpr dense_layout layout{};

}  // namespace

extern const arch_def arch_smollm3{"smollm3", read, dense_table<layout>, pre_norm_silu_layer};

}  // namespace cortex
