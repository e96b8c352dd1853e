// Element-wise and per-row operations of the forward pass: RMSNorm, RoPE,
// softmax, SwiGLU, GeGLU, softcapping and the residual add. Pure functions
// over pointers and sizes; no allocation, thread-safe (they touch only their
// arguments).
//
// Numerics follow llama.cpp's CPU backend (ggml-cpu ops.cpp / vec.h) so that
// F32 models reproduce its logits to ~1e-5: RMSNorm sums squares in double,
// RoPE builds theta by repeated float multiplication, softmax sums in double.
#pragma once

namespace cortex::kernels {

// x (n,), w (n,) -> out (n,): out[i] = (x[i] * scale) * w[i] with
// scale = 1 / sqrtf(float(sum_double(x[i]*x[i]) / n) + eps), as ggml's
// rms_norm followed by mul. out may alias x. REQUIRES: n > 0.
void rmsnorm(const float* x, const float* w, float* out, int n, float eps);

// x (n,), w (n,), b (n,) -> out (n,): LayerNorm as ggml's norm followed by
// mul and add: mean = float(sum_double(x) / n), var = float(sum_double((x -
// mean)^2) / n), out[i] = ((x[i] - mean) * (1 / sqrtf(var + eps))) * w[i] +
// b[i]; b null: no bias (ggml's norm and mul alone). out may alias x.
// REQUIRES: n > 0.
void layernorm(const float* x, const float* w, const float* b, float* out, int n, float eps);

// RoPE in place on one token. x (n_heads, head_dim); in each head the first
// n_rot dims are rotated, the rest are left untouched. Pair i (0 <= i <
// n_rot/2) is rotated by theta_i = pos * freq_base^(-2i/n_rot), computed as
// llama.cpp does: theta_scale = powf(freq_base, -2.0f/n_rot), theta_0 = pos,
// theta_{i+1} = theta_i * theta_scale, cosf/sinf in float.
//   neox == false: pair i is (2i, 2i+1)        (GGUF 'llama', rope mode 0)
//   neox == true:  pair i is (i, i + n_rot/2)  (GGUF 'qwen2', mode NEOX)
// Scaled variants, as ggml_rope_ext with ext_factor 0 and attn_factor 1:
// theta_i = freq_scale * (theta_i / freq_factors[i]). freq_scale is linear
// scaling (1 / GGUF rope.scaling.factor); freq_factors (n_rot/2,) are Llama
// 3.1's per-pair divisors (the rope_freqs.weight tensor), null for none.
// With 1 and null theta is untouched, bit for bit. attn_factor multiplies
// cos and sin (ggml's mscale; LongRoPE's rope.scaling.attn_factor), 1: none.
// REQUIRES: n_rot even, 0 < n_rot <= head_dim, n_rot <= 512, pos >= 0,
// freq_factors (when given) > 0.
//
// YaRN (ggml's rope_yarn, with ext_factor != 0): pair i's angle blends the
// interpolated angle (freq_scale * theta) and the extrapolated one (theta)
// by ramp(i) * ext_factor, ramp(i) = 1 - clamp((i - corr_low) /
// max(0.001, corr_high - corr_low), 0, 1); cos and sin are further scaled by
// 1 + 0.1 ln(1 / freq_scale). corr_low / corr_high: yarn_corr_dims.
struct yarn_params {
  float ext_factor = 0.0f;  // 0: plain (linear) scaling
  float corr_low = 0.0f, corr_high = 0.0f;
};
// ggml_rope_yarn_corr_dims: the first and last pair index of the ramp for a
// model trained on n_ctx_orig positions (beta_fast / beta_slow rotations).
yarn_params yarn_corr_dims(int n_rot, int n_ctx_orig, float freq_base, float beta_fast, float beta_slow,
                           float ext_factor);
void rope(float* x, int n_heads, int head_dim, int n_rot, int pos, float freq_base, bool neox,
          float freq_scale = 1.0f, const float* freq_factors = nullptr, float attn_factor = 1.0f,
          const yarn_params& yarn = yarn_params{});

// x (n,) in place: x[i] = exp(x[i] - max) / sum. Entries equal to -inf get
// probability 0. REQUIRES: n > 0 and at least one finite entry.
void softmax(float* x, int n);

// log(sum_i exp(x[i])) of x (n,), computed stably (max-shifted, double sum).
// -inf entries contribute 0. REQUIRES: n > 0 and at least one finite entry.
float log_sum_exp(const float* x, int n);

// gate (n,), up (n,) -> out (n,): out[i] = gate[i] * sigmoid(gate[i]) * up[i]
// (SwiGLU). out may alias gate or up.
void silu_mul(const float* gate, const float* up, float* out, int n);

// gate (n,), up (n,) -> out (n,): gpt-oss's clamped SwiGLU, with
// g = min(gate[i], limit): out[i] = g * sigmoid(alpha g) * (clamp(up[i],
// -limit, limit) + 1). out may alias gate or up. REQUIRES: limit > 0.
void swiglu_oai(const float* gate, const float* up, float* out, int n, float alpha, float limit);

// gate (n,), up (n,) -> out (n,): out[i] = gelu_tanh(gate[i]) * up[i] (GeGLU,
// Gemma's FFN), gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
// ggml's gelu. Computed as x * sigmoid(t), t = 2 sqrt(2/pi) (x + 0.044715
// x^3), the same function, which keeps its relative accuracy (about 2 + |t|
// ulp, t's rounding amplified through exp) for negative x too, where 1 + tanh
// cancels; x below about -10 (values under 2e-37) gives 0. out may alias gate
// or up.
void gelu_mul(const float* gate, const float* up, float* out, int n);

// x (n,) -> out (n,): GELU exactly as llama.cpp's CPU backend computes
// ggml_gelu on f32 (GGML_GELU_FP16): x <= -10 gives 0, x >= 10 gives x, any
// other x is rounded to half precision and looked up in a table holding, for
// every half value h, the tanh-form GELU of h computed in float and rounded
// to half. Encoders (BERT's FFN) use it; matching the reference within 1e-4
// needs its half-precision steps, which move values by up to 1e-3
// relative. out may alias x.
void gelu_fp16_table(const float* x, float* out, int n);

// gelu_fp16_table one element at a time with the software half rounding:
// the definition the vector kernels are tested against.
void gelu_fp16_table_reference(const float* x, float* out, int n);

// gelu_mul computed from the tanh formula in double (absolute error about
// 1e-16 |x| where 1 + tanh cancels). For tests and benchmarks.
void gelu_mul_reference(const float* gate, const float* up, float* out, int n);

// x (n,) in place: x[i] = cap * tanh(x[i] / cap), to a few ulp (Gemma 2's
// final-logit softcapping; attention scores are capped by attention_args's
// softcap). REQUIRES: cap > 0.
void softcap_inplace(float* x, int n, float cap);

// dst (n,) += src (n,).
void add_inplace(float* dst, const float* src, int n);

}  // namespace cortex::kernels
