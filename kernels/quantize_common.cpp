#include "kernels/quantize_common.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/fp16.hpp"
#include "kernels/quant_k_scales.hpp"
#include "kernels/quant_nearest_int.hpp"

namespace cortex::quant_common {

float fit_scale_min(int n, int nmax, const float* x, const float* w, uint8_t* L, float* min_out, float rmin,
                    float rdelta, int nstep, bool use_mad) {
  const auto error_of = [use_mad](float diff) { return use_mad ? std::fabs(diff) : diff * diff; };
  float lo = x[0], hi = x[0];
  float sum_w = w[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (lo > 0) lo = 0;
  if (hi == lo) {
    std::fill(L, L + n, uint8_t{0});
    *min_out = -lo;
    return 0.0f;
  }
  float iscale = static_cast<float>(nmax) / (hi - lo);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    L[i] = static_cast<uint8_t>(std::clamp(nearest_int(iscale * (x[i] - lo)), 0, nmax));
    const float diff = scale * L[i] + lo - x[i];
    best_error += w[i] * error_of(diff);
  }
  uint8_t trial[32];
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (hi - lo);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest_int(iscale * (x[i] - lo)), 0, nmax);
      trial[i] = static_cast<uint8_t>(l);
      const float wl = w[i] * static_cast<float>(l);
      sum_l += wl;
      sum_l2 += wl * static_cast<float>(l);
      sum_xl += wl * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0) {
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    float error = 0;
    for (int i = 0; i < n; ++i) {
      const float diff = this_scale * trial[i] + this_min - x[i];
      error += w[i] * error_of(diff);
    }
    if (error < best_error) {
      std::copy(trial, trial + n, L);
      best_error = error;
      scale = this_scale;
      lo = this_min;
    }
  }
  *min_out = -lo;
  return scale;
}

float max_magnitude(const float* x, int n) {
  float amax = 0, vmax = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      vmax = x[i];
    }
  }
  return vmax;
}

float fit_scale_symmetric(int n, int nmax, const float* x, int8_t* L, int n_perturb, const float* w) {
  const float vmax = max_magnitude(x, n);
  if (std::fabs(vmax) < 1e-15f) {
    std::fill(L, L + n, int8_t{0});
    return 0.0f;
  }
  auto level = [nmax](float iscale, float v) { return std::clamp(nearest_int(iscale * v), -nmax, nmax - 1); };
  auto weight = [x, w](int i) { return w ? w[i] : x[i] * x[i]; };
  float iscale = static_cast<float>(-nmax) / vmax;
  float sum_lx = 0, sum_l2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = level(iscale, x[i]);
    L[i] = static_cast<int8_t>(l + nmax);
    const float wi = weight(i);
    sum_lx += wi * x[i] * static_cast<float>(l);
    sum_l2 += wi * static_cast<float>(l) * static_cast<float>(l);
  }
  float scale = sum_l2 != 0 ? sum_lx / sum_l2 : 0.0f;
  float best = scale * sum_lx;
  for (int is = -n_perturb; is <= n_perturb; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / vmax;
    sum_lx = sum_l2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = level(iscale, x[i]);
      const float wi = weight(i);
      sum_lx += wi * x[i] * static_cast<float>(l);
      sum_l2 += wi * static_cast<float>(l) * static_cast<float>(l);
    }
    if (sum_l2 > 0 && sum_lx * sum_lx > best * sum_l2) {
      for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(level(iscale, x[i]) + nmax);
      scale = sum_lx / sum_l2;
      best = scale * sum_lx;
    }
  }
  return scale;
}

// Levels are stored as uint8_t the way the reference stores them (a negative
// level of a negative x wraps), so degenerate inputs give its bytes too.
float fit_scale_positive(int n, int nmax, const float* x, uint8_t* L, const float* w) {
  float max = 0;
  for (int i = 0; i < n; ++i) max = max > x[i] ? max : x[i];
  if (max < 1e-15f) {
    std::fill(L, L + n, uint8_t{0});
    return 0.f;
  }
  float iscale = static_cast<float>(nmax) / max;
  for (int i = 0; i < n; ++i) L[i] = static_cast<uint8_t>(nearest_int(iscale * x[i]));
  const float scale = 1 / iscale;
  float best_mse = 0;
  for (int i = 0; i < n; ++i) {
    const float diff = x[i] - scale * L[i];
    best_mse += w[i] * diff * diff;
  }
  for (int is = -4; is <= 4; ++is) {
    if (is == 0) continue;
    const float iscale_is = (0.1f * static_cast<float>(is) + static_cast<float>(nmax)) / max;
    const float scale_is = 1 / iscale_is;
    float mse = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::min(nmax, nearest_int(iscale_is * x[i]));
      const float diff = x[i] - scale_is * static_cast<float>(l);
      mse += w[i] * diff * diff;
    }
    if (mse < best_mse) {
      best_mse = mse;
      iscale = iscale_is;
    }
  }
  float sum_lx = 0, sum_l2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::min(nmax, nearest_int(iscale * x[i]));
    L[i] = static_cast<uint8_t>(l);
    sum_lx += w[i] * x[i] * static_cast<float>(l);
    sum_l2 += w[i] * static_cast<float>(l) * static_cast<float>(l);
  }
  for (int pass = 0; pass < 5; ++pass) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      const float li = L[i];
      float slx = sum_lx - w[i] * x[i] * li;
      float sl2 = sum_l2 - w[i] * li * li;
      if (!(slx > 0 && sl2 > 0)) continue;
      const int l = std::min(nmax, nearest_int(x[i] * sl2 / slx));
      if (l == L[i]) continue;
      slx += w[i] * x[i] * static_cast<float>(l);
      sl2 += w[i] * static_cast<float>(l) * static_cast<float>(l);
      if (slx * slx * sum_l2 > sum_lx * sum_lx * sl2) {
        L[i] = static_cast<uint8_t>(l);
        sum_lx = slx;
        sum_l2 = sl2;
        ++n_changed;
      }
    }
    if (n_changed == 0) break;
  }
  return sum_l2 > 0.0f ? sum_lx / sum_l2 : 0.0f;
}

void pack_low2(const uint8_t* L, uint8_t* qs) {
  for (int h = 0; h < 2; ++h) {
    const uint8_t* Lh = L + 128 * h;
    for (int l = 0; l < 32; ++l) {
      qs[32 * h + l] = static_cast<uint8_t>(Lh[l] | (Lh[32 + l] << 2) | (Lh[64 + l] << 4) | (Lh[96 + l] << 6));
    }
  }
}

// Scale s: low 4 bits in nibble s / 8 of scales[s % 8], high 2 bits in bit
// pair s / 4 of scales[8 + s % 4].
void set_q3_k_scale(uint8_t* scales, int s, int l) {
  scales[s % 8] = static_cast<uint8_t>(scales[s % 8] | ((l & 0xf) << (4 * (s / 8))));
  scales[8 + s % 4] = static_cast<uint8_t>(scales[8 + s % 4] | ((l >> 4) << (2 * (s / 4))));
}

int q3_k_scale(const uint8_t* scales, int s) {
  const int low = (scales[s % 8] >> (4 * (s / 8))) & 0xf;
  const int high = (scales[8 + s % 4] >> (2 * (s / 4))) & 3;
  return (low | (high << 4)) - 32;
}

// Element 128h + 32p + l: third bit to bit 4h + p of hmask[l].
void pack_q3_k_levels(const uint8_t* L, block_q3_k& y) {
  std::memset(y.hmask, 0, sizeof(y.hmask));
  uint8_t low2[qk_k];
  for (int e = 0; e < qk_k; ++e) {
    if (L[e] > 3) y.hmask[e % 32] = static_cast<uint8_t>(y.hmask[e % 32] | (1 << (e / 32)));
    low2[e] = static_cast<uint8_t>(L[e] & 3);
  }
  pack_low2(low2, y.qs);
}

void finish_q2_k(const float* x, uint8_t* L, block_q2_k& y) {
  const float d_all = fp16_to_fp32(y.d), dmin_all = fp16_to_fp32(y.dmin);
  for (int s = 0; s < qk_k / 16; ++s) {
    const float d = d_all * static_cast<float>(y.scales[s] & 0xf);
    if (d == 0.0f) continue;
    const float dm = dmin_all * static_cast<float>(y.scales[s] >> 4);
    for (int l = 0; l < 16; ++l) {
      L[16 * s + l] = static_cast<uint8_t>(std::clamp(nearest_int((x[16 * s + l] + dm) / d), 0, 3));
    }
  }
  pack_low2(L, y.qs);
}

void finish_q3_k(const float* x, int8_t* L, block_q3_k& y) {
  const float d_all = fp16_to_fp32(y.d);
  for (int s = 0; s < qk_k / 16; ++s) {
    const float d = d_all * static_cast<float>(q3_k_scale(y.scales, s));
    if (d == 0.0f) continue;
    for (int l = 0; l < 16; ++l) {
      L[16 * s + l] = static_cast<int8_t>(std::clamp(nearest_int(x[16 * s + l] / d), -4, 3) + 4);
    }
  }
  pack_q3_k_levels(reinterpret_cast<const uint8_t*>(L), y);
}

void pack_nibbles_32(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(L[j] | (L[j + 16] << 4));
}

void pack_fifth_bits_32(const uint8_t* L, uint8_t* qs, uint8_t* qh) {
  uint32_t bits = 0;
  for (int j = 0; j < 16; ++j) {
    qs[j] = static_cast<uint8_t>((L[j] & 0x0f) | ((L[j + 16] & 0x0f) << 4));
    bits |= static_cast<uint32_t>((L[j] & 0x10) >> 4) << j;
    bits |= static_cast<uint32_t>((L[j + 16] & 0x10) >> 4) << (j + 16);
  }
  for (int b = 0; b < 4; ++b) qh[b] = static_cast<uint8_t>(bits >> (8 * b));
}

float sum_squares(const float* x, int64_t n) {
  float s = 0;
  for (int64_t i = 0; i < n; ++i) s += x[i] * x[i];
  return s;
}

float importance_weights(const float* x, const float* qw, float sigma2, int n, float* out) {
  float sum = 0;
  for (int j = 0; j < n; ++j) {
    out[j] = qw[j] * std::sqrt(sigma2 + x[j] * x[j]);
    sum += out[j];
  }
  return sum;
}

void requantize_k_levels(const float* x, const uint8_t* packed_scales, half_bits d, half_bits dmin, int nmax, uint8_t* L) {
  const float d_all = fp16_to_fp32(d), dmin_all = fp16_to_fp32(dmin);
  for (int s = 0; s < qk_k / 32; ++s) {
    uint8_t sc, m;
    get_scale_min_k4(s, packed_scales, &sc, &m);
    const float ds = d_all * sc;
    if (ds == 0.0f) continue;
    const float dm = dmin_all * m;
    for (int l = 0; l < 32; ++l) {
      L[32 * s + l] = static_cast<uint8_t>(std::clamp(nearest_int((x[32 * s + l] + dm) / ds), 0, nmax));
    }
  }
}

void pack_q4_k_levels(const uint8_t* L, block_q4_k& y) {
  for (int c = 0; c < qk_k / 64; ++c) {
    for (int l = 0; l < 32; ++l) y.qs[32 * c + l] = static_cast<uint8_t>(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
  }
}

void pack_q5_k_levels(const uint8_t* L, block_q5_k& y) {
  std::memset(y.qh, 0, sizeof(y.qh));
  for (int s = 0; s < qk_k / 32; ++s) {
    for (int l = 0; l < 32; ++l) {
      const int v = L[32 * s + l];
      y.qh[l] = static_cast<uint8_t>(y.qh[l] | ((v >> 4) << s));
    }
  }
  for (int c = 0; c < qk_k / 64; ++c) {
    for (int l = 0; l < 32; ++l) {
      y.qs[32 * c + l] = static_cast<uint8_t>((L[64 * c + l] & 0x0f) | ((L[64 * c + 32 + l] & 0x0f) << 4));
    }
  }
}

void quantize_q6_k_blocks(const float* x, block_q6_k* y, int64_t nb, int n_perturb, const float* w) {
  int8_t L[qk_k];
  float scales[qk_k / 16];
  for (int64_t i = 0; i < nb; ++i, x += qk_k) {
    float max_scale = 0, max_abs_scale = 0;
    for (int s = 0; s < qk_k / 16; ++s) {
      const float* ws = w ? w + qk_k * i + 16 * s : nullptr;
      scales[s] = fit_scale_symmetric(16, 32, x + 16 * s, L + 16 * s, n_perturb, ws);
      if (std::fabs(scales[s]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[s]);
        max_scale = scales[s];
      }
    }
    if (max_abs_scale < 1e-15f) {
      std::memset(&y[i], 0, sizeof(y[i]));
      continue;
    }
    const float iscale = -128.f / max_scale;
    y[i].d = fp32_to_fp16(1 / iscale);
    for (int s = 0; s < qk_k / 16; ++s) y[i].scales[s] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[s])));
    const float d_all = fp16_to_fp32(y[i].d);
    for (int s = 0; s < qk_k / 16; ++s) {
      const float d = d_all * y[i].scales[s];
      if (d == 0.0f) continue;
      for (int l = 0; l < 16; ++l) {
        L[16 * s + l] = static_cast<int8_t>(std::clamp(nearest_int(x[16 * s + l] / d), -32, 31) + 32);
      }
    }
    for (int h = 0; h < qk_k / 128; ++h) {
      const int8_t* Lh = L + 128 * h;
      for (int l = 0; l < 32; ++l) {
        y[i].ql[64 * h + l] = static_cast<uint8_t>((Lh[l] & 0x0f) | ((Lh[64 + l] & 0x0f) << 4));
        y[i].ql[64 * h + 32 + l] = static_cast<uint8_t>((Lh[32 + l] & 0x0f) | ((Lh[96 + l] & 0x0f) << 4));
        y[i].qh[32 * h + l] = static_cast<uint8_t>((Lh[l] >> 4) | ((Lh[32 + l] >> 4) << 2) | ((Lh[64 + l] >> 4) << 4) |
                                                   ((Lh[96 + l] >> 4) << 6));
      }
    }
  }
}

}  // namespace cortex::quant_common
