// The AMX instructions with the interface of kernels/amx_tiles.hpp, for
// translation units named *_amx.cpp (compiled with -mamx-tile -mamx-int8
// -mamx-bf16, kernels/CMakeLists.txt) and reached only where the run-time
// choice (kernels/amx_choice.hpp) found AMX usable.
//
// GCC's tile intrinsics are macros that paste their tile numbers into the
// instruction text (#dst), so with GCC a number must reach them as a literal
// token, never as a template parameter: each operation is an if-constexpr
// chain over the literal tile numbers, generated below. Clang's are builtins
// that take any constant (and reject equal tiles even in a discarded
// branch), so there the template parameters go straight in.
#pragma once

#if !defined(__AMX_TILE__) || !defined(__AMX_INT8__) || !defined(__AMX_BF16__)
#error "kernels/x86/amx_tiles_hw.hpp is for *_amx.cpp translation units (-mamx-tile -mamx-int8 -mamx-bf16)"
#endif

#include <immintrin.h>

#include <cstddef>

#include "kernels/amx_tiles.hpp"

#if defined(__clang__)
#define CORTEX_AMX_TMUL(op)                                                                \
  template <int C, int A, int B>                                                           \
  static void op() {                                                                       \
    static_assert(C != A && A != B && C != B, "a TMUL's three tiles differ (#UD otherwise)"); \
    _tile_##op(C, A, B);                                                                   \
  }
#else
// M(n, args...) for n = 0..7; three copies, one per operand of a TMUL (a
// macro cannot expand inside itself).
#define CORTEX_AMX_EACH_C(M, ...) \
  M(0, __VA_ARGS__) M(1, __VA_ARGS__) M(2, __VA_ARGS__) M(3, __VA_ARGS__) \
  M(4, __VA_ARGS__) M(5, __VA_ARGS__) M(6, __VA_ARGS__) M(7, __VA_ARGS__)
#define CORTEX_AMX_EACH_A(M, ...) \
  M(0, __VA_ARGS__) M(1, __VA_ARGS__) M(2, __VA_ARGS__) M(3, __VA_ARGS__) \
  M(4, __VA_ARGS__) M(5, __VA_ARGS__) M(6, __VA_ARGS__) M(7, __VA_ARGS__)
#define CORTEX_AMX_EACH_B(M, ...) \
  M(0, __VA_ARGS__) M(1, __VA_ARGS__) M(2, __VA_ARGS__) M(3, __VA_ARGS__) \
  M(4, __VA_ARGS__) M(5, __VA_ARGS__) M(6, __VA_ARGS__) M(7, __VA_ARGS__)

#define CORTEX_AMX_LOAD_IF(n, base, stride) \
  if constexpr (T == n) _tile_loadd(n, base, stride);
#define CORTEX_AMX_STORE_IF(n, base, stride) \
  if constexpr (T == n) _tile_stored(n, base, stride);
#define CORTEX_AMX_ZERO_IF(n, unused) \
  if constexpr (T == n) _tile_zero(n);
#define CORTEX_AMX_TMUL_B(b, op, c, a) \
  if constexpr (C == c && A == a && B == b) op(c, a, b);
#define CORTEX_AMX_TMUL_A(a, op, c) CORTEX_AMX_EACH_B(CORTEX_AMX_TMUL_B, op, c, a)
#define CORTEX_AMX_TMUL_C(c, op) CORTEX_AMX_EACH_A(CORTEX_AMX_TMUL_A, op, c)
#define CORTEX_AMX_TMUL(op)                                                                \
  template <int C, int A, int B>                                                           \
  static void op() {                                                                       \
    static_assert(C >= 0 && C < 8 && A >= 0 && A < 8 && B >= 0 && B < 8, "tmm0..tmm7");    \
    static_assert(C != A && A != B && C != B, "a TMUL's three tiles differ (#UD otherwise)"); \
    CORTEX_AMX_EACH_C(CORTEX_AMX_TMUL_C, _tile_##op)                                       \
  }
#endif

namespace cortex::kernels {
namespace {

struct amx_tiles_hw {
  static void configure(const amx_tile_config& c) { _tile_loadconfig(&c); }
  static void release() { _tile_release(); }
#if defined(__clang__)
  template <int T>
  static void load(const void* base, size_t stride) {
    _tile_loadd(T, base, stride);
  }
  template <int T>
  static void store(void* base, size_t stride) {
    _tile_stored(T, base, stride);
  }
  template <int T>
  static void zero() {
    _tile_zero(T);
  }
#else
  template <int T>
  static void load(const void* base, size_t stride) {
    CORTEX_AMX_EACH_C(CORTEX_AMX_LOAD_IF, base, stride)
  }
  template <int T>
  static void store(void* base, size_t stride) {
    CORTEX_AMX_EACH_C(CORTEX_AMX_STORE_IF, base, stride)
  }
  template <int T>
  static void zero() {
    CORTEX_AMX_EACH_C(CORTEX_AMX_ZERO_IF, 0)
  }
#endif
  CORTEX_AMX_TMUL(dpbssd)
  CORTEX_AMX_TMUL(dpbsud)
  CORTEX_AMX_TMUL(dpbusd)
  CORTEX_AMX_TMUL(dpbuud)
  CORTEX_AMX_TMUL(dpbf16ps)
};

}  // namespace
}  // namespace cortex::kernels

#undef CORTEX_AMX_TMUL
#if !defined(__clang__)
#undef CORTEX_AMX_TMUL_C
#undef CORTEX_AMX_TMUL_A
#undef CORTEX_AMX_TMUL_B
#undef CORTEX_AMX_ZERO_IF
#undef CORTEX_AMX_STORE_IF
#undef CORTEX_AMX_LOAD_IF
#undef CORTEX_AMX_EACH_B
#undef CORTEX_AMX_EACH_A
#undef CORTEX_AMX_EACH_C
#endif
