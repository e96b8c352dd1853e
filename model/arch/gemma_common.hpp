// What Gemma 2 and Gemma 3 share, for their two arch files: the embedding
// scale, the query scale (with llama.cpp's exception for the 27B models,
// which it recognises by layer count) and which layers are windowed.
#pragma once

#include <cmath>

#include "model/hparam_reader.hpp"
#include "model/hparams.hpp"

namespace cortex::gemma {

// The common keys (RoPE "neox"), then: embeddings * sqrt(n_embd); scores * 1/sqrt(head_dim), or
// 1/sqrt(n_embd / n_head) for the 27B model (layer count n_layer_27b); the
// layers with il % pattern != pattern - 1 see only the last
// attention.sliding_window keys. The file's norm weights already hold
// Gemma's 1 + w (the converter folded it in): used as stored.
inline status read_shared(hparam_reader& r, model_hparams& hp, int n_layer_27b, int pattern) {
  if (auto st = r.read_common(hp, rope_kind::neox); !st) return st;
  hp.embd_scale = std::sqrt(static_cast<float>(hp.n_embd));
  const float scale = hp.n_layer == n_layer_27b ? 1.0f / std::sqrt(static_cast<float>(hp.n_embd / hp.n_head))
                                                : 1.0f / std::sqrt(static_cast<float>(hp.head_dim));
  int window = 0;
  if (auto st = r.u32("attention.sliding_window", window); !st) return st;
  if (auto st = r.f32("final_logit_softcapping", hp.final_softcap); !st) return st;
  if (hp.final_softcap < 0.0f) return fail(errc::malformed, "invalid metadata key '" + r.key("final_logit_softcapping") + "'");
  for (int il = 0; il < hp.n_layer; ++il) {
    layer_attention& a = hp.attn[static_cast<size_t>(il)];
    a.scale = scale;
    if (il % pattern != pattern - 1) a.window = window;
  }
  return status::ok();
}

}  // namespace cortex::gemma
