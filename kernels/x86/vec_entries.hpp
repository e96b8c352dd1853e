// Internal: the vectorised kernels of ops.cpp and attention.cpp, one table per
// instruction set. Each table is built in its own translation unit from the
// same generic body (vec_body.hpp), compiled for that ISA:
//   vec_kernels.cpp (baseline SSE2), x86/vec_avx2.cpp, x86/vec_avx512.cpp.
// Callers go through active_vec_entries(), which follows active_isa().
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/attention.hpp"

namespace cortex::kernels::detail {

struct vec_entries {
  // See attention_paged in attention.hpp.
  void (*attention_paged)(const attention_args& a);
  // x (n,) -> out (n,): out[i] = exp(x[i] - shift); returns the sum of the
  // outputs accumulated in double. out may be nullptr (sum only) or alias x.
  double (*exp_shift_sum)(const float* x, float* out, int n, float shift);
  // max of x (n,); REQUIRES n > 0.
  float (*max)(const float* x, int n);
  // out (n,) = x (n,) * a; out may alias x.
  void (*scale)(const float* x, float a, float* out, int n);
  // See silu_mul in ops.hpp.
  void (*silu_mul)(const float* gate, const float* up, float* out, int n);
  // See gelu_mul in ops.hpp.
  void (*gelu_mul)(const float* gate, const float* up, float* out, int n);
  // See softcap_inplace in ops.hpp.
  void (*softcap)(float* x, int n, float cap);
  // See gelu_fp16_table in ops.hpp; table: the 65536 half results as floats.
  void (*gelu_table)(const float* table, const float* x, float* out, int n);
  // See read_streams_v in vec_math.hpp (the bandwidth probe's loop).
  uint32_t (*read_streams)(const float* p, size_t n);
};

extern const vec_entries vec_entries_sse2;
extern const vec_entries vec_entries_avx2;
extern const vec_entries vec_entries_avx512;

// The table for the ISA chosen at run time (cpu_features.hpp).
const vec_entries& active_vec_entries();

}  // namespace cortex::kernels::detail
