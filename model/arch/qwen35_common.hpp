// What Qwen3.5 dense (qwen35) and its mixture-of-experts variant
// (qwen35moe) share, for their two arch files: the hybrid stack's keys
// (delta-net sizes, which layers are recurrent, MTP layers not run), the
// tensors of both layer kinds, and the layer itself. The FFN is SwiGLU, dense
// or (moe) routed experts plus a sigmoid-gated shared expert.
#pragma once

#include <string>

#include "model/arch.hpp"
#include "model/blocks.hpp"
#include "model/hparam_reader.hpp"

namespace cortex::qwen35 {

status read_hybrid(hparam_reader& r, model_hparams& hp);
void hybrid_tensors(const model_hparams& hp, model_weights& w, tensor_table& t);
void hybrid_layer(blocks& b, int il);

}  // namespace cortex::qwen35
