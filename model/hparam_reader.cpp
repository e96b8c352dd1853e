#include "model/hparam_reader.hpp"

#include <algorithm>
#include <cmath>

namespace cortex {

status hparam_reader::u32(const std::string& k, int& out, bool required) const {
  const std::string full = key(k);
  if (f_.find(full) == nullptr) {
    return required ? fail(errc::malformed, "missing metadata key '" + full + "'") : status::ok();
  }
  auto v = f_.get_uint(full);
  if (!v || *v == 0 || *v > (1u << 30)) return fail(errc::malformed, "invalid metadata key '" + full + "'");
  out = static_cast<int>(*v);
  return status::ok();
}

status hparam_reader::f32(const std::string& k, float& out, bool required) const {
  const std::string full = key(k);
  if (f_.find(full) == nullptr) {
    return required ? fail(errc::malformed, "missing metadata key '" + full + "'") : status::ok();
  }
  auto v = f_.get_float(full);
  if (!v || !std::isfinite(*v)) return fail(errc::malformed, "invalid metadata key '" + full + "'");
  out = static_cast<float>(*v);
  return status::ok();
}

status hparam_reader::u32_or_array(const std::string& k, int n_layer, int& out, std::vector<int>& per_layer,
                                   bool required) const {
  const std::string full = key(k);
  const gguf::value* v = f_.find(full);
  per_layer.clear();
  if (v == nullptr || v->type != gguf::value_type::array) return u32(k, out, required);
  auto arr = f_.get_i32_array(full);
  if (!arr || arr->size() != static_cast<size_t>(n_layer)) {
    return fail(errc::malformed, "metadata key '" + full + "' is an array but not of " + std::to_string(n_layer) +
                                     " integers (one per layer)");
  }
  out = 0;
  for (int32_t x : *arr) {
    if (x <= 0 || x > (1 << 30)) return fail(errc::malformed, "invalid metadata key '" + full + "'");
    per_layer.push_back(x);
    out = std::max(out, static_cast<int>(x));
  }
  return status::ok();
}

std::optional<std::string> hparam_reader::str(const std::string& k) const {
  auto v = f_.get_string(key(k));
  if (!v) return std::nullopt;
  return std::string(*v);
}

status hparam_reader::read_common(model_hparams& hp, rope_kind rope, const char* allow_scaling) const {
  auto bad = [&](const std::string& what) { return fail(errc::malformed, what); };
  for (auto [k, dst] : std::initializer_list<std::pair<const char*, int*>>{
           {"context_length", &hp.n_ctx_train}, {"embedding_length", &hp.n_embd}, {"block_count", &hp.n_layer},
           {"attention.head_count", &hp.n_head}}) {
    if (auto st = u32(k, *dst); !st) return st;
  }
  // Widths and KV heads may be per-layer arrays (Gemma 4).
  if (auto st = u32_or_array("feed_forward_length", hp.n_layer, hp.n_ff, hp.n_ff_layer); !st) return st;
  hp.n_head_kv = hp.n_head;
  std::vector<int> n_head_kv_layer;
  if (auto st = u32_or_array("attention.head_count_kv", hp.n_layer, hp.n_head_kv, n_head_kv_layer, false); !st) return st;
  for (int n : n_head_kv_layer.empty() ? std::vector<int>{hp.n_head_kv} : n_head_kv_layer) {
    if (hp.n_head % n != 0) return bad("head_count is not a multiple of head_count_kv");
  }
  hp.head_dim = 0;
  if (auto st = u32("attention.key_length", hp.head_dim, false); !st) return st;
  if (hp.head_dim == 0) {
    if (hp.n_embd % hp.n_head != 0) return bad("embedding_length is not a multiple of head_count");
    hp.head_dim = hp.n_embd / hp.n_head;
  }
  int value_length = hp.head_dim;
  if (auto st = u32("attention.value_length", value_length, false); !st) return st;
  if (value_length != hp.head_dim) {
    return fail(errc::unsupported, "value_length " + std::to_string(value_length) + " differs from key_length " +
                                       std::to_string(hp.head_dim) + " (not supported)");
  }
  if (hp.head_dim > 512) {
    return fail(errc::unsupported, "head dimension " + std::to_string(hp.head_dim) + " > 512 is not supported");
  }
  hp.n_rot = hp.head_dim;
  if (auto st = u32("rope.dimension_count", hp.n_rot, false); !st) return st;
  if (hp.n_rot > hp.head_dim || hp.n_rot % 2) return bad("invalid rope.dimension_count");
  if (auto st = f32("attention.layer_norm_rms_epsilon", hp.rms_eps); !st) return st;
  if (auto st = f32("rope.freq_base", hp.rope_freq_base); !st) return st;
  if (!(hp.rms_eps > 0) || !(hp.rope_freq_base > 0)) return bad("invalid rms epsilon or rope base");
  hp.rope_neox = rope == rope_kind::neox;
  // Linear scaling divides positions; other types change the rotation
  // itself and are refused rather than run with wrong logits.
  const std::string scaling = str("rope.scaling.type").value_or("");
  const bool allowed = (allow_scaling != nullptr && scaling == allow_scaling) || scaling == "yarn";
  if (!scaling.empty() && scaling != "none" && scaling != "linear" && !allowed) {
    return fail(errc::unsupported, "rope scaling type '" + scaling + "' (" + key("rope.scaling.type") +
                                       ") is not supported (supported: none, linear, yarn)");
  }
  float factor = 0.0f;
  if (auto st = f32("rope.scale_linear", factor); !st) return st;
  // (LongRoPE's factor is its own: the arch file reads it.)
  if (scaling != "none" && (!allowed || scaling == "yarn")) {
    if (auto st = f32("rope.scaling.factor", factor); !st) return st;
  }
  if (factor != 0.0f) {
    if (!(factor > 0.0f)) return bad("invalid rope scaling factor " + std::to_string(factor));
    hp.rope_freq_scale = 1.0f / factor;
  }
  layer_attention a;
  a.scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim));
  a.rope = rope;
  a.rope_freq_base = hp.rope_freq_base;
  a.rope_freq_scale = hp.rope_freq_scale;
  if (scaling == "yarn") {
    if (auto st = read_yarn(hp, a); !st) return st;
  }
  hp.attn.assign(static_cast<size_t>(hp.n_layer), a);
  for (size_t il = 0; il < n_head_kv_layer.size(); ++il) hp.attn[il].n_head_kv = n_head_kv_layer[il];
  return status::ok();
}

// llama.cpp's YaRN settings (llama_context's cparams): ext_factor 1 unless
// the file says otherwise, betas 32 / 1, and an attention factor that
// cancels the kernel's own magnitude scaling except for what
// yarn_log_multiplier and attn_factor ask for.
status hparam_reader::read_yarn(model_hparams& hp, layer_attention& a) const {
  if (auto st = u32("rope.scaling.original_context_length", hp.n_ctx_orig, false); !st) return st;
  if (hp.n_ctx_orig == 0) hp.n_ctx_orig = hp.n_ctx_train;
  a.yarn_ext_factor = 1.0f;
  float log_mul = 0.0f, attn_factor = 1.0f;
  for (auto [k, dst] : std::initializer_list<std::pair<const char*, float*>>{
           {"rope.scaling.yarn_ext_factor", &a.yarn_ext_factor}, {"rope.scaling.yarn_beta_fast", &a.yarn_beta_fast},
           {"rope.scaling.yarn_beta_slow", &a.yarn_beta_slow}, {"rope.scaling.yarn_log_multiplier", &log_mul},
           {"rope.scaling.attn_factor", &attn_factor}}) {
    if (auto st = f32(k, *dst); !st) return st;
  }
  if (a.yarn_ext_factor < 0.0f || !(a.yarn_beta_fast > 0.0f) || !(a.yarn_beta_slow > 0.0f) || !(attn_factor > 0.0f)) {
    return fail(errc::malformed, "invalid YaRN settings (" + key("rope.scaling.*") + ")");
  }
  a.rope_attn_factor = 1.0f;
  if (a.yarn_ext_factor != 0.0f) {
    const float factor = 1.0f / hp.rope_freq_scale;
    auto mscale = [&](float m) { return factor <= 1.0f ? 1.0f : 0.1f * m * std::log(factor) + 1.0f; };
    a.rope_attn_factor = log_mul != 0.0f ? mscale(1.0f) / mscale(log_mul) : mscale(1.0f);
    a.rope_attn_factor *= 1.0f / (1.0f + 0.1f * std::log(factor));
  }
  a.rope_attn_factor *= attn_factor;
  return status::ok();
}

status hparam_reader::read_moe(model_hparams& hp, moe_gating gating, bool norm_weights) const {
  moe_spec& m = hp.moe;
  for (auto [k, dst] : std::initializer_list<std::pair<const char*, int*>>{
           {"expert_count", &m.n_expert}, {"expert_used_count", &m.n_used}, {"expert_feed_forward_length", &m.n_ff_exp}}) {
    if (auto st = u32(k, *dst); !st) return st;
  }
  if (m.n_used > m.n_expert || m.n_expert > 4096) {
    return fail(errc::malformed, key("expert_used_count") + " " + std::to_string(m.n_used) + " with " +
                                     key("expert_count") + " " + std::to_string(m.n_expert) +
                                     ": a token cannot use more experts than the layer has (at most 4096)");
  }
  if (auto st = f32("expert_weights_scale", m.weights_scale); !st) return st;
  if (m.weights_scale == 0.0f) m.weights_scale = 1.0f;  // llama.cpp: 0 means none
  m.gating = gating;
  m.norm_weights = norm_weights;
  return status::ok();
}

}  // namespace cortex
