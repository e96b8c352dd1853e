// Internal: the ISA-generic flash-style paged attention (attention.hpp's
// attention_paged) over a traits type V. Part of vec_body.hpp: the same rules
// hold (internal linkage, include only from the per-ISA TUs, no std templates
// inside); V's contract is stated there.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>

#include "kernels/attention.hpp"
#include "kernels/fp16.hpp"
#include "kernels/x86/vec_math.hpp"

namespace cortex::kernels::detail {
namespace {

constexpr int attn_max_head_dim = 512;  // Gemma 4's full layers
constexpr int attn_tile_rows = 32;  // (query, head) rows processed together
constexpr int attn_chunk = 32;      // positions scored at once (<= one block)

// State of one tile: up to attn_tile_rows rows, each a (query, head) pair of
// one KV head, processed in vector lanes by attn_slab_run. Where a row's keys
// span several parts (attention_args::part_keys), fold holds the running
// fold of the parts done so far (attention_fold), fold_lse its log-sum-exp.
struct attn_tile {
  const float* q[attn_tile_rows];
  float* out[attn_tile_rows];
  float* lse[attn_tile_rows];  // nullptr: not asked for
  int limit[attn_tile_rows];  // last position the row attends to
  int first[attn_tile_rows];  // first one its window allows (0: no window)
  alignas(64) float fold[attn_tile_rows][attn_max_head_dim];
  float fold_lse[attn_tile_rows];
  alignas(64) float kbuf[attn_chunk * attn_max_head_dim];  // (n, head_dim) widened K rows
  alignas(64) float vbuf[attn_chunk * attn_max_head_dim];
  // Rows in vector lanes (at most 32: two slabs of 16).
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

// Positions taken at once from p: up to the next multiple of attn_chunk,
// within p's block, before p_end. The chunk bounds are absolute positions, so
// a row's keys are cut into the same chunks whatever other rows share its
// tile and wherever its key range starts (batch invariance).
inline int attn_chunk_at(int p, int block_size, int p_end) {
  int n = block_size - p % block_size;
  const int to_aligned = attn_chunk - p % attn_chunk;
  n = n < to_aligned ? n : to_aligned;
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

// Slab z's scores of the chunk's n keys (positions p ..): scaled, capped when
// CAP (cap * tanh(s / cap)), set to -inf where a lane's row does not see the
// key (past its limit; before its first, first_z[lane], when WINDOW), stored
// back; returns their lane-wise max. Instantiated per option so that plain
// causal attention keeps its loop, and its registers, as they are: the
// options' operands are built here, not held across the chunk loop.
template <class V, int NS, bool CAP, bool WINDOW>
inline typename V::vec slab_scale_mask(float* pb, int z, int n, int p, typename V::vec scale, typename V::ivec lim,
                                       const int32_t* first_z, float cap) {
  using vec = typename V::vec;
  using ivec = typename V::ivec;
  constexpr int W = V::width;
  const vec ninf = V::set1(-INFINITY);
  vec vcap{}, inv_cap{};
  ivec first{};
  if constexpr (CAP) {
    vcap = V::set1(cap);
    inv_cap = V::set1(1.0f / cap);
  }
  if constexpr (WINDOW) __builtin_memcpy(&first, first_z, sizeof(ivec));
  vec cmax = ninf;
  for (int j = 0; j < n; ++j) {
    float* pj = pb + (j * NS + z) * W;
    vec sj = V::load(pj) * scale;
    if constexpr (CAP) sj = vcap * tanh_v<V>(sj * inv_cap);
    ivec masked = (ivec{} + (p + j)) > lim;
    if constexpr (WINDOW) masked = masked | ((ivec{} + (p + j)) < first);
    const vec sm =
        reinterpret_cast<vec>((reinterpret_cast<ivec>(sj) & ~masked) | (reinterpret_cast<ivec>(ninf) & masked));
    V::store(pj, sm);
    cmax = V::vmax(cmax, sm);
  }
  return cmax;
}

// Rows r0 .. r0 + n_rows - 1 of the tile (n_rows <= NS * V::width), all
// reading KV head g, one row per vector lane, NS vectors ("slabs") of rows
// side by side, over the keys [k_begin, k_end) they see. A key's scores for a
// slab are one vector: head_dim FMAs of the transposed queries (qT, set up by
// attn_slab_run) with the key's values broadcast, and each broadcast feeds
// all NS slabs. The online softmax is lane-wise (no horizontal reductions),
// and the output accumulates transposed: head_dim vectors per slab, each the
// same dimension of every row. Every row is computed this way, whatever its
// tile holds (decode, prefill and verify steps alike), and each lane's
// arithmetic depends only on its own row and the chunk bounds, which are
// absolute: a row's bits do not depend on how its step was batched. Writes
// each row's normalised output to out[lane] and its log-sum-exp to lse[lane]
// (out 0 and lse -inf for a row with no key in the range).
template <class V, int NS>
void slab_keys(attn_tile& t, int n_rows, int g, const attention_args& a, const int32_t* lim, const int32_t* fst,
               int first_max, int k_begin, int k_end, float* const* out, float* lse) {
  using vec = typename V::vec;
  using ivec = typename V::ivec;
  constexpr int W = V::width;
  constexpr int L = NS * W;  // lanes
  constexpr int KU = slab_unroll<V>, DU = slab_unroll<V>;
  const int hd = a.layout.head_dim;
  const int bs = a.layout.block_size;
  const float* qT = t.slab_q;
  float* accT = t.slab_acc;
  float* pb = t.slab_p;
  const vec scale = V::set1(a.scale), ninf = V::set1(-INFINITY), zero = V::set1(0.0f);
  const float cap = a.softcap;
  for (int d = 0; d < hd * NS; ++d) V::store(accT + d * W, zero);
  ivec limv[NS];
  vec m[NS], l[NS];
  for (int z = 0; z < NS; ++z) {
    __builtin_memcpy(&limv[z], lim + z * W, sizeof(ivec));
    m[z] = ninf;
    l[z] = zero;
  }
  for (int p = k_begin; p < k_end;) {
    const int n = attn_chunk_at(p, bs, k_end);
    const kv_chunk c = load_kv_chunk<V>(t, a, p, n, g);
    // Scores: KU keys at a time (KU * NS independent FMA chains), then 4,
    // then 1: a lone key's NS chains wait on FMA latency.
    int j = 0;
    for (; j + KU <= n; j += KU) slab_scores<V, NS, KU>(qT, c, j, hd, pb);
    if constexpr (KU > 4) {
      for (; j + 4 <= n; j += 4) slab_scores<V, NS, 4>(qT, c, j, hd, pb);
    }
    for (; j < n; ++j) slab_scores<V, NS, 1>(qT, c, j, hd, pb);
    // Only chunks that start before some row's first need the window mask;
    // without a window every first is 0.
    const bool windowed = p < first_max;
    vec alpha[NS];
    for (int z = 0; z < NS; ++z) {
      // Scale, cap, mask, running max.
      const int32_t* fz = fst + z * W;
      vec cmax;
      if (cap > 0.0f) {
        cmax = windowed ? slab_scale_mask<V, NS, true, true>(pb, z, n, p, scale, limv[z], fz, cap)
                        : slab_scale_mask<V, NS, true, false>(pb, z, n, p, scale, limv[z], fz, cap);
      } else {
        cmax = windowed ? slab_scale_mask<V, NS, false, true>(pb, z, n, p, scale, limv[z], fz, cap)
                        : slab_scale_mask<V, NS, false, false>(pb, z, n, p, scale, limv[z], fz, cap);
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
    const bool none = lv[lane] == 0.0f;
    const float inv = none ? 0.0f : 1.0f / lv[lane];
    float* o = out[lane];
    for (int d = 0; d < hd; ++d) o[d] = accT[d * L + lane] * inv;
    lse[lane] = none ? -INFINITY : mv[lane] + logf(lv[lane]);
  }
}

// Rows r0 .. r0 + n_rows - 1 of the tile (n_rows <= NS * V::width), all
// reading KV head g: slab_keys over the keys they see in [key_begin,
// key_end), one part at a time where part_keys cuts them, the parts folded
// left to right (attention_fold: the same bits as separate calls per part
// merged by attention_merge).
template <class V, int NS>
void attn_slab_run(attn_tile& t, int r0, int n_rows, int g, const attention_args& a) {
  constexpr int L = NS * V::width;  // lanes
  static_assert(L <= 32, "slab buffers hold 32 lanes");
  const int hd = a.layout.head_dim;
  // [d][slab][lane]: the NS vectors of one dimension (or key) are adjacent.
  float* qT = t.slab_q;
  alignas(64) int32_t lim[L], fst[L];
  int last = -1;
  int begin = INT_MAX;  // smallest first of the live rows
  int first_max = 0;    // largest first of the live rows, or 0
  for (int lane = 0; lane < L; ++lane) {
    const bool live = lane < n_rows;
    lim[lane] = live ? t.limit[r0 + lane] : -1;  // a padding lane attends to nothing
    fst[lane] = live ? t.first[r0 + lane] : 0;
    last = lim[lane] > last ? lim[lane] : last;
    if (live) {
      begin = fst[lane] < begin ? fst[lane] : begin;
      first_max = fst[lane] > first_max ? fst[lane] : first_max;
    }
    for (int d = 0; d < hd; ++d) qT[d * L + lane] = live ? t.q[r0 + lane][d] : 0.0f;
  }
  const int k_begin = begin > a.key_begin ? begin : a.key_begin;
  const int k_end = last + 1 < a.key_end ? last + 1 : a.key_end;
  float lse[L];
  const int pk = a.part_keys;
  if (pk <= 0 || k_end <= k_begin || k_begin / pk == (k_end - 1) / pk) {
    slab_keys<V, NS>(t, n_rows, g, a, lim, fst, first_max, k_begin, k_end, t.out + r0, lse);
    for (int lane = 0; lane < n_rows; ++lane) {
      if (t.lse[r0 + lane]) *t.lse[r0 + lane] = lse[lane];
    }
    return;
  }
  // Several parts: each part's result lands in out, then folds into fold.
  for (int lane = 0; lane < n_rows; ++lane) t.fold_lse[lane] = -INFINITY;
  for (int j = k_begin / pk; j * pk < k_end; ++j) {
    const int lo = j * pk > k_begin ? j * pk : k_begin;
    const int hi = (j + 1) * pk < k_end ? (j + 1) * pk : k_end;
    slab_keys<V, NS>(t, n_rows, g, a, lim, fst, first_max, lo, hi, t.out + r0, lse);
    for (int lane = 0; lane < n_rows; ++lane) attention_fold(t.fold[lane], &t.fold_lse[lane], t.out[r0 + lane], lse[lane], hd);
  }
  for (int lane = 0; lane < n_rows; ++lane) {
    const bool none = t.fold_lse[lane] == -INFINITY;
    float* o = t.out[r0 + lane];
    for (int d = 0; d < hd; ++d) o[d] = none ? 0.0f : t.fold[lane][d];
    if (t.lse[r0 + lane]) *t.lse[r0 + lane] = t.fold_lse[lane];
  }
}

// Runs rows (i, h) for i in [0, n_q), h in [h_lo, h_hi) (heads of one KV
// head), query-major, in tiles of attn_tile_rows, slab_count<V> slabs side
// by side where there are rows for them.
template <class V>
void attn_rows_run(attn_tile& tile, const attention_args& a, int h_lo, int h_hi) {
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
      const int pos = a.pos0 + i;
      if (a.n_keys > 0) {  // bidirectional: the input, or its symmetric window around pos
        const int half = a.window / 2;
        tile.limit[r] = a.window > 0 && pos + half < a.n_keys - 1 ? pos + half : a.n_keys - 1;
        tile.first[r] = a.window > 0 && pos > half ? pos - half : 0;
      } else {  // causal: up to pos, from the window's start
        tile.limit[r] = pos;
        tile.first[r] = a.window > 0 ? pos - a.window + 1 : 0;
      }
    }
    constexpr int per_run = slab_count<V> * V::width;
    for (int r0 = 0; r0 < n_rows; r0 += per_run) {
      const int left_rows = n_rows - r0;
      if (left_rows > V::width) {
        attn_slab_run<V, slab_count<V>>(tile, r0, left_rows < per_run ? left_rows : per_run, h_lo / group, a);
      } else {
        attn_slab_run<V, 1>(tile, r0, left_rows, h_lo / group, a);
      }
    }
  }
}

// Tiles within one KV head, so each K/V chunk is read from the arena once
// per tile and reused by its rows (a decode step's tile holds the GQA group
// of the one query).
template <class V>
void attention_paged_v(const attention_args& a) {
  attn_tile tile;
  const int group = a.n_heads / a.layout.n_kv_heads;
  for (int g = 0; g < a.layout.n_kv_heads; ++g) {
    const int h_lo = g * group > a.head_begin ? g * group : a.head_begin;
    const int h_hi = (g + 1) * group < a.head_end ? (g + 1) * group : a.head_end;
    if (h_lo < h_hi) attn_rows_run<V>(tile, a, h_lo, h_hi);
  }
}

}  // namespace
}  // namespace cortex::kernels::detail
