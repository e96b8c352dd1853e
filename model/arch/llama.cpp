// llama: Llama 1-3, Mistral, TinyLlama and the many files converted as
// "llama". RoPE "normal" (adjacent pairs), GQA, SwiGLU, tied output when the
// file has no output.weight, Llama 3.1's rope_freqs where present.
#include "model/arch.hpp"
#include "model/dense_tensors.hpp"

namespace cortex {
namespace {
constexpr dense_layout layout{};
}  // namespace

extern const arch_def arch_llama{"llama", read_common_keys<rope_kind::normal>, dense_table<layout>, pre_norm_silu_layer};

}  // namespace cortex
