// Quantizers of the lattice-codebook types iq2_xxs, iq2_xs (which llama.cpp
// writes only with an importance matrix), iq2_s, iq3_xxs and iq3_s (with
// one, or without: weights x^2, iq2_s's sigma2 / 2 + x^2): quantize_row_iq*_impl of ggml-quants.c, the same
// float operations in the same order, so the bytes are llama-quantize's.
//
// Each group of 8 (iq2) or 4 (iq3) elements is stored as a codebook entry
// (kernels/quant_grids.hpp) and sign bits; iq2 and iq3_xxs keep 7 signs per
// 8, the eighth making the number of negatives even. The quantizer works on
// |x| with an idealized codebook: each entry value read as a level l and
// the point 2l + 1. A group's levels at a trial scale either are an entry
// (the map) or are replaced by the best of their nearest entries (the
// neighbours: every entry at the n smallest squared distances, in order of
// distance then index), chosen by weighted squared error.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/fp16.hpp"
#include "kernels/ggml_type.hpp"
#include "kernels/quant_blocks.hpp"
#include "kernels/quant_grids.hpp"
#include "kernels/quant_nearest_int.hpp"
#include "kernels/quantize_common.hpp"
#include "kernels/quantize_grid.hpp"

namespace cortex {

namespace {

using grid_quant::best_neighbour;
using grid_quant::grid_search;
using grid_quant::map_levels;
using grid_quant::point_value;
using grid_quant::search_of;

// grid: the codebook (entry i's values in its bytes); level_of: an entry
// value's level; patterns: how many level patterns the map covers;
// n_distances: how many distinct distances the neighbour lists span.
// Patterns with a level above max_level (iq2, iq1: a digit 3), which no
// group has, get no list. Each list holds the entries at its pattern's
// n_distances smallest squared distances, by distance then index (the
// order of llama.cpp's sorted (distance, index) pairs), found by distance
// buckets rather than a sort of the whole codebook.
template <class Entry>
grid_search build_search(const Entry* grid, int grid_size, int group, int bits, int max_level, int patterns, int n_distances,
                         int (*level_of)(int value)) {
  grid_search s{group, bits, max_level, {}, {}, {}};
  s.points.resize(static_cast<size_t>(grid_size));
  s.map.assign(static_cast<size_t>(patterns), -1);
  for (int k = 0; k < grid_size; ++k) {
    uint64_t point = 0;
    int u = 0;
    for (int i = 0; i < group; ++i) {
      const int l = level_of(static_cast<int>((static_cast<uint64_t>(grid[k]) >> (8 * i)) & 0xff));
      point |= static_cast<uint64_t>(2 * l + 1) << (8 * i);
      u |= l << (bits * i);
    }
    s.points[static_cast<size_t>(k)] = point;
    s.map[static_cast<size_t>(u)] = k;
  }
  const int mask = (1 << bits) - 1;
  std::vector<int> dist(static_cast<size_t>(grid_size));                     // per entry
  std::vector<char> at_distance(static_cast<size_t>(group * 4 * max_level * max_level + 1));  // some entry is there
  for (int u = 0; u < patterns; ++u) {
    if (s.map[static_cast<size_t>(u)] >= 0) continue;
    bool reachable = true;
    for (int i = 0; i < group; ++i) reachable = reachable && ((u >> (bits * i)) & mask) <= max_level;
    if (!reachable) continue;
    std::fill(at_distance.begin(), at_distance.end(), 0);
    for (int k = 0; k < grid_size; ++k) {
      int d2 = 0;
      for (int i = 0; i < group; ++i) {
        const int diff = point_value(s.points[static_cast<size_t>(k)], i) - (2 * ((u >> (bits * i)) & mask) + 1);
        d2 += diff * diff;
      }
      dist[static_cast<size_t>(k)] = d2;
      at_distance[static_cast<size_t>(d2)] = 1;
    }
    s.map[static_cast<size_t>(u)] = -1 - static_cast<int>(s.neighbours.size());
    const size_t count_at = s.neighbours.size();
    s.neighbours.push_back(0);
    int n_seen = 0;
    for (size_t d2 = 0; d2 < at_distance.size() && n_seen < n_distances; ++d2) {
      if (!at_distance[d2]) continue;
      ++n_seen;
      for (int k = 0; k < grid_size; ++k) {
        if (dist[static_cast<size_t>(k)] == static_cast<int>(d2)) s.neighbours.push_back(static_cast<uint16_t>(k));
      }
    }
    s.neighbours[count_at] = static_cast<uint16_t>(s.neighbours.size() - count_at - 1);
  }
  return s;
}

// iq2's values 8, 25, 43; iq3_xxs's 4, 12, ..., 52, 62 (8l + 4 but the
// last); iq3_s's 1, 3, ..., 15; iq1's -1, 0, 1 (int8, so -1 reads 255).
int iq2_level(int v) { return v == 8 ? 0 : v == 25 ? 1 : 2; }
int iq3_xxs_level(int v) { return v / 8; }
int iq3_s_level(int v) { return (v - 1) / 2; }
int iq1_level(int v) { return v == 255 ? 0 : v + 1; }

// Folds the signs of a group of 8 into xval = |x|, so that an even number
// are negative: with an odd count, the element of least weight * x^2 keeps
// its sign (and is quantized as negative of its magnitude). Returns the 7
// stored sign bits.
uint8_t fold_signs(const float* x, const float* weight, float* xval) {
  int n_flip = 0;
  uint8_t s = 0;
  for (int i = 0; i < 8; ++i) {
    if (x[i] >= 0) {
      xval[i] = x[i];
    } else {
      xval[i] = -x[i];
      ++n_flip;
      s = static_cast<uint8_t>(s | (1 << i));
    }
  }
  if (n_flip % 2) {
    int imin = 0;
    float min = weight[0] * x[0] * x[0];
    for (int i = 1; i < 8; ++i) {
      const float ax = weight[i] * x[i] * x[i];
      if (ax < min) {
        min = ax;
        imin = i;
      }
    }
    xval[imin] = -xval[imin];
    s = static_cast<uint8_t>(s ^ (1 << imin));
  }
  return static_cast<uint8_t>(s & 127);
}

// A group's point values 2l + 1 by level l.
constexpr float odd_values[8] = {1, 3, 5, 7, 9, 11, 13, 15};

// The entry for a group at inverse scale id (scale: its inverse, for the
// neighbour search): levels round(((id * xval) - 1) / 2) in [0, max_level],
// the entry with those levels or else the neighbour of least
// sum w * (scale * point - xval)^2. L gets the entry's levels. *on_grid:
// whether the levels were an entry.
int quantize_group(const grid_search& s, const float* xval, const float* w, float id, float scale, int8_t* L, bool* on_grid) {
  for (int i = 0; i < s.group; ++i) L[i] = static_cast<int8_t>(std::clamp(nearest_int(0.5f * (id * xval[i] - 1)), 0, s.max_level));
  const int mapped = map_levels(s, L);
  if (on_grid) *on_grid = mapped >= 0;
  if (mapped >= 0) return mapped;
  const int best = best_neighbour(s, mapped, xval, w, scale, odd_values);
  for (int i = 0; i < s.group; ++i) L[i] = static_cast<int8_t>((point_value(s.points[static_cast<size_t>(best)], i) - 1) / 2);
  return best;
}

// sum w * xval * q and sum w * q^2 over n elements, q = 2L + 1.
void level_sums(int n, const float* w, const float* xval, const int8_t* L, float* sum_qx, float* sum_q2) {
  float qx = 0, q2 = 0;
  for (int i = 0; i < n; ++i) {
    const float q = static_cast<float>(2 * L[i] + 1);
    qx += w[i] * xval[i] * q;
    q2 += w[i] * q * q;
  }
  *sum_qx = qx;
  *sum_q2 = q2;
}

// A block of n elements (iq2_xxs, iq3_xxs, iq3_s: 32; iq2_xs, iq2_s: 16):
// its weights (qw * sqrt(sigma2 + x^2), or without qw
// plain_sigma2_share * sigma2 + x^2: iq3's x^2, iq2_s's), their square roots
// (the neighbour search's weights), |x| with the signs folded (fold: 7 bits
// per 8, the eighth implied) or kept (8 bits per 8), and max |x|.
template <int n, bool fold>
struct grid_block {
  float weight[n], waux[n], xval[n];
  uint8_t signs[n / 8];
  float max = 0;

  grid_block(const float* xb, const float* qw, float sigma2, float plain_sigma2_share = 0) {
    if (qw) {
      quant_common::importance_weights(xb, qw, sigma2, n, weight);
    } else if (plain_sigma2_share == 0) {
      for (int i = 0; i < n; ++i) weight[i] = xb[i] * xb[i];
    } else {
      for (int i = 0; i < n; ++i) weight[i] = plain_sigma2_share * sigma2 + xb[i] * xb[i];
    }
    for (int i = 0; i < n; ++i) waux[i] = std::sqrt(weight[i]);
    for (int k = 0; k < n / 8; ++k) {
      if constexpr (fold) {
        signs[k] = fold_signs(xb + 8 * k, weight + 8 * k, xval + 8 * k);
      } else {
        uint8_t bits = 0;
        for (int i = 0; i < 8; ++i) {
          const float v = xb[8 * k + i];
          xval[8 * k + i] = v >= 0 ? v : -v;
          if (!(v >= 0)) bits = static_cast<uint8_t>(bits | (1 << i));
        }
        signs[k] = bits;
      }
    }
    max = xval[0];
    for (int i = 1; i < n; ++i) max = std::max(max, xval[i]);
  }

  // A negative scale (which the reference says should never happen) is
  // stored positive with the signs flipped: the first n_groups groups of
  // 8 (llama.cpp's iq3_xxs flips 4 of its 4, iq2 all).
  void make_positive(float& scale, int n_groups = n / 8) {
    if (scale >= 0) return;
    scale = -scale;
    for (int k = 0; k < n_groups; ++k) signs[k] = static_cast<uint8_t>(fold ? ~signs[k] & 127 : ~signs[k]);
  }
};

// After the scale search, which groups get their levels again at the
// fitted scale (llama.cpp's types differ here): all of them (iq2_xxs); the
// ones whose best levels were not an entry, if any (iq2_xs, iq3_xxs); all
// of them if any was not (iq3_s).
enum class refit { all, off_grid, all_if_any_off_grid };

// A block's search of the best scale over trial inverse scales
// id = (top + is * step) / max_ref, is in [-n_steps, n_steps], keeping the
// levels of the best fit in L (and, per group, whether they were an entry:
// on_grid, as the caller initialized it until a fit is kept); then the
// refit. Returns the scale (`scale` if no trial fits).
template <class Block>
float search_scale(const grid_search& s, const Block& b, int n, float max_ref, float top, float step, int n_steps, float scale,
                   refit how, bool* on_grid, int8_t* L) {
  int8_t Laux[32];
  bool on_grid_aux[8];
  const int n_groups = n / s.group;
  float best = 0;
  for (int is = -n_steps; is <= n_steps; ++is) {
    const float id = (top + static_cast<float>(is) * step) / max_ref;
    const float this_scale = 1 / id;
    for (int k = 0; k < n_groups; ++k) {
      quantize_group(s, b.xval + s.group * k, b.waux + s.group * k, id, this_scale, Laux + s.group * k, &on_grid_aux[k]);
    }
    float sum_qx, sum_q2;
    level_sums(n, b.weight, b.xval, Laux, &sum_qx, &sum_q2);
    if (sum_q2 > 0 && sum_qx * sum_qx > best * sum_q2) {
      scale = sum_qx / sum_q2;
      best = scale * sum_qx;
      std::memcpy(L, Laux, static_cast<size_t>(n));
      std::copy(on_grid_aux, on_grid_aux + n_groups, on_grid);
    }
  }
  const bool any_off = !std::all_of(on_grid, on_grid + n_groups, [](bool g) { return g; });
  if ((how == refit::all || any_off) && scale > 0) {
    const float id = 1 / scale;
    for (int k = 0; k < n_groups; ++k) {
      if (how != refit::off_grid || !on_grid[k]) {
        quantize_group(s, b.xval + s.group * k, b.waux + s.group * k, id, scale, L + s.group * k, nullptr);
      }
    }
    float sum_qx, sum_q2;
    level_sums(n, b.weight, b.xval, L, &sum_qx, &sum_q2);
    if (sum_q2 > 0) scale = sum_qx / sum_q2;
  }
  return scale;
}

// The super-block scale d = max(scales) / 31, stored times llama.cpp's
// fudge factor; returns 1 / d, or 0 (storing nothing) when every scale is 0.
float set_super_scale(const float* scales, int n, float fudge, half_bits& d) {
  float max_scale = 0;
  for (int i = 0; i < n; ++i) max_scale = std::max(max_scale, scales[i]);
  if (max_scale == 0) return 0;
  const float d_exact = max_scale / 31;
  d = fp32_to_fp16(d_exact * fudge);
  return 1 / d_exact;
}

// The 4-bit sub-block scale of `scale` against the super-block's d.
int scale_code(float id, float scale) { return std::clamp(nearest_int(0.5f * (id * scale - 1)), 0, 15); }

void quantize_iq2_xxs_block(const float* x, const float* qw, block_iq2_xxs& y) {
  const grid_search& s = search_of(ggml_type::iq2_xxs);
  float scales[qk_k / 32];
  uint32_t q2[2 * (qk_k / 32)] = {};
  int8_t L[32];
  y.d = fp32_to_fp16(0.f);
  const float sigma2 = quant_common::sum_squares(x, qk_k) / static_cast<float>(qk_k);
  for (int ib = 0; ib < qk_k / 32; ++ib) {
    grid_block<32, true> b(x + 32 * ib, qw + 32 * ib, sigma2);
    if (b.max < 1e-15f) {
      scales[ib] = 0;
      continue;
    }
    // The search starts from a fit to levels 0..4 and runs around its top.
    const float scale0 = quant_common::fit_scale_positive(32, 4, b.xval, reinterpret_cast<uint8_t*>(L), b.weight);
    const float eff_max = scale0 * 3;
    if (eff_max <= 0) {
      scales[ib] = 0;
      continue;
    }
    bool on_grid[4] = {true, true, true, true};
    float scale = search_scale(s, b, 32, eff_max, 5, 0.1f, 6, scale0, refit::all, on_grid, L);
    b.make_positive(scale);
    for (int k = 0; k < 4; ++k) {
      q2[2 * ib] |= static_cast<uint32_t>(map_levels(s, L + 8 * k)) << (8 * k);
      q2[2 * ib + 1] |= static_cast<uint32_t>(b.signs[k]) << (7 * k);
    }
    scales[ib] = scale;
  }
  const float id = set_super_scale(scales, qk_k / 32, 1.0f, y.d);
  if (id == 0) {
    std::memset(y.qs, 0, sizeof(y.qs));
    return;
  }
  for (int ib = 0; ib < qk_k / 32; ++ib) q2[2 * ib + 1] |= static_cast<uint32_t>(scale_code(id, scales[ib])) << 28;
  std::memcpy(y.qs, q2, sizeof(y.qs));
}

void quantize_iq2_xs_block(const float* x, const float* qw, block_iq2_xs& y) {
  const grid_search& s = search_of(ggml_type::iq2_xs);
  float scales[qk_k / 16];
  uint16_t q2[2 * (qk_k / 16)] = {};
  int8_t L[16];
  y.d = fp32_to_fp16(0.f);
  std::memset(y.scales, 0, sizeof(y.scales));
  const float sigma2 = quant_common::sum_squares(x, qk_k) / static_cast<float>(qk_k);
  for (int ib = 0; ib < qk_k / 16; ++ib) {
    grid_block<16, true> b(x + 16 * ib, qw + 16 * ib, sigma2);
    std::memset(L, 0, sizeof(L));
    if (b.max < 1e-15f) {
      scales[ib] = 0;
      continue;
    }
    bool on_grid[2] = {true, true};
    float scale = search_scale(s, b, 16, b.max, 5, 0.1f, 9, b.max / 5, refit::off_grid, on_grid, L);
    b.make_positive(scale);
    for (int k = 0; k < 2; ++k) q2[2 * ib + k] = static_cast<uint16_t>(map_levels(s, L + 8 * k) | (b.signs[k] << 9));
    scales[ib] = scale;
  }
  const float id = set_super_scale(scales, qk_k / 16, 1.0f, y.d);
  if (id == 0) {
    std::memset(y.qs, 0, sizeof(y.qs));
    return;
  }
  for (int ib = 0; ib < qk_k / 16; ++ib) {
    const int l = scale_code(id, scales[ib]);
    y.scales[ib / 2] = static_cast<uint8_t>(ib % 2 == 0 ? l : (y.scales[ib / 2] | (l << 4)));
  }
  std::memcpy(y.qs, q2, sizeof(y.qs));
}

// iq2_s's and iq3's weights: twice the super-block's mean square in sigma2.
float twice_mean_square(const float* x) { return 2 * quant_common::sum_squares(x, qk_k) / static_cast<float>(qk_k); }

// Like iq2_xs on a codebook of 1024 with all 8 signs per group stored, the
// neighbours at the nearest distance only.
void quantize_iq2_s_block(const float* x, const float* qw, block_iq2_s& y) {
  const grid_search& s = search_of(ggml_type::iq2_s);
  float scales[qk_k / 16];
  int8_t L[16];
  std::memset(&y, 0, sizeof(y));
  const float sigma2 = twice_mean_square(x);
  for (int ib = 0; ib < qk_k / 16; ++ib) {
    grid_block<16, false> b(x + 16 * ib, qw ? qw + 16 * ib : nullptr, sigma2, 0.25f);
    std::memset(L, 0, sizeof(L));
    if (b.max < 1e-8f) {
      scales[ib] = 0;
      continue;
    }
    bool on_grid[2] = {true, true};
    float scale = search_scale(s, b, 16, b.max, 5, 0.1f, 9, b.max / 5, refit::off_grid, on_grid, L);
    b.make_positive(scale);
    for (int k = 0; k < 2; ++k) {
      const int entry = map_levels(s, L + 8 * k), i8 = 2 * ib + k;
      y.qs[i8] = static_cast<uint8_t>(entry & 255);
      y.qh[i8 / 4] = static_cast<uint8_t>(y.qh[i8 / 4] | ((entry >> 8) << (2 * (i8 % 4))));
      y.qs[qk_k / 8 + i8] = b.signs[k];
    }
    scales[ib] = scale;
  }
  const float id = set_super_scale(scales, qk_k / 16, 0.9875f, y.d);
  if (id == 0) return;
  for (int ib = 0; ib < qk_k / 16; ++ib) {
    const int l = scale_code(id, scales[ib]);
    y.scales[ib / 2] = static_cast<uint8_t>(ib % 2 == 0 ? l : (y.scales[ib / 2] | (l << 4)));
  }
}

void quantize_iq3_xxs_block(const float* x, const float* qw, block_iq3_xxs& y) {
  const grid_search& s = search_of(ggml_type::iq3_xxs);
  float scales[qk_k / 32];
  uint8_t entries[qk_k / 4] = {};
  uint32_t scales_and_signs[qk_k / 32] = {};
  int8_t L[32];
  y.d = fp32_to_fp16(0.f);
  const float sigma2 = twice_mean_square(x);
  for (int ib = 0; ib < qk_k / 32; ++ib) {
    grid_block<32, true> b(x + 32 * ib, qw ? qw + 32 * ib : nullptr, sigma2);
    std::memset(L, 0, sizeof(L));
    if (b.max < 1e-8f) {
      scales[ib] = 0;
      continue;
    }
    bool on_grid[8];
    std::fill(on_grid, on_grid + 8, true);
    float scale = search_scale(s, b, 32, b.max, 15, 0.2f, 15, b.max / 15, refit::off_grid, on_grid, L);
    b.make_positive(scale, 4);
    for (int k = 0; k < 8; ++k) entries[8 * ib + k] = static_cast<uint8_t>(map_levels(s, L + 4 * k));
    scales_and_signs[ib] = b.signs[0] | (b.signs[1] << 7) | (b.signs[2] << 14) | (static_cast<uint32_t>(b.signs[3]) << 21);
    scales[ib] = scale;
  }
  const float id = set_super_scale(scales, qk_k / 32, 1.0125f, y.d);
  if (id == 0) {
    std::memset(y.qs, 0, sizeof(y.qs));
    return;
  }
  for (int ib = 0; ib < qk_k / 32; ++ib) scales_and_signs[ib] |= static_cast<uint32_t>(scale_code(id, scales[ib])) << 28;
  std::memcpy(y.qs, entries, sizeof(entries));
  std::memcpy(y.qs + sizeof(entries), scales_and_signs, sizeof(scales_and_signs));
}

// Note the reference's quirk, kept for its bytes: an all-zero block of 32
// writes no entries or signs and does not advance past them, so the next
// block's land in its place (only the 9th bits, qh, stay in position).
void quantize_iq3_s_block(const float* x, const float* qw, block_iq3_s& y) {
  const grid_search& s = search_of(ggml_type::iq3_s);
  float scales[qk_k / 32];
  int8_t L[32];
  std::memset(&y, 0, sizeof(y));
  uint8_t* qs = y.qs;
  uint8_t* signs = y.signs;
  const float sigma2 = twice_mean_square(x);
  for (int ib = 0; ib < qk_k / 32; ++ib) {
    grid_block<32, false> b(x + 32 * ib, qw ? qw + 32 * ib : nullptr, sigma2);
    std::memset(L, 0, sizeof(L));
    if (b.max == 0) {
      scales[ib] = 0;
      continue;
    }
    bool on_grid[8] = {};
    float scale = search_scale(s, b, 32, b.max, 15, 0.2f, 9, b.max / 15, refit::all_if_any_off_grid, on_grid, L);
    b.make_positive(scale);
    for (int k = 0; k < 8; ++k) {
      const int entry = map_levels(s, L + 4 * k);
      qs[k] = static_cast<uint8_t>(entry & 255);
      y.qh[(ib * 8 + k) / 8] = static_cast<uint8_t>(y.qh[(ib * 8 + k) / 8] | ((entry >> 8) << ((ib * 8 + k) % 8)));
    }
    qs += 8;
    std::memcpy(signs, b.signs, 4);
    signs += 4;
    scales[ib] = scale;
  }
  const float id = set_super_scale(scales, qk_k / 32, 1.033f, y.d);
  if (id == 0) return;
  for (int ib = 0; ib < qk_k / 32; ib += 2) {
    y.scales[ib / 2] = static_cast<uint8_t>(scale_code(id, scales[ib]) | (scale_code(id, scales[ib + 1]) << 4));
  }
}

}  // namespace

namespace grid_quant {

// The pattern counts and neighbour distances are llama.cpp's (iq2, iq1:
// every 8-digit base-4 pattern up to 43691; iq1 keeps 3 distances, its
// nwant).
const grid_search& search_of(ggml_type t) {
  switch (t) {
    case ggml_type::iq2_xxs: { static const auto s = build_search(iq2xxs_grid, 256, 8, 2, 2, 43692, 2, iq2_level); return s; }
    case ggml_type::iq2_xs: { static const auto s = build_search(iq2xs_grid, 512, 8, 2, 2, 43692, 2, iq2_level); return s; }
    case ggml_type::iq3_xxs: { static const auto s = build_search(iq3xxs_grid, 256, 4, 3, 7, 4096, 2, iq3_xxs_level); return s; }
    case ggml_type::iq2_s: { static const auto s = build_search(iq2s_grid, 1024, 8, 2, 2, 43692, 1, iq2_level); return s; }
    case ggml_type::iq1_s:
    case ggml_type::iq1_m: { static const auto s = build_search(iq1s_grid, 2048, 8, 2, 2, 43692, 3, iq1_level); return s; }
    default: { static const auto s = build_search(iq3s_grid, 512, 4, 3, 7, 4096, 3, iq3_s_level); return s; }  // iq3_s
  }
}

int map_levels(const grid_search& s, const int8_t* L) {
  int u = 0;
  for (int i = 0; i < s.group; ++i) u |= L[i] << (s.bits * i);
  return s.map[static_cast<size_t>(u)];
}

int best_neighbour(const grid_search& s, int mapped, const float* x, const float* w, float scale, const float* values) {
  const uint16_t* list = s.neighbours.data() + (-1 - mapped);
  float best_d2 = FLT_MAX;
  int best = list[1];
  for (int j = 1; j <= list[0]; ++j) {
    const uint64_t point = s.points[list[j]];
    float d2 = 0;
    for (int i = 0; i < s.group; ++i) {
      const float diff = scale * values[(point_value(point, i) - 1) / 2] - x[i];
      d2 += w[i] * diff * diff;
    }
    if (d2 < best_d2) {
      best_d2 = d2;
      best = list[j];
    }
  }
  return best;
}

}  // namespace grid_quant

// With importance weights qw[n] only (llama.cpp has no other quantizer for them).
void quantize_row_iq2_xxs_weighted(const float* x, void* y, int64_t n, const float* qw) {
  grid_quant::quantize_super_blocks(x, y, n, qw, quantize_iq2_xxs_block);
}
void quantize_row_iq2_xs_weighted(const float* x, void* y, int64_t n, const float* qw) {
  grid_quant::quantize_super_blocks(x, y, n, qw, quantize_iq2_xs_block);
}

// iq2_s, iq3: with importance weights qw[n], or (qw nullptr) without.
void quantize_row_iq2_s_weighted(const float* x, void* y, int64_t n, const float* qw) {
  grid_quant::quantize_super_blocks(x, y, n, qw, quantize_iq2_s_block);
}
void quantize_row_iq3_xxs_weighted(const float* x, void* y, int64_t n, const float* qw) {
  grid_quant::quantize_super_blocks(x, y, n, qw, quantize_iq3_xxs_block);
}
void quantize_row_iq3_s_weighted(const float* x, void* y, int64_t n, const float* qw) {
  grid_quant::quantize_super_blocks(x, y, n, qw, quantize_iq3_s_block);
}

void quantize_row_iq2_s(const float* x, void* y, int64_t n) { quantize_row_iq2_s_weighted(x, y, n, nullptr); }
void quantize_row_iq3_xxs(const float* x, void* y, int64_t n) { quantize_row_iq3_xxs_weighted(x, y, n, nullptr); }
void quantize_row_iq3_s(const float* x, void* y, int64_t n) { quantize_row_iq3_s_weighted(x, y, n, nullptr); }

}  // namespace cortex
