// qwen3: Qwen3 dense. RoPE "neox"; per-head RMS norms of q and k
// (attn_q_norm / attn_k_norm, head_dim wide) after the projections and
// before rope; no biases; head_dim from key_length (n_head * head_dim may
// differ from n_embd); tied output in the small sizes.
#include "model/arch.hpp"
#include "model/dense_tensors.hpp"

namespace cortex {
namespace {
constexpr dense_layout layout = dense_layout{}.with(&dense_layout::qk_norm);
}  // namespace

extern const arch_def arch_qwen3{"qwen3", read_common_keys<rope_kind::neox>, dense_table<layout>, pre_norm_silu_layer};

}  // namespace cortex
