// Internal: ISA-generic bodies of the vectorised kernels, written once over a
// traits type V and compiled once per ISA by vec_kernels.cpp,
// x86/vec_avx2.cpp and x86/vec_avx512.cpp, and the table (vec_entries.hpp)
// each of them builds. The bodies live in vec_math.hpp (exp, tanh, softmax
// pieces, SwiGLU, GeGLU, softcapping) and attn_body.hpp (paged attention).
//
// Everything here has internal linkage (anonymous namespace) on purpose: the
// same template compiled with -mavx512f in one TU and for baseline x86-64 in
// another must never be merged by the linker. Include this file only from
// those TUs, after defining V, and use no std templates inside.
//
// V provides (all static, all inline):
//   vec, ivec     GCC vector types of `width` floats / int32 (vector ops work)
//   width         floats per vec
//   load(p), store(p, v), set1(f), fmadd(a, b, c) = a*b+c,
//   vmax(a, b), vmin(a, b), hsum(v), hmax(v), hsum4(a, b, c, d, out) (out[0..3]
//   = hsum of each),
//   load_f16(p), load_bf16(p) (width halves / bfloat16 at p, widened),
//   load_i8(p) (width int8 at p, converted),
//   f16_bits(v) (each lane rounded to half, nearest even, its 16 bits
//   zero-extended), gather(table, idx) (table[idx[j]] in lane j)
#pragma once

#include "kernels/x86/attn_body.hpp"
#include "kernels/x86/vec_entries.hpp"
#include "kernels/x86/vec_math.hpp"

namespace cortex::kernels::detail {
namespace {

template <class V>
constexpr vec_entries make_vec_entries() {
  return vec_entries{&attention_paged_v<V>, &exp_shift_sum_v<V>, &max_v<V>, &scale_v<V>,
                     &silu_mul_v<V>,        &gelu_mul_v<V>,      &softcap_v<V>,
                     &gelu_table_v<V>,      &read_streams_v<V>};
}

}  // namespace
}  // namespace cortex::kernels::detail
