// vpdpbusd with the accumulator kept in its register, for the batched
// (verify-step, prefill) kernels. GCC 12 compiles _mm512_dpbusd_epi32 in
// unrolled tiles into a copy of the accumulator to a scratch register, the
// vpdpbusd there, and a copy back: two extra moves per one or two vpdpbusd
// in the q4_0 batched kernel. The asm ties the accumulator operand, so no
// copies are made.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace cortex::kernels {
namespace {

// acc += u8 . (the 4 bytes at s8, broadcast to every lane): the broadcast is
// the instruction's memory operand (EVEX embedded broadcast), not a separate
// load into a register.
__attribute__((always_inline, target("avx512f,avx512vnni"))) inline void dpbusd_inplace_bcast(__m512i& acc, __m512i u8,
                                                                                              const void* s8) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u8), "m"(*static_cast<const int32_t*>(s8)));
}

}  // namespace
}  // namespace cortex::kernels
