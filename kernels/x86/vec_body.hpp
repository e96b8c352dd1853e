// Internal: ISA-generic bodies of the vectorised kernels (exp, softmax pieces,
// SwiGLU, paged attention), written once over a traits type V and compiled
// once per ISA by vec_kernels.cpp, x86/vec_avx2.cpp and x86/vec_avx512.cpp.
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
//   load_i8(p) (width int8 at p, converted)
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/attention.hpp"
#include "kernels/fp16.hpp"
#include "kernels/x86/vec_entries.hpp"

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

template <class V>
float dot_v(const float* a, const float* b, int n) {
  using vec = typename V::vec;
  constexpr int w = V::width;
  vec s0 = V::set1(0.0f), s1 = V::set1(0.0f);
  int i = 0;
  for (; i + 2 * w <= n; i += 2 * w) {
    s0 = V::fmadd(V::load(a + i), V::load(b + i), s0);
    s1 = V::fmadd(V::load(a + i + w), V::load(b + i + w), s1);
  }
  for (; i + w <= n; i += w) s0 = V::fmadd(V::load(a + i), V::load(b + i), s0);
  float s = V::hsum(s0 + s1);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

// out[c] = a . b_c for the 4 vectors b_c = b + c * stride (n,): one pass over
// a, and one 4-way horizontal sum (V::hsum4) instead of four.
template <class V>
void dot4_v(const float* a, const float* b, size_t stride, int n, float* out) {
  using vec = typename V::vec;
  constexpr int w = V::width;
  vec s0 = V::set1(0.0f), s1 = V::set1(0.0f), s2 = V::set1(0.0f), s3 = V::set1(0.0f);
  int i = 0;
  for (; i + w <= n; i += w) {
    const vec x = V::load(a + i);
    s0 = V::fmadd(x, V::load(b + i), s0);
    s1 = V::fmadd(x, V::load(b + stride + i), s1);
    s2 = V::fmadd(x, V::load(b + 2 * stride + i), s2);
    s3 = V::fmadd(x, V::load(b + 3 * stride + i), s3);
  }
  V::hsum4(s0, s1, s2, s3, out);
  for (; i < n; ++i) {
    for (int c = 0; c < 4; ++c) out[c] += a[i] * b[c * stride + i];
  }
}

// y (n,) += sum_j a[j] * x_j (n,) for j < m, x_j = x + j * stride. y stays in
// registers across the m updates (4 vecs at a time), instead of m round trips
// through memory.
template <class V>
void axpy_many_v(float* y, const float* a, const float* x, size_t stride, int m, int n) {
  using vec = typename V::vec;
  constexpr int w = V::width;
  int i = 0;
  for (; i + 4 * w <= n; i += 4 * w) {
    vec y0 = V::load(y + i), y1 = V::load(y + i + w);
    vec y2 = V::load(y + i + 2 * w), y3 = V::load(y + i + 3 * w);
    for (int j = 0; j < m; ++j) {
      const vec aj = V::set1(a[j]);
      const float* xj = x + j * stride + i;
      y0 = V::fmadd(aj, V::load(xj), y0);
      y1 = V::fmadd(aj, V::load(xj + w), y1);
      y2 = V::fmadd(aj, V::load(xj + 2 * w), y2);
      y3 = V::fmadd(aj, V::load(xj + 3 * w), y3);
    }
    V::store(y + i, y0);
    V::store(y + i + w, y1);
    V::store(y + i + 2 * w, y2);
    V::store(y + i + 3 * w, y3);
  }
  for (; i + w <= n; i += w) {
    vec y0 = V::load(y + i);
    for (int j = 0; j < m; ++j) y0 = V::fmadd(V::set1(a[j]), V::load(x + j * stride + i), y0);
    V::store(y + i, y0);
  }
  for (; i < n; ++i) {
    float acc = y[i];
    for (int j = 0; j < m; ++j) acc += a[j] * x[j * stride + i];
    y[i] = acc;
  }
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

// ---- paged attention ----------------------------------------------------

constexpr int attn_max_head_dim = 256;
constexpr int attn_tile_rows = 32;  // (query, head) rows processed together
constexpr int attn_chunk = 32;      // positions scored at once (<= one block)

// State of one tile: up to attn_tile_rows rows, each a (query, head) pair,
// with its online-softmax running max m, sum l and the unnormalised output
// acc (head_dim,). Rows of the same KV head share each K/V chunk: it is read
// from the arena once (and widened to f32 once, into kbuf / vbuf, when the
// cache is not f32), then from L1 for the other rows.
struct attn_tile {
  const float* q[attn_tile_rows];
  float* out[attn_tile_rows];
  float* lse[attn_tile_rows];  // nullptr: not asked for
  int kv_head[attn_tile_rows];
  int limit[attn_tile_rows];  // last position the row attends to
  float m[attn_tile_rows];
  float l[attn_tile_rows];
  alignas(64) float acc[attn_tile_rows][attn_max_head_dim];
  alignas(64) float s[attn_chunk];
  alignas(64) float kbuf[attn_chunk * attn_max_head_dim];  // (n, head_dim) widened K rows
  alignas(64) float vbuf[attn_chunk * attn_max_head_dim];
  // attn_slab_run: rows in vector lanes (at most 32: two slabs of 16).
  alignas(64) float slab_q[attn_max_head_dim * 32];    // [d][lane] queries
  alignas(64) float slab_acc[attn_max_head_dim * 32];  // [d][lane] unnormalised outputs
  alignas(64) float slab_p[attn_chunk * 32];           // [key][lane] scores, then weights
};

// n rows of head_dim values stored as t (row r at src + r * stride bytes)
// -> dst (n, head_dim) f32. The SIMD twin of kv_traits(t).load_row.
template <class V>
void kv_widen_rows_v(kv_type t, const uint8_t* src, size_t stride, int n, int head_dim, float* dst) {
  constexpr int w = V::width;
  for (int r = 0; r < n; ++r, src += stride, dst += head_dim) {
    int d = 0;
    if (t == kv_type::f16 || t == kv_type::bf16) {
      const auto* h = reinterpret_cast<const uint16_t*>(src);
      if (t == kv_type::f16) {
        for (; d + w <= head_dim; d += w) V::store(dst + d, V::load_f16(h + d));
        for (; d < head_dim; ++d) dst[d] = fp16_to_fp32(h[d]);
      } else {
        for (; d + w <= head_dim; d += w) V::store(dst + d, V::load_bf16(h + d));
        for (; d < head_dim; ++d) dst[d] = bf16_to_fp32(h[d]);
      }
    } else if (t == kv_type::q8_0) {
      // Blocks of 34 bytes: f16 scale, then 32 int8 codes.
      for (const uint8_t* b = src; d < head_dim; d += 32, b += 34) {
        const typename V::vec scale = V::set1(fp16_to_fp32(static_cast<uint16_t>(b[0] | b[1] << 8)));
        const auto* qs = reinterpret_cast<const int8_t*>(b + 2);
        for (int j = 0; j < 32; j += w) V::store(dst + d + j, V::load_i8(qs + j) * scale);
      }
    } else {
      const auto* f = reinterpret_cast<const float*>(src);
      for (; d + w <= head_dim; d += w) V::store(dst + d, V::load(f + d));
      for (; d < head_dim; ++d) dst[d] = f[d];
    }
  }
}

// Folds positions [p, p + n) (n <= attn_chunk, all in one block; k, v point
// at position p's head and advance by stride floats) into row r of the tile.
template <class V>
void attn_row_update(attn_tile& t, int r, const float* k, const float* v, size_t stride, int n,
                     int head_dim, float scale) {
  float* s = t.s;
  int j = 0;
  for (; j + 4 <= n; j += 4) dot4_v<V>(t.q[r], k + j * stride, stride, head_dim, s + j);
  for (; j < n; ++j) s[j] = dot_v<V>(t.q[r], k + j * stride, head_dim);
  scale_v<V>(s, scale, s, n);
  const float chunk_max = max_v<V>(s, n);
  const float m_old = t.m[r];
  const float m_new = chunk_max > m_old ? chunk_max : m_old;
  const float sum = static_cast<float>(exp_shift_sum_v<V>(s, s, n, m_new));
  float* acc = t.acc[r];
  if (m_new != m_old) {
    // m_old == -inf on the first chunk: acc and l are still zero.
    const float alpha = m_old == -INFINITY ? 0.0f : expf(m_old - m_new);
    scale_v<V>(acc, alpha, acc, head_dim);
    t.l[r] *= alpha;
  }
  t.l[r] += sum;
  axpy_many_v<V>(acc, s, v, stride, n, head_dim);
  t.m[r] = m_new;
}

// Positions taken at once from p: up to attn_chunk, within p's block, before p_end.
inline int attn_chunk_at(int p, int block_size, int p_end) {
  int n = block_size - p % block_size;
  n = n < attn_chunk ? n : attn_chunk;
  return n < p_end - p ? n : p_end - p;
}

// Where the K / V rows of positions [p, p + n) of KV head g are read from
// (n <= attn_chunk, all in one block): the arena itself (f32, stride slot
// floats) or, for other types, the tile's buffers after widening (stride
// head_dim).
struct kv_chunk {
  const float* k;
  const float* v;
  size_t stride;
};

template <class V>
kv_chunk load_kv_chunk(attn_tile& t, const attention_args& a, int p, int n, int g) {
  const kv_layout& layout = a.layout;
  const size_t slot_bytes = layout.slot_bytes();
  const size_t base = (static_cast<size_t>(a.block_table[p / layout.block_size]) * layout.block_size +
                       p % layout.block_size) * slot_bytes + static_cast<size_t>(g) * layout.row_bytes();
  const auto* kb = static_cast<const uint8_t*>(a.k_arena) + base;
  const auto* vb = static_cast<const uint8_t*>(a.v_arena) + base;
  if (layout.type == kv_type::f32) {
    return {reinterpret_cast<const float*>(kb), reinterpret_cast<const float*>(vb), slot_bytes / sizeof(float)};
  }
  kv_widen_rows_v<V>(layout.type, kb, slot_bytes, n, layout.head_dim, t.kbuf);
  kv_widen_rows_v<V>(layout.type, vb, slot_bytes, n, layout.head_dim, t.vbuf);
  return {t.kbuf, t.vbuf, static_cast<size_t>(layout.head_dim)};
}

template <class V>
void attn_tile_run(attn_tile& t, int n_rows, const attention_args& a) {
  const kv_layout& layout = a.layout;
  const int head_dim = layout.head_dim;
  const int bs = layout.block_size;
  int last = -1;
  int heads[attn_tile_rows];  // distinct KV heads of the rows, in order
  int n_kv = 0;
  for (int r = 0; r < n_rows; ++r) {
    t.m[r] = -INFINITY;
    t.l[r] = 0.0f;
    for (int d = 0; d < head_dim; ++d) t.acc[r][d] = 0.0f;
    last = t.limit[r] > last ? t.limit[r] : last;
    bool seen = false;
    for (int j = 0; j < n_kv; ++j) seen = seen || heads[j] == t.kv_head[r];
    if (!seen) heads[n_kv++] = t.kv_head[r];
  }
  const int p_end = last + 1 < a.key_end ? last + 1 : a.key_end;
  for (int p = a.key_begin; p < p_end;) {
    const int n = attn_chunk_at(p, bs, p_end);
    for (int j = 0; j < n_kv; ++j) {
      const int g = heads[j];
      bool needed = false;
      for (int r = 0; r < n_rows; ++r) needed = needed || (t.kv_head[r] == g && p <= t.limit[r]);
      if (!needed) continue;
      const kv_chunk c = load_kv_chunk<V>(t, a, p, n, g);
      for (int r = 0; r < n_rows; ++r) {
        if (t.kv_head[r] != g || p > t.limit[r]) continue;
        const int n_row = n < t.limit[r] + 1 - p ? n : t.limit[r] + 1 - p;
        attn_row_update<V>(t, r, c.k, c.v, c.stride, n_row, head_dim, a.scale);
      }
    }
    p += n;
  }
  for (int r = 0; r < n_rows; ++r) {
    // A row with no position in [key_begin, key_end) (a key-range part past
    // its query) contributes nothing to a merge: out 0, lse -inf.
    const bool none = t.l[r] == 0.0f;
    scale_v<V>(t.acc[r], none ? 0.0f : 1.0f / t.l[r], t.out[r], head_dim);
    if (t.lse[r]) *t.lse[r] = none ? -INFINITY : t.m[r] + logf(t.l[r]);
  }
}

// Unrolling of attn_slab_run: NS slabs of V::width rows, KU keys of scores
// and DU output dimensions at a time, so that KU * NS (DU * NS) accumulators
// plus operands fit the register file (32 vectors with AVX-512, 16 below).
template <class V>
constexpr int slab_count = V::width >= 16 ? 2 : 1;
template <class V>
constexpr int slab_unroll = 8;

// Scores of keys j .. j + KU - 1 for NS slabs: pb[(key * NS + z) * W] =
// sum_d qT[d][z] * k_key[d] (unscaled).
template <class V, int NS, int KU>
inline void slab_scores(const float* qT, const kv_chunk& c, int j, int hd, float* pb) {
  using vec = typename V::vec;
  constexpr int W = V::width;
  vec s[KU][NS];
  for (int u = 0; u < KU; ++u)
    for (int z = 0; z < NS; ++z) s[u][z] = V::set1(0.0f);
  for (int d = 0; d < hd; ++d) {
    vec qd[NS];
    for (int z = 0; z < NS; ++z) qd[z] = V::load(qT + (d * NS + z) * W);
    for (int u = 0; u < KU; ++u) {
      const vec kd = V::set1(c.k[(j + u) * c.stride + d]);
      for (int z = 0; z < NS; ++z) s[u][z] = V::fmadd(qd[z], kd, s[u][z]);
    }
  }
  for (int u = 0; u < KU; ++u)
    for (int z = 0; z < NS; ++z) V::store(pb + ((j + u) * NS + z) * W, s[u][z]);
}

// Output dimensions d0 .. d0 + DU - 1 of NS slabs: accT = accT * alpha +
// sum over the chunk's n keys of weight * v_key.
template <class V, int NS, int DU>
inline void slab_output(float* accT, const float* pb, const kv_chunk& c, int d0, int n,
                        const typename V::vec (&alpha)[NS]) {
  using vec = typename V::vec;
  constexpr int W = V::width;
  vec o[DU][NS];
  for (int u = 0; u < DU; ++u)
    for (int z = 0; z < NS; ++z) o[u][z] = V::load(accT + ((d0 + u) * NS + z) * W) * alpha[z];
  for (int j = 0; j < n; ++j) {
    vec pj[NS];
    for (int z = 0; z < NS; ++z) pj[z] = V::load(pb + (j * NS + z) * W);
    const float* vj = c.v + j * c.stride + d0;
    for (int u = 0; u < DU; ++u) {
      const vec vd = V::set1(vj[u]);
      for (int z = 0; z < NS; ++z) o[u][z] = V::fmadd(pj[z], vd, o[u][z]);
    }
  }
  for (int u = 0; u < DU; ++u)
    for (int z = 0; z < NS; ++z) V::store(accT + ((d0 + u) * NS + z) * W, o[u][z]);
}

// Rows r0 .. r0 + n_rows - 1 of the tile (n_rows <= NS * V::width), all
// reading KV head g, one row per vector lane, NS vectors ("slabs") of rows
// side by side. A key's scores for a slab are one vector: head_dim FMAs of
// the transposed queries with the key's values broadcast, and each broadcast
// feeds all NS slabs. The online softmax is lane-wise (no horizontal
// reductions), and the output accumulates transposed: head_dim vectors per
// slab, each the same dimension of every row. Each row computes what
// attn_row_update does (the scaled dot, the running max, exp of the shifted
// scores, the rescaled sum and output), in another summation order.
// Prefill chunks and verify steps (many rows per KV head) spend most of
// their attention time here.
template <class V, int NS>
void attn_slab_run(attn_tile& t, int r0, int n_rows, int g, const attention_args& a) {
  using vec = typename V::vec;
  using ivec = typename V::ivec;
  constexpr int W = V::width;
  constexpr int L = NS * W;  // lanes
  static_assert(L <= 32, "slab buffers hold 32 lanes");
  constexpr int KU = slab_unroll<V>, DU = slab_unroll<V>;
  const int hd = a.layout.head_dim;
  const int bs = a.layout.block_size;
  // [d][slab][lane]: the NS vectors of one dimension (or key) are adjacent.
  float* qT = t.slab_q;
  float* accT = t.slab_acc;
  float* pb = t.slab_p;
  alignas(64) int32_t lim[L];
  int last = -1;
  for (int lane = 0; lane < L; ++lane) {
    const bool live = lane < n_rows;
    lim[lane] = live ? t.limit[r0 + lane] : -1;  // a padding lane attends to nothing
    last = lim[lane] > last ? lim[lane] : last;
    for (int d = 0; d < hd; ++d) qT[d * L + lane] = live ? t.q[r0 + lane][d] : 0.0f;
  }
  const vec scale = V::set1(a.scale), ninf = V::set1(-INFINITY), zero = V::set1(0.0f);
  for (int d = 0; d < hd * NS; ++d) V::store(accT + d * W, zero);
  ivec limv[NS];
  vec m[NS], l[NS];
  for (int z = 0; z < NS; ++z) {
    __builtin_memcpy(&limv[z], lim + z * W, sizeof(ivec));
    m[z] = ninf;
    l[z] = zero;
  }
  const int p_end = last + 1 < a.key_end ? last + 1 : a.key_end;
  for (int p = a.key_begin; p < p_end;) {
    const int n = attn_chunk_at(p, bs, p_end);
    const kv_chunk c = load_kv_chunk<V>(t, a, p, n, g);
    // Scores: KU keys at a time (KU * NS independent FMA chains), then 4,
    // then 1: a lone key's NS chains wait on FMA latency.
    int j = 0;
    for (; j + KU <= n; j += KU) slab_scores<V, NS, KU>(qT, c, j, hd, pb);
    if constexpr (KU > 4) {
      for (; j + 4 <= n; j += 4) slab_scores<V, NS, 4>(qT, c, j, hd, pb);
    }
    for (; j < n; ++j) slab_scores<V, NS, 1>(qT, c, j, hd, pb);
    vec alpha[NS];
    for (int z = 0; z < NS; ++z) {
      // Scale, causal mask, running max.
      vec cmax = ninf;
      for (j = 0; j < n; ++j) {
        float* pj = pb + (j * NS + z) * W;
        const vec sj = V::load(pj) * scale;
        const ivec masked = (ivec{} + (p + j)) > limv[z];
        const vec sm =
            reinterpret_cast<vec>((reinterpret_cast<ivec>(sj) & ~masked) | (reinterpret_cast<ivec>(ninf) & masked));
        V::store(pj, sm);
        cmax = V::vmax(cmax, sm);
      }
      const vec m_new = V::vmax(m[z], cmax);
      // exp_v gives 0 for -inf and for NaN (-inf - -inf: a lane with nothing
      // attended yet), so such lanes keep l = 0 and an all-zero output.
      alpha[z] = exp_v<V>(m[z] - m_new);
      vec sum = zero;
      for (j = 0; j < n; ++j) {
        float* pj = pb + (j * NS + z) * W;
        const vec e = exp_v<V>(V::load(pj) - m_new);
        V::store(pj, e);
        sum = sum + e;
      }
      l[z] = V::fmadd(l[z], alpha[z], sum);
      m[z] = m_new;
    }
    // Output: DU dimensions of every slab stay in registers across the keys.
    int d0 = 0;
    for (; d0 + DU <= hd; d0 += DU) slab_output<V, NS, DU>(accT, pb, c, d0, n, alpha);
    if constexpr (DU > 4) {
      for (; d0 + 4 <= hd; d0 += 4) slab_output<V, NS, 4>(accT, pb, c, d0, n, alpha);
    }
    for (; d0 < hd; ++d0) slab_output<V, NS, 1>(accT, pb, c, d0, n, alpha);
    p += n;
  }
  alignas(64) float lv[L], mv[L];
  for (int z = 0; z < NS; ++z) {
    V::store(lv + z * W, l[z]);
    V::store(mv + z * W, m[z]);
  }
  for (int lane = 0; lane < n_rows; ++lane) {
    // A row with no position in [key_begin, key_end) (a key-range part past
    // its query) contributes nothing to a merge: out 0, lse -inf.
    const bool none = lv[lane] == 0.0f;
    const float inv = none ? 0.0f : 1.0f / lv[lane];
    float* out = t.out[r0 + lane];
    for (int d = 0; d < hd; ++d) out[d] = accT[d * L + lane] * inv;
    if (t.lse[r0 + lane]) *t.lse[r0 + lane] = none ? -INFINITY : mv[lane] + logf(lv[lane]);
  }
}

// Runs rows (i, h) for i in [0, n_q), h in [h_lo, h_hi), query-major, in
// tiles of attn_tile_rows.
template <class V>
void attn_rows_run(attn_tile& tile, const attention_args& a, int h_lo, int h_hi, bool one_kv_head) {
  const int head_dim = a.layout.head_dim;
  const int group = a.n_heads / a.layout.n_kv_heads;
  const int n_h = h_hi - h_lo;
  const int n_rows_total = a.n_q * n_h;
  for (int row0 = 0; row0 < n_rows_total; row0 += attn_tile_rows) {
    const int left = n_rows_total - row0;
    const int n_rows = left < attn_tile_rows ? left : attn_tile_rows;
    for (int r = 0; r < n_rows; ++r) {
      const int i = (row0 + r) / n_h;
      const int h = h_lo + (row0 + r) % n_h;
      const size_t at = static_cast<size_t>(i) * a.n_heads + h;
      tile.q[r] = a.q + at * head_dim;
      tile.out[r] = a.out + at * head_dim;
      tile.lse[r] = a.lse ? a.lse + at : nullptr;
      tile.kv_head[r] = h / group;
      tile.limit[r] = a.pos0 + i;
    }
    if (one_kv_head) {
      // slab_count<V> slabs side by side where there are rows for them.
      constexpr int per_run = slab_count<V> * V::width;
      for (int r0 = 0; r0 < n_rows; r0 += per_run) {
        const int left_rows = n_rows - r0;
        if (left_rows > V::width) {
          attn_slab_run<V, slab_count<V>>(tile, r0, left_rows < per_run ? left_rows : per_run, h_lo / group, a);
        } else {
          attn_slab_run<V, 1>(tile, r0, left_rows, h_lo / group, a);
        }
      }
    } else {
      attn_tile_run<V>(tile, n_rows, a);
    }
  }
}

template <class V>
void attention_paged_v(const attention_args& a) {
  attn_tile tile;
  const int group = a.n_heads / a.layout.n_kv_heads;
  if (a.n_q * group < attn_tile_rows) {
    // Few queries (decode): one tile spans several KV heads, so each K/V
    // slot (all KV heads of a position, contiguous) is read as one run
    // instead of one head_dim stride per KV head.
    attn_rows_run<V>(tile, a, a.head_begin, a.head_end, false);
    return;
  }
  // Many queries (prefill): tiles within one KV head, so each K/V chunk is
  // reused by attn_tile_rows rows.
  for (int g = 0; g < a.layout.n_kv_heads; ++g) {
    const int h_lo = g * group > a.head_begin ? g * group : a.head_begin;
    const int h_hi = (g + 1) * group < a.head_end ? (g + 1) * group : a.head_end;
    if (h_lo < h_hi) attn_rows_run<V>(tile, a, h_lo, h_hi, true);
  }
}

template <class V>
constexpr vec_entries make_vec_entries() {
  return vec_entries{&attention_paged_v<V>, &exp_shift_sum_v<V>, &max_v<V>, &scale_v<V>,
                     &silu_mul_v<V>};
}

}  // namespace
}  // namespace cortex::kernels::detail
