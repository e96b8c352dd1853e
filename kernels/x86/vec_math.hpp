// Internal: ISA-generic per-vector math (exp, tanh, scaling, reductions) and
// the element-wise kernels of ops.cpp built on it (softmax pieces, SwiGLU,
// GeGLU, softcapping), over a traits type V. Part of vec_body.hpp: the same
// rules hold (internal linkage, include only from the per-ISA TUs, no std
// templates inside); V's contract is stated there.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace cortex::kernels::detail {
namespace {

// exp(x) to ~2 ulp: Cody-Waite range reduction, degree-5 polynomial (Cephes
// expf coefficients), exponent built by integer shift. x >= 88 saturates to
// exp(88); x < -87.33 (including -inf) gives exactly 0; NaN gives 0.
template <class V>
inline typename V::vec exp_v(typename V::vec x) {
  using vec = typename V::vec;
  using ivec = typename V::ivec;
  const vec magic = V::set1(12582912.0f);  // 1.5 * 2^23: adding it rounds to integer
  const vec xc = V::vmin(V::vmax(x, V::set1(-87.0f)), V::set1(88.0f));
  const vec t = V::fmadd(xc, V::set1(1.44269504088896341f), magic);
  const vec n = t - magic;
  vec r = V::fmadd(n, V::set1(-0.693359375f), xc);
  r = V::fmadd(n, V::set1(2.12194440e-4f), r);
  vec p = V::set1(1.9875691500e-4f);
  p = V::fmadd(p, r, V::set1(1.3981999507e-3f));
  p = V::fmadd(p, r, V::set1(8.3334519073e-3f));
  p = V::fmadd(p, r, V::set1(4.1665795894e-2f));
  p = V::fmadd(p, r, V::set1(1.6666665459e-1f));
  p = V::fmadd(p, r, V::set1(5.0000001201e-1f));
  p = V::fmadd(p, r * r, r + V::set1(1.0f));
  const ivec ni = reinterpret_cast<ivec>(t) - static_cast<int32_t>(0x4B400000);
  const vec pow2n = reinterpret_cast<vec>((ni + 127) << 23);
  const ivec keep = x >= V::set1(-87.33654f);
  return reinterpret_cast<vec>(reinterpret_cast<ivec>(p * pow2n) & keep);
}

// tanh(x) to ~2 ulp (Cephes tanhf): for |x| < 0.625 an odd polynomial,
// above 1 - 2 / (exp(2|x|) + 1) with the sign of x, which needs no care for
// large |x| (exp_v saturates, so |x| >= 44 gives exactly +-1). NaN stays NaN.
template <class V>
inline typename V::vec tanh_v(typename V::vec x) {
  using vec = typename V::vec;
  using ivec = typename V::ivec;
  const ivec sign_bit = ivec{} + static_cast<int32_t>(0x80000000u);
  const ivec sign = reinterpret_cast<ivec>(x) & sign_bit;
  const vec ax = reinterpret_cast<vec>(reinterpret_cast<ivec>(x) & ~sign_bit);
  const vec one = V::set1(1.0f);
  const vec big = one - V::set1(2.0f) / (exp_v<V>(ax + ax) + one);
  const vec z = ax * ax;
  vec p = V::set1(-5.70498872745e-3f);
  p = V::fmadd(p, z, V::set1(2.06390887954e-2f));
  p = V::fmadd(p, z, V::set1(-5.37397155531e-2f));
  p = V::fmadd(p, z, V::set1(1.33314422036e-1f));
  p = V::fmadd(p, z, V::set1(-3.33332819422e-1f));
  const vec small = V::fmadd(p * z, ax, ax);
  const ivec use_big = ax >= V::set1(0.625f);  // false for NaN: small is NaN
  const ivec r = (reinterpret_cast<ivec>(big) & use_big) | (reinterpret_cast<ivec>(small) & ~use_big);
  return reinterpret_cast<vec>(r | sign);
}

template <class V>
void scale_v(const float* x, float a, float* out, int n) {
  constexpr int w = V::width;
  const typename V::vec va = V::set1(a);
  int i = 0;
  for (; i + w <= n; i += w) V::store(out + i, V::load(x + i) * va);
  for (; i < n; ++i) out[i] = x[i] * a;
}

template <class V>
float max_v(const float* x, int n) {
  constexpr int w = V::width;
  float m = x[0];
  int i = 0;
  if (n >= w) {
    typename V::vec vm = V::load(x);
    for (i = w; i + w <= n; i += w) vm = V::vmax(vm, V::load(x + i));
    m = V::hmax(vm);
  }
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

// Per-vector partial sums in float, accumulated in double (as ggml's
// ggml_vec_soft_max_f32 does).
template <class V>
double exp_shift_sum_v(const float* x, float* out, int n, float shift) {
  using vec = typename V::vec;
  constexpr int w = V::width;
  const vec vs = V::set1(shift);
  double sum = 0.0;
  int i = 0;
  for (; i + w <= n; i += w) {
    const vec e = exp_v<V>(V::load(x + i) - vs);
    if (out) V::store(out + i, e);
    sum += static_cast<double>(V::hsum(e));
  }
  if (i < n) {
    float tail[V::width];
    for (int j = 0; j < w; ++j) tail[j] = i + j < n ? x[i + j] - shift : -INFINITY;
    V::store(tail, exp_v<V>(V::load(tail)));
    for (int j = 0; i + j < n; ++j) {
      if (out) out[i + j] = tail[j];
      sum += static_cast<double>(tail[j]);
    }
  }
  return sum;
}

template <class V>
void silu_mul_v(const float* gate, const float* up, float* out, int n) {
  using vec = typename V::vec;
  constexpr int w = V::width;
  const vec one = V::set1(1.0f);
  int i = 0;
  for (; i + w <= n; i += w) {
    const vec g = V::load(gate + i);
    const vec u = V::load(up + i);
    V::store(out + i, g / (one + exp_v<V>(V::set1(0.0f) - g)) * u);
  }
  for (; i < n; ++i) out[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}

// gelu_tanh(g) = 0.5 g (1 + tanh(y)) = g * sigmoid(t), t = 2y = 2 sqrt(2/pi)
// (g + 0.044715 g^3): the sigmoid form needs no tanh and does not cancel for
// negative g, where 1 + tanh(y) would lose every digit. sigmoid(t) = num /
// (1 + e) with e = exp(-|t|) and num = 1 (t >= 0) or e (t < 0) never
// overflows; for g below about -10 it gives 0 (the value is under 2e-37).
template <class V>
void gelu_mul_v(const float* gate, const float* up, float* out, int n) {
  using vec = typename V::vec;
  using ivec = typename V::ivec;
  constexpr int w = V::width;
  constexpr float c1 = 1.5957691216057308f;   // 2 sqrt(2/pi)
  constexpr float c3 = 0.07135481627260025f;  // 2 sqrt(2/pi) 0.044715
  const vec one = V::set1(1.0f), vc1 = V::set1(c1), vc3 = V::set1(c3);
  const ivec abs_mask = ivec{} + 0x7FFFFFFF;
  int i = 0;
  for (; i + w <= n; i += w) {
    const vec g = V::load(gate + i);
    const vec u = V::load(up + i);
    const vec t = g * V::fmadd(g * g, vc3, vc1);
    const vec e = exp_v<V>(V::set1(0.0f) - reinterpret_cast<vec>(reinterpret_cast<ivec>(t) & abs_mask));
    const ivec neg = t < V::set1(0.0f);
    const vec num = reinterpret_cast<vec>((reinterpret_cast<ivec>(e) & neg) | (reinterpret_cast<ivec>(one) & ~neg));
    V::store(out + i, g * (num / (one + e)) * u);
  }
  for (; i < n; ++i) {
    const float g = gate[i];
    const float t = g * (g * g * c3 + c1);
    const float e = expf(-fabsf(t));
    out[i] = g * ((t < 0.0f ? e : 1.0f) / (1.0f + e)) * up[i];
  }
}

// ggml's half-precision GELU (gelu_fp16_table in ops.hpp) over `table`, the
// 65536 table entries widened to float: x rounded to half (nearest even, as
// F16C does) indexes it; x <= -10 gives 0 and x >= 10 gives x. Every element,
// the tail included, takes the same steps, so the bits equal the scalar
// lookup's.
template <class V>
void gelu_table_v(const float* table, const float* x, float* out, int n) {
  using vec = typename V::vec;
  using ivec = typename V::ivec;
  constexpr int w = V::width;
  const vec lo = V::set1(-10.0f), hi = V::set1(10.0f);
  const auto one_vec = [&](vec v) {
    const ivec below = v <= lo, above = v >= hi;
    const vec looked = V::gather(table, V::f16_bits(v));
    const ivec mid = reinterpret_cast<ivec>(looked) & ~(below | above);
    return reinterpret_cast<vec>(mid | (reinterpret_cast<ivec>(v) & above));
  };
  int i = 0;
  for (; i + w <= n; i += w) V::store(out + i, one_vec(V::load(x + i)));
  if (i < n) {
    float tail[V::width];
    for (int j = 0; j < w; ++j) tail[j] = i + j < n ? x[i + j] : 0.0f;
    V::store(tail, one_vec(V::load(tail)));
    for (int j = 0; i + j < n; ++j) out[i + j] = tail[j];
  }
}

// Reads p[0, n) (n a multiple of 4 * 2 * width) as four streams, one per
// quarter, two full-width loads from each per pass: the access pattern of
// the decode kernels, which read four 16-row weight panels at a time. The
// xor of everything read, so no load can be dropped. For the bandwidth probe.
template <class V>
uint32_t read_streams_v(const float* p, size_t n) {
  using ivec = typename V::ivec;
  constexpr size_t w = V::width;
  const size_t q = n / 4;
  const float *s0 = p, *s1 = p + q, *s2 = p + 2 * q, *s3 = p + 3 * q;
  ivec a0{}, a1{}, a2{}, a3{}, a4{}, a5{}, a6{}, a7{};
  for (size_t i = 0; i + 2 * w <= q; i += 2 * w) {
    a0 ^= reinterpret_cast<ivec>(V::load(s0 + i));
    a1 ^= reinterpret_cast<ivec>(V::load(s0 + i + w));
    a2 ^= reinterpret_cast<ivec>(V::load(s1 + i));
    a3 ^= reinterpret_cast<ivec>(V::load(s1 + i + w));
    a4 ^= reinterpret_cast<ivec>(V::load(s2 + i));
    a5 ^= reinterpret_cast<ivec>(V::load(s2 + i + w));
    a6 ^= reinterpret_cast<ivec>(V::load(s3 + i));
    a7 ^= reinterpret_cast<ivec>(V::load(s3 + i + w));
  }
  const ivec a = a0 ^ a1 ^ a2 ^ a3 ^ a4 ^ a5 ^ a6 ^ a7;
  uint32_t r = 0;
  for (size_t j = 0; j < w; ++j) r ^= static_cast<uint32_t>(a[j]);
  return r;
}

// x (n,) in place: x = cap * tanh(x / cap). The tail goes through tanh_v too,
// so every element gets the same function.
template <class V>
void softcap_v(float* x, int n, float cap) {
  using vec = typename V::vec;
  constexpr int w = V::width;
  const vec vcap = V::set1(cap), inv = V::set1(1.0f / cap);
  int i = 0;
  for (; i + w <= n; i += w) V::store(x + i, vcap * tanh_v<V>(V::load(x + i) * inv));
  if (i < n) {
    float tail[V::width];
    for (int j = 0; j < w; ++j) tail[j] = i + j < n ? x[i + j] : 0.0f;
    V::store(tail, vcap * tanh_v<V>(V::load(tail) * inv));
    for (int j = 0; i + j < n; ++j) x[i + j] = tail[j];
  }
}

}  // namespace
}  // namespace cortex::kernels::detail
