// qwen35: Qwen3.5 (dense). A hybrid stack: most layers mix tokens with a
// gated delta net (linear attention with a recurrent state per sequence,
// model/delta_net.cpp), every full_attention_interval-th layer (or those
// attention.recurrent_layers marks false) with full attention whose query
// projection also gives a per-head output gate (sigmoid), per-head q/k RMS
// norms and partial "neox" rope over rope.dimension_count dims (the file's
// IMROPE sections all carry the text position, which is neox). Pre-norm
// layers whose FFN pre-norm is stored as post_attention_norm; SwiGLU FFN.
// Multi-token-prediction layers (nextn_predict_layers) are not run.
#include "model/arch/qwen35_common.hpp"

namespace cortex {

extern const arch_def arch_qwen35{"qwen35", qwen35::read_hybrid, qwen35::hybrid_tensors, qwen35::hybrid_layer};

}  // namespace cortex
