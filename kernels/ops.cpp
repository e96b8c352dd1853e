// Element-wise kernels. RMSNorm, RoPE and the residual add are plain scalar
// code (memory-bound or cheap next to the matmuls); softmax, SwiGLU, GeGLU and
// softcapping need exp or tanh and go through the per-ISA tables of
// x86/vec_entries.hpp.
#include "kernels/ops.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/fp16.hpp"
#include "kernels/x86/vec_entries.hpp"

namespace cortex::kernels {

void rmsnorm(const float* x, const float* w, float* out, int n, float eps) {
  // Squares in float, sum in double (ggml_float), four partial sums so the
  // loop pipelines; the split changes the double sum by ~1e-16 relative.
  double part[4] = {0.0, 0.0, 0.0, 0.0};
  int i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int j = 0; j < 4; ++j) part[j] += static_cast<double>(x[i + j] * x[i + j]);
  }
  for (; i < n; ++i) part[0] += static_cast<double>(x[i] * x[i]);
  const double sum = (part[0] + part[1]) + (part[2] + part[3]);
  const float mean = static_cast<float>(sum / n);
  const float scale = 1.0f / sqrtf(mean + eps);
  for (i = 0; i < n; ++i) out[i] = (x[i] * scale) * w[i];
}

void layernorm(const float* x, const float* w, const float* b, float* out, int n, float eps) {
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += static_cast<double>(x[i]);
  const float mean = static_cast<float>(sum) / static_cast<float>(n);
  double sq = 0.0;
  for (int i = 0; i < n; ++i) {
    const float d = x[i] - mean;
    sq += static_cast<double>(d * d);
  }
  const float var = static_cast<float>(sq / n);
  const float scale = 1.0f / sqrtf(var + eps);
  if (b == nullptr) {
    for (int i = 0; i < n; ++i) out[i] = ((x[i] - mean) * scale) * w[i];
    return;
  }
  for (int i = 0; i < n; ++i) out[i] = ((x[i] - mean) * scale) * w[i] + b[i];
}

namespace {
// The half-precision GELU table of ggml's CPU backend, built once, each half
// result widened to float so the vector kernels can gather it.
struct gelu_half_table {
  float v[65536];
  gelu_half_table() {
    constexpr float k_sqrt_2_over_pi = 0.79788456080286535587989211986876f;
    constexpr float k_coef_a = 0.044715f;
    for (uint32_t h = 0; h < 65536; ++h) {
      const float x = fp16_to_fp32(static_cast<uint16_t>(h));
      const float g = 0.5f * x * (1.0f + tanhf(k_sqrt_2_over_pi * x * (1.0f + k_coef_a * x * x)));
      v[h] = fp16_to_fp32(fp32_to_fp16(g));
    }
  }
};
const gelu_half_table& gelu_table() {
  static const gelu_half_table table;
  return table;
}
}  // namespace

void gelu_fp16_table(const float* x, float* out, int n) {
  detail::active_vec_entries().gelu_table(gelu_table().v, x, out, n);
}

void gelu_fp16_table_reference(const float* x, float* out, int n) {
  const float* table = gelu_table().v;
  for (int i = 0; i < n; ++i) {
    const float xi = x[i];
    if (xi <= -10.0f) {
      out[i] = 0.0f;
    } else if (xi >= 10.0f) {
      out[i] = xi;
    } else {
      out[i] = table[fp32_to_fp16(xi)];
    }
  }
}

yarn_params yarn_corr_dims(int n_rot, int n_ctx_orig, float freq_base, float beta_fast, float beta_slow,
                           float ext_factor) {
  // The pair index whose wavelength makes n_turns rotations over n_ctx_orig positions.
  auto corr_dim = [&](float n_turns) {
    return static_cast<float>(n_rot) * logf(static_cast<float>(n_ctx_orig) / (n_turns * 2.0f * static_cast<float>(M_PI))) /
           (2.0f * logf(freq_base));
  };
  yarn_params y;
  y.ext_factor = ext_factor;
  y.corr_low = std::max(0.0f, floorf(corr_dim(beta_fast)));
  y.corr_high = std::min(static_cast<float>(n_rot - 1), ceilf(corr_dim(beta_slow)));
  return y;
}

void rope(float* x, int n_heads, int head_dim, int n_rot, int pos, float freq_base, bool neox, float freq_scale,
          const float* freq_factors, float attn_factor, const yarn_params& yarn) {
  constexpr int max_pairs = 256;
  const int n_pairs = n_rot / 2;
  float cos_t[max_pairs];
  float sin_t[max_pairs];
  const float theta_scale = powf(freq_base, -2.0f / static_cast<float>(n_rot));
  float theta = static_cast<float>(pos);
  for (int i = 0; i < n_pairs; ++i) {
    // ggml's rope_yarn order: divide by the factor, then scale.
    const float extrap = freq_factors ? theta / freq_factors[i] : theta;
    float t = freq_scale * extrap;
    float mscale = attn_factor;
    if (yarn.ext_factor != 0.0f) {
      const float y = (static_cast<float>(i) - yarn.corr_low) / std::max(0.001f, yarn.corr_high - yarn.corr_low);
      const float ramp_mix = (1.0f - std::min(1.0f, std::max(0.0f, y))) * yarn.ext_factor;
      t = t * (1.0f - ramp_mix) + extrap * ramp_mix;
      mscale *= 1.0f + 0.1f * logf(1.0f / freq_scale);
    }
    cos_t[i] = cosf(t) * mscale;
    sin_t[i] = sinf(t) * mscale;
    theta *= theta_scale;
  }
  // Pair i is (first + i*step_pair, first + i*step_pair + offset).
  const int offset = neox ? n_pairs : 1;
  const int step = neox ? 1 : 2;
  for (int h = 0; h < n_heads; ++h) {
    float* xh = x + static_cast<size_t>(h) * head_dim;
    for (int i = 0; i < n_pairs; ++i) {
      float* a = xh + i * step;
      const float x0 = a[0];
      const float x1 = a[offset];
      a[0] = x0 * cos_t[i] - x1 * sin_t[i];
      a[offset] = x0 * sin_t[i] + x1 * cos_t[i];
    }
  }
}

void softmax(float* x, int n) {
  const auto& v = detail::active_vec_entries();
  const float m = v.max(x, n);
  const double sum = v.exp_shift_sum(x, x, n, m);
  v.scale(x, static_cast<float>(1.0 / sum), x, n);
}

float log_sum_exp(const float* x, int n) {
  const auto& v = detail::active_vec_entries();
  const float m = v.max(x, n);
  return m + static_cast<float>(std::log(v.exp_shift_sum(x, nullptr, n, m)));
}

void silu_mul(const float* gate, const float* up, float* out, int n) {
  detail::active_vec_entries().silu_mul(gate, up, out, n);
}

void swiglu_oai(const float* gate, const float* up, float* out, int n, float alpha, float limit) {
  for (int i = 0; i < n; ++i) {
    const float g = std::min(gate[i], limit);
    const float u = std::clamp(up[i], -limit, limit);
    out[i] = g / (1.0f + std::exp(-alpha * g)) * (u + 1.0f);
  }
}

void gelu_mul(const float* gate, const float* up, float* out, int n) {
  detail::active_vec_entries().gelu_mul(gate, up, out, n);
}

void gelu_mul_reference(const float* gate, const float* up, float* out, int n) {
  const double k = 0.79788456080286535588;  // sqrt(2 / pi)
  for (int i = 0; i < n; ++i) {
    const double x = gate[i];
    out[i] = static_cast<float>(0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x))) * up[i]);
  }
}

void softcap_inplace(float* x, int n, float cap) { detail::active_vec_entries().softcap(x, n, cap); }

void add_inplace(float* dst, const float* src, int n) {
  for (int i = 0; i < n; ++i) dst[i] += src[i];
}

}  // namespace cortex::kernels
