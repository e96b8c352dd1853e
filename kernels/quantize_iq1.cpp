// Quantizers of iq1_s and iq1_m, with an importance matrix only (as
// llama-quantize: it refuses both without one): quantize_row_iq1_s_impl and
// quantize_row_iq1_m_impl of ggml-quants.c, the same float operations in
// the same order (this file has no isa flags, so no fused multiply-add), so
// the bytes are llama-quantize's.
//
// Each element is scale * (l - 1 + delta): a level l in {0, 1, 2} and a
// shift delta = +-1/8, its sign chosen per sub-block of 32 (iq1_s) or per
// group of 8 in sub-blocks of 16 (iq1_m). Each group's 8 levels must be an
// entry of the 2048-entry codebook (kernels/quantize_grid.hpp's search).
// With three levels, a sub-block's best levels are two cuts in its
// elements sorted by value (below the first: level 0; from the second: 2),
// so the fit tries every pair of cuts with every choice of signs, by
// weighted least squares. A group whose levels are then not an entry takes
// the neighbouring entry of least weighted squared error at that scale,
// and the scale is fitted again to the entries.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <numeric>

#include "kernels/fp16.hpp"
#include "kernels/ggml_type.hpp"
#include "kernels/quant_blocks.hpp"
#include "kernels/quant_nearest_int.hpp"
#include "kernels/quantize_common.hpp"
#include "kernels/quantize_grid.hpp"

namespace cortex {

namespace {

// The codebook search shared with the iq2 / iq3 quantizers.
using namespace grid_quant;

// llama.cpp's IQ1S_DELTA and IQ1M_DELTA (both 1/8): the dequantizers' codes
// 8g +- 1 against a factor 1/8.
constexpr float iq1_delta = 0.125f;

// The values of levels 0, 1, 2 with the shift +delta (plus) or -delta.
constexpr float values_plus[3] = {-1 + iq1_delta, iq1_delta, 1 + iq1_delta};
constexpr float values_minus[3] = {-1 - iq1_delta, -iq1_delta, 1 - iq1_delta};

const float* values_of(bool minus) { return minus ? values_minus : values_plus; }

// The element indices of x[n] in ascending order of value, equal values in
// index order: what the reference's qsort gives, glibc's qsort being a
// merge sort (stable) for arrays this small.
template <int n>
void ascending_order(const float* x, int* order) {
  std::iota(order, order + n, 0);
  std::stable_sort(order, order + n, [x](int a, int b) { return x[a] < x[b]; });
}

// A group's entry: the one whose levels are L[8] (0..2), or else the best
// of their neighbours at this scale and shift (the reference's
// iq1_find_best_neighbour2). Where no neighbour's error is below FLT_MAX
// (an overflow) the reference scans the whole codebook with an index slip
// that reads past the group; this takes the nearest neighbour instead.
// on_grid: whether L was an entry.
int iq1_entry(const grid_search& s, const int8_t* L, const float* x, const float* w, float scale, const float* values,
              bool& on_grid) {
  const int mapped = map_levels(s, L);
  on_grid = mapped >= 0;
  return on_grid ? mapped : best_neighbour(s, mapped, x, w, scale, values);
}

// Adds a group's sum w * q * x and sum w * q^2 to sum_qx, sum_q2, q being
// values[level] * factor for the entry's levels.
void add_group_sums(uint64_t point, const float* values, float factor, const float* x, const float* w, float& sum_qx,
                    float& sum_q2) {
  for (int j = 0; j < 8; ++j) {
    const float q = values[(point_value(point, j) - 1) / 2] * factor;
    sum_qx += w[j] * q * x[j];
    sum_q2 += w[j] * q * q;
  }
}

// A sub-block's fit: the cuts i1 <= i2 in its ascending order, the scale,
// and each group's shift sign.
template <int n>
struct cuts_fit {
  int i1 = 0, i2 = 0;
  float scale = 0;
  bool minus[n / 8] = {};
};

// iq1_s's search over a sub-block of 32, one shift for all of it: per pair
// of cuts, +delta then -delta, from prefix sums of w * x and w in ascending
// order. Returns false when no fit has sum w * q^2 > 0.
bool best_cuts_iq1_s(const float* x, const float* w, const int* order, cuts_fit<32>& fit) {
  constexpr int n = 32;
  float sum_x[n + 1], sum_w[n + 1];
  sum_x[0] = sum_w[0] = 0;
  for (int j = 0; j < n; ++j) {
    const int i = order[j];
    sum_x[j + 1] = sum_x[j] + w[i] * x[i];
    sum_w[j + 1] = sum_w[j] + w[i];
  }
  float best = -FLT_MAX;
  bool found = false;
  for (int i1 = 0; i1 <= n; ++i1) {
    for (int i2 = i1; i2 <= n; ++i2) {
      for (bool minus : {false, true}) {
        const float* v = values_of(minus);
        const float sum_qx = (sum_x[i1] - sum_x[0]) * v[0] + (sum_x[i2] - sum_x[i1]) * v[1] + (sum_x[n] - sum_x[i2]) * v[2];
        const float sum_q2 = (sum_w[i1] - sum_w[0]) * v[0] * v[0] + (sum_w[i2] - sum_w[i1]) * v[1] * v[1] +
                             (sum_w[n] - sum_w[i2]) * v[2] * v[2];
        if (sum_q2 > 0 && sum_qx * sum_qx > best * sum_q2) {
          fit = {i1, i2, sum_qx / sum_q2, {minus, minus, minus, minus}};
          best = fit.scale * sum_qx;
          found = true;
        }
      }
    }
  }
  return found;
}

// iq1_m's search over a sub-block of 16, a shift per half (group of 8): per
// pair of cuts the sign pairs (+,+), (+,-), (-,+), (-,-), from prefix sums
// kept per half. As the level values step by 1, a half's sums collapse to
// sum w q x = T_x v2 - S_x(i1) - S_x(i2) and
// sum w q^2 = T_w v2^2 + S_w(i1) (v0^2 - v1^2) + S_w(i2) (v1^2 - v2^2)
// (T: the half's totals, S: its prefix sums), the reference's arithmetic.
bool best_cuts_iq1_m(const float* x, const float* w, const int* order, cuts_fit<16>& fit) {
  constexpr int n = 16;
  float sum_x[2][n + 1], sum_w[2][n + 1];
  sum_x[0][0] = sum_x[1][0] = sum_w[0][0] = sum_w[1][0] = 0;
  for (int j = 0; j < n; ++j) {
    const int i = order[j], h = i < n / 2 ? 0 : 1;
    sum_x[h][j + 1] = sum_x[h][j] + w[i] * x[i];
    sum_x[1 - h][j + 1] = sum_x[1 - h][j];
    sum_w[h][j + 1] = sum_w[h][j] + w[i];
    sum_w[1 - h][j + 1] = sum_w[1 - h][j];
  }
  const float* values[2] = {values_plus, values_minus};
  float c1[2], c2[2];
  for (int m = 0; m < 2; ++m) {
    c1[m] = values[m][0] * values[m][0] - values[m][1] * values[m][1];
    c2[m] = values[m][1] * values[m][1] - values[m][2] * values[m][2];
  }
  float best = -FLT_MAX;
  bool found = false;
  for (int i1 = 0; i1 <= n; ++i1) {
    for (int i2 = i1; i2 <= n; ++i2) {
      float qx[2][2], q2[2][2];  // [half][minus]
      for (int h = 0; h < 2; ++h) {
        const float sx = sum_x[h][i1] + sum_x[h][i2];
        for (int m = 0; m < 2; ++m) {
          const float v2 = values[m][2];
          qx[h][m] = sum_x[h][n] * v2 - sx;
          q2[h][m] = sum_w[h][n] * v2 * v2 + sum_w[h][i1] * c1[m] + sum_w[h][i2] * c2[m];
        }
      }
      for (int k = 0; k < 4; ++k) {
        const int m0 = k >> 1, m1 = k & 1;
        const float sum_qx = qx[0][m0] + qx[1][m1], sum_q2 = q2[0][m0] + q2[1][m1];
        if (sum_q2 > 0 && sum_qx * sum_qx > best * sum_q2) {
          fit = {i1, i2, sum_qx / sum_q2, {m0 == 1, m1 == 1}};
          best = fit.scale * sum_qx;
          found = true;
        }
      }
    }
  }
  return found;
}

// A sub-block of n on the grid: its scale, shift signs and entries (all
// zero, the signs plus, for a sub-block the reference leaves out: max |x|
// below eps, or no fit).
template <int n>
struct iq1_sub_block {
  float scale = 0;
  bool minus[n / 8] = {};
  uint16_t entries[n / 8] = {};
};

// Fits x[n] (weights w[n]) with best_cuts, then puts it on the grid: levels
// from the cuts, mirrored (2 - l, the signs flipped) if the scale is
// negative; each group's entry; if any group was off the grid, the scale
// fitted again to the entries.
template <int n, class BestCuts>
iq1_sub_block<n> fit_sub_block(const grid_search& s, const float* x, const float* w, float eps, BestCuts best_cuts) {
  iq1_sub_block<n> b;
  float max = std::fabs(x[0]);
  for (int i = 1; i < n; ++i) max = std::max(max, std::fabs(x[i]));
  if (max < eps) return b;
  int order[n];
  ascending_order<n>(x, order);
  cuts_fit<n> fit;
  if (!best_cuts(x, w, order, fit)) return b;
  int8_t L[n];
  for (int j = 0; j < n; ++j) L[order[j]] = static_cast<int8_t>(j < fit.i1 ? 0 : j < fit.i2 ? 1 : 2);
  if (fit.scale < 0) {
    for (int8_t& l : L) l = static_cast<int8_t>(2 - l);
    fit.scale = -fit.scale;
    for (bool& m : fit.minus) m = !m;
  }
  bool all_on_grid = true;
  for (int k = 0; k < n / 8; ++k) {
    bool on_grid;
    b.entries[k] = static_cast<uint16_t>(iq1_entry(s, L + 8 * k, x + 8 * k, w + 8 * k, fit.scale, values_of(fit.minus[k]), on_grid));
    all_on_grid = all_on_grid && on_grid;
  }
  if (!all_on_grid) {
    float sum_qx = 0, sum_q2 = 0;
    for (int k = 0; k < n / 8; ++k) {
      add_group_sums(s.points[b.entries[k]], values_of(fit.minus[k]), 1.0f, x + 8 * k, w + 8 * k, sum_qx, sum_q2);
    }
    if (sum_qx > 0 && sum_q2 > 0) fit.scale = sum_qx / sum_q2;
  }
  b.scale = fit.scale;
  std::copy(fit.minus, fit.minus + n / 8, b.minus);
  return b;
}

// A super-block's sub-blocks of n, fitted (fit_sub_block) with the
// importance weights qw * sqrt(sigma2 + x^2), sigma2 twice the
// super-block's mean square, which go to weight[qk_k]. Returns the largest
// scale.
template <int n, class BestCuts>
float fit_sub_blocks(const grid_search& s, const float* x, const float* qw, float eps, BestCuts best_cuts, float* weight,
                     iq1_sub_block<n>* sub) {
  const float sigma2 = 2 * quant_common::sum_squares(x, qk_k) / static_cast<float>(qk_k);
  quant_common::importance_weights(x, qw, sigma2, qk_k, weight);
  float max_scale = 0;
  for (int ib = 0; ib < qk_k / n; ++ib) {
    sub[ib] = fit_sub_block<n>(s, x + n * ib, weight + n * ib, eps, best_cuts);
    max_scale = std::max(max_scale, sub[ib].scale);
  }
  return max_scale;
}

// The 3-bit code of a sub-block scale against the super-block's 1 / d.
int iq1_scale_code(float id, float scale) { return std::clamp(nearest_int(0.5f * (id * scale - 1)), 0, 7); }

void quantize_iq1_s_block(const float* x, const float* qw, block_iq1_s& y) {
  float weight[qk_k];
  iq1_sub_block<32> sub[qk_k / 32];
  const float max_scale = fit_sub_blocks<32>(search_of(ggml_type::iq1_s), x, qw, 1e-12f, best_cuts_iq1_s, weight, sub);
  std::memset(&y, 0, sizeof(y));
  for (int ib = 0; ib < qk_k / 32; ++ib) {
    for (int k = 0; k < 4; ++k) {
      y.qs[4 * ib + k] = static_cast<uint8_t>(sub[ib].entries[k] & 255);
      y.qh[ib] = static_cast<uint16_t>(y.qh[ib] | ((sub[ib].entries[k] >> 8) << (3 * k)));
    }
  }
  if (max_scale == 0) return;
  // The stored d carries llama.cpp's fudge factor 1.125; the codes are
  // taken against the exact one.
  const float d = max_scale / 15;
  y.d = fp32_to_fp16(d * 1.125f);
  const float id = 1 / d;
  for (int ib = 0; ib < qk_k / 32; ++ib) {
    const int l = iq1_scale_code(id, sub[ib].scale) | (sub[ib].minus[0] ? 8 : 0);
    y.qh[ib] = static_cast<uint16_t>(y.qh[ib] | (l << 12));
  }
}

// iq1_m's d is not max_scale / 15 but the least-squares fit of the whole
// super-block to its stored codes and entries (times llama.cpp's fudge
// factor 1.1125).
void quantize_iq1_m_block(const float* x, const float* qw, block_iq1_m& y) {
  const grid_search& s = search_of(ggml_type::iq1_m);
  float weight[qk_k];
  iq1_sub_block<16> sub[qk_k / 16];
  const float max_scale = fit_sub_blocks<16>(s, x, qw, 1e-7f, best_cuts_iq1_m, weight, sub);
  std::memset(&y, 0, sizeof(y));
  for (int ib = 0; ib < qk_k / 16; ++ib) {
    y.qs[2 * ib] = static_cast<uint8_t>(sub[ib].entries[0] & 255);
    y.qs[2 * ib + 1] = static_cast<uint8_t>(sub[ib].entries[1] & 255);
    y.qh[ib] = static_cast<uint8_t>((sub[ib].entries[0] >> 8) | ((sub[ib].entries[1] >> 8) << 4));
  }
  if (max_scale == 0) return;
  float d = max_scale / 15;
  const float id = 1 / d;
  uint16_t sc[4] = {};
  float sum_qx = 0, sum_q2 = 0;
  for (int ib = 0; ib < qk_k / 16; ++ib) {
    const int l = iq1_scale_code(id, sub[ib].scale);
    sc[ib / 4] = static_cast<uint16_t>(sc[ib / 4] | (l << (3 * (ib % 4))));
    y.qh[ib] = static_cast<uint8_t>(y.qh[ib] | (sub[ib].minus[0] ? 0x08 : 0) | (sub[ib].minus[1] ? 0x80 : 0));
    for (int k = 0; k < 2; ++k) {
      const int e = 16 * ib + 8 * k;
      add_group_sums(s.points[sub[ib].entries[k]], values_of(sub[ib].minus[k]), static_cast<float>(2 * l + 1), x + e, weight + e,
                     sum_qx, sum_q2);
    }
  }
  if (sum_q2 > 0) d = sum_qx / sum_q2;
  const half_bits h = fp32_to_fp16(d * 1.1125f);
  for (int i = 0; i < 4; ++i) sc[i] = static_cast<uint16_t>(sc[i] | ((h >> (4 * i)) & 0xf) << 12);
  std::memcpy(y.scales, sc, sizeof(sc));
}

}  // namespace

// With importance weights qw[n] only (llama-quantize has none without).
void quantize_row_iq1_s_weighted(const float* x, void* y, int64_t n, const float* qw) {
  grid_quant::quantize_super_blocks(x, y, n, qw, quantize_iq1_s_block);
}
void quantize_row_iq1_m_weighted(const float* x, void* y, int64_t n, const float* qw) {
  grid_quant::quantize_super_blocks(x, y, n, qw, quantize_iq1_m_block);
}

}  // namespace cortex
