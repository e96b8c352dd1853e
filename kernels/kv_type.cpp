#include "kernels/kv_type.hpp"

#include "kernels/quant.hpp"

namespace cortex::kernels {

namespace {

template <ggml_type T>
void store_as(const float* x, void* dst, int n) {
  quantize_row(T, x, dst, n);
}

template <ggml_type T>
void load_as(const void* src, float* y, int n) {
  dequantize_row(T, src, y, n);
}

// Indexed by kv_type. The scalar conversions are the tensor types' reference
// quantizers (kernels/quant.hpp), bit-identical to llama.cpp's *_ref ones.
const kv_type_traits k_rows[] = {
    {kv_type::f32, "f32", ggml_type::f32, 1, 4, &store_as<ggml_type::f32>, &load_as<ggml_type::f32>},
    {kv_type::f16, "f16", ggml_type::f16, 1, 2, &store_as<ggml_type::f16>, &load_as<ggml_type::f16>},
    {kv_type::bf16, "bf16", ggml_type::bf16, 1, 2, &store_as<ggml_type::bf16>, &load_as<ggml_type::bf16>},
    {kv_type::q8_0, "q8_0", ggml_type::q8_0, 32, 34, &store_as<ggml_type::q8_0>, &load_as<ggml_type::q8_0>},
};

}  // namespace

const kv_type_traits& kv_traits(kv_type t) { return k_rows[static_cast<int>(t)]; }

bool parse_kv_type(const std::string& name, kv_type& out) {
  for (const auto& r : k_rows) {
    if (name == r.name) {
      out = r.type;
      return true;
    }
  }
  return false;
}

const char* kv_type_choices() { return "f32|f16|bf16|q8_0"; }

}  // namespace cortex::kernels
