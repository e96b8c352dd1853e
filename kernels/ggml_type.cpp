#include "kernels/ggml_type.hpp"

#include "kernels/quant_blocks.hpp"

namespace cortex {

ggml_type_traits type_traits(uint32_t type_id) {
  switch (static_cast<ggml_type>(type_id)) {
    case ggml_type::f32: return {"f32", 1, sizeof(float), true};
    case ggml_type::f16: return {"f16", 1, sizeof(half_bits), true};
    case ggml_type::q4_0: return {"q4_0", qk4_0, sizeof(block_q4_0), true};
    case ggml_type::q4_1: return {"q4_1", 32, sizeof(block_q4_1), true};
    case ggml_type::q5_0: return {"q5_0", 32, sizeof(block_q5_0), true};
    case ggml_type::q5_1: return {"q5_1", 32, sizeof(block_q5_1), true};
    case ggml_type::q8_0: return {"q8_0", qk8_0, sizeof(block_q8_0), true};
    // q8_1 = {d, s} halves + 32 int8; only produced at run time for dot products.
    case ggml_type::q8_1: return {"q8_1", 32, 2 * sizeof(half_bits) + 32, false};
    case ggml_type::q2_k: return {"q2_K", qk_k, sizeof(block_q2_k), true};
    case ggml_type::q3_k: return {"q3_K", qk_k, sizeof(block_q3_k), true};
    case ggml_type::q4_k: return {"q4_K", qk_k, sizeof(block_q4_k), true};
    case ggml_type::q5_k: return {"q5_K", qk_k, sizeof(block_q5_k), true};
    case ggml_type::q6_k: return {"q6_K", qk_k, sizeof(block_q6_k), true};
    case ggml_type::q8_k: return {"q8_K", qk_k, sizeof(block_q8_k), false};
    case ggml_type::i8: return {"i8", 1, 1, false};
    case ggml_type::i16: return {"i16", 1, 2, false};
    case ggml_type::i32: return {"i32", 1, 4, false};
    case ggml_type::i64: return {"i64", 1, 8, false};
    case ggml_type::f64: return {"f64", 1, 8, false};
    case ggml_type::bf16: return {"bf16", 1, sizeof(uint16_t), true};
  }
  return {nullptr, 0, 0, false};
}

}  // namespace cortex
