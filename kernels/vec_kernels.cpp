// The vectorised kernels (x86/vec_body.hpp) for baseline x86-64 (SSE2, 4
// floats a vec, no FMA), and the run-time choice between the ISA tables.
#include <emmintrin.h>

#include "kernels/cpu_features.hpp"
#include "kernels/x86/vec_body.hpp"

namespace cortex::kernels::detail {
namespace {

struct sse2_traits {
  using vec = __m128;
  using ivec = int32_t __attribute__((vector_size(16)));
  static constexpr int width = 4;
  static vec load(const float* p) { return _mm_loadu_ps(p); }
  static void store(float* p, vec v) { _mm_storeu_ps(p, v); }
  static vec set1(float f) { return _mm_set1_ps(f); }
  static vec fmadd(vec a, vec b, vec c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }
  static vec vmax(vec a, vec b) { return _mm_max_ps(a, b); }
  static vec vmin(vec a, vec b) { return _mm_min_ps(a, b); }
  static float hsum(vec v) {
    const vec s = _mm_add_ps(v, _mm_movehl_ps(v, v));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)));
  }
  static void hsum4(vec a, vec b, vec c, vec d, float* out) {
    out[0] = hsum(a);
    out[1] = hsum(b);
    out[2] = hsum(c);
    out[3] = hsum(d);
  }
  static float hmax(vec v) {
    const vec m = _mm_max_ps(v, _mm_movehl_ps(v, v));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
  }
  // No F16C in baseline x86-64: the scalar conversions, four at a time.
  static vec load_f16(const uint16_t* p) {
    return _mm_setr_ps(fp16_to_fp32(p[0]), fp16_to_fp32(p[1]), fp16_to_fp32(p[2]), fp16_to_fp32(p[3]));
  }
  static vec load_bf16(const uint16_t* p) {
    return _mm_setr_ps(bf16_to_fp32(p[0]), bf16_to_fp32(p[1]), bf16_to_fp32(p[2]), bf16_to_fp32(p[3]));
  }
  static vec load_i8(const int8_t* p) { return _mm_setr_ps(p[0], p[1], p[2], p[3]); }
  static ivec f16_bits(vec v) {
    float f[4];
    _mm_storeu_ps(f, v);
    return ivec{fp32_to_fp16(f[0]), fp32_to_fp16(f[1]), fp32_to_fp16(f[2]), fp32_to_fp16(f[3])};
  }
  static vec gather(const float* table, ivec idx) {
    return _mm_setr_ps(table[idx[0]], table[idx[1]], table[idx[2]], table[idx[3]]);
  }
};

}  // namespace

const vec_entries vec_entries_sse2 = make_vec_entries<sse2_traits>();

const vec_entries& active_vec_entries() {
  switch (active_isa()) {
    case isa::amx:
    case isa::avx512: return vec_entries_avx512;
    case isa::avx2: return vec_entries_avx2;
    default: return vec_entries_sse2;
  }
}

}  // namespace cortex::kernels::detail
