// qwen2: Qwen2 / Qwen2.5. As llama with RoPE "neox" (pairs i, i + n_rot/2)
// and biases on the q, k and v projections.
#include "model/arch.hpp"
#include "model/dense_tensors.hpp"

namespace cortex {
namespace {
constexpr dense_layout layout = dense_layout{}.with(&dense_layout::qkv_bias);
}  // namespace

extern const arch_def arch_qwen2{"qwen2", read_common_keys<rope_kind::neox>, dense_table<layout>, pre_norm_silu_layer};

}  // namespace cortex
