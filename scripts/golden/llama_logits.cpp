// Dumps a reference golden with llama.cpp's public C API (libllama), in the
// format of ../shared/golden/arch (its README: F32 K/V, flash attention off,
// full-size SWA cache, n_ctx = n_batch = n_ubatch = 1024, 2 threads; each
// prompt as one batch with logits at every position, then n_gen greedy
// tokens one decode call each). Not part of the build: it links the
// reference, built outside the repository (scripts/golden/make_gemma4_moe.sh
// compiles and runs it).
//
// Usage: llama_logits MODEL.gguf PROMPTS.json N_GEN > OUT.json
//   PROMPTS.json: {"cases": [{"tokens": [...]}, ...]} (other fields ignored)
// Output: {"n_vocab", "n_gen", "min_greedy_gap", "min_router_margin",
//          "cases": [{"tokens", "prefill_top8", "greedy", "decode_top8"}]}
// min_router_margin: over every MoE router (the graph's ffn_moe_logits
// tensors) and token, the gap between the n_used-th and the next largest
// router logit (a reimplementation's router logits must be closer than this
// to pick the same experts).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ggml-backend.h"
#include "llama.h"

namespace {

using nlohmann::json;

struct router_watch {
  int n_used = 0;
  double min_margin = std::numeric_limits<double>::infinity();
};

bool on_tensor(ggml_tensor* t, bool ask, void* user) {
  const bool wanted = std::string(t->name).rfind("ffn_moe_logits", 0) == 0 && t->type == GGML_TYPE_F32;
  if (ask) return wanted;
  if (!wanted) return true;
  auto* w = static_cast<router_watch*>(user);
  const int64_t n_expert = t->ne[0], n_tokens = t->ne[1];
  std::vector<float> v(static_cast<size_t>(n_expert * n_tokens));
  ggml_backend_tensor_get(t, v.data(), 0, v.size() * sizeof(float));
  for (int64_t i = 0; i < n_tokens; ++i) {
    std::vector<double> p(v.begin() + i * n_expert, v.begin() + (i + 1) * n_expert);
    std::sort(p.begin(), p.end(), std::greater<double>());
    if (w->n_used > 0 && w->n_used < n_expert) w->min_margin = std::min(w->min_margin, p[w->n_used - 1] - p[w->n_used]);
  }
  return true;
}

json top8(const float* logits, int n_vocab, double* gap) {
  std::vector<int> order(static_cast<size_t>(n_vocab));
  for (int i = 0; i < n_vocab; ++i) order[static_cast<size_t>(i)] = i;
  std::partial_sort(order.begin(), order.begin() + 8, order.end(),
                    [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  json out = json::array();
  for (int k = 0; k < 8; ++k) out.push_back({order[static_cast<size_t>(k)], logits[order[static_cast<size_t>(k)]]});
  if (gap) *gap = static_cast<double>(logits[order[0]]) - logits[order[1]];
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL.gguf PROMPTS.json N_GEN > OUT.json\n", argv[0]);
    return 2;
  }
  const json prompts = json::parse(std::ifstream(argv[2]));
  const int n_gen = std::atoi(argv[3]);
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) {
    std::fprintf(stderr, "cannot load %s\n", argv[1]);
    return 1;
  }
  router_watch watch;
  {
    char arch[64] = {0}, used[32] = {0};
    llama_model_meta_val_str(model, "general.architecture", arch, sizeof arch);
    if (llama_model_meta_val_str(model, (std::string(arch) + ".expert_used_count").c_str(), used, sizeof used) > 0) {
      watch.n_used = std::atoi(used);
    }
  }
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  json out = {{"n_vocab", n_vocab}, {"n_gen", n_gen}, {"cases", json::array()}};
  double min_gap = std::numeric_limits<double>::infinity();
  for (const auto& c : prompts["cases"]) {
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = cp.n_batch = cp.n_ubatch = 1024;
    cp.n_threads = cp.n_threads_batch = 2;
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.swa_full = true;
    cp.cb_eval = on_tensor;
    cp.cb_eval_user_data = &watch;
    llama_context* ctx = llama_init_from_model(model, cp);
    auto tokens = c["tokens"].get<std::vector<llama_token>>();
    const int n = static_cast<int>(tokens.size());
    llama_batch b = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; ++i) {
      b.token[i] = tokens[static_cast<size_t>(i)];
      b.pos[i] = i;
      b.n_seq_id[i] = 1;
      b.seq_id[i][0] = 0;
      b.logits[i] = 1;
    }
    b.n_tokens = n;
    if (llama_decode(ctx, b) != 0) {
      std::fprintf(stderr, "decode failed\n");
      return 1;
    }
    json cj = {{"tokens", tokens}, {"prefill_top8", json::array()}, {"greedy", json::array()}, {"decode_top8", json::array()}};
    for (int i = 0; i < n; ++i) cj["prefill_top8"].push_back(top8(llama_get_logits_ith(ctx, i), n_vocab, nullptr));
    double gap = 0;
    top8(llama_get_logits_ith(ctx, n - 1), n_vocab, &gap);
    llama_token next = cj["prefill_top8"][n - 1][0][0].get<llama_token>();
    min_gap = std::min(min_gap, gap);
    llama_batch one = llama_batch_init(1, 0, 1);
    for (int s = 0; s < n_gen; ++s) {
      cj["greedy"].push_back(next);
      if (s + 1 == n_gen) break;
      one.token[0] = next;
      one.pos[0] = n + s;
      one.n_seq_id[0] = 1;
      one.seq_id[0][0] = 0;
      one.logits[0] = 1;
      one.n_tokens = 1;
      if (llama_decode(ctx, one) != 0) {
        std::fprintf(stderr, "decode failed\n");
        return 1;
      }
      const float* l = llama_get_logits_ith(ctx, 0);
      json t8 = top8(l, n_vocab, &gap);
      min_gap = std::min(min_gap, gap);
      next = t8[0][0].get<llama_token>();
      cj["decode_top8"].push_back(t8);
    }
    llama_batch_free(one);
    llama_batch_free(b);
    llama_free(ctx);
    out["cases"].push_back(cj);
  }
  out["min_greedy_gap"] = min_gap;
  if (watch.n_used > 0) out["min_router_margin"] = watch.min_margin;
  llama_model_free(model);
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
