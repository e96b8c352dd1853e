#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "apps/cortex/commands.hpp"
#include "apps/cortex/common.hpp"
#include "kernels/thread_pool.hpp"
#include "model/embedding.hpp"
#include "model/kv_arena.hpp"
#include "model/single_sequence.hpp"
#include "text/tokenizer.hpp"

namespace cortex::cli {
namespace {

bool parse_pooling(const std::string& s, pooling_kind& out) {
  const std::pair<const char*, pooling_kind> names[] = {{"none", pooling_kind::none}, {"mean", pooling_kind::mean},
                                                         {"cls", pooling_kind::cls},   {"last", pooling_kind::last},
                                                         {"rank", pooling_kind::rank}};
  for (const auto& [name, p] : names) {
    if (s == name) {
      out = p;
      return true;
    }
  }
  return false;
}

void print_vector(const std::vector<float>& e, size_t n_tokens, bool json, std::string& out) {
  char buf[32];
  if (json) out += "{\"n_embd\": " + std::to_string(e.size()) + ", \"prompt_tokens\": " + std::to_string(n_tokens) + ", \"embedding\": [";
  for (size_t i = 0; i < e.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.9g", i == 0 ? "" : json ? ", " : " ", e[i]);
    out += buf;
  }
  out += json ? "]}\n" : "\n";
}

}  // namespace

int cmd_embed(int argc, char** argv) {
  args a("embed",
         "Embeddings as llama.cpp's llama-embedding computes them. A decoder: the mean over every token (BOS included:\n"
         "a text is tokenized with the model's BOS rule) of the final hidden state after the output norm,\n"
         "L2-normalized. An encoder (bert family): the file's pooling (or --pooling) of its final hidden rows,\n"
         "L2-normalized (rank scores as they are; none: every token's row). Prints one input's output per line,\n"
         "components separated by spaces, or with --json {\"n_embd\", \"prompt_tokens\", \"embedding\"} per line.",
         {{"model", "PATH", "GGUF model file", ""},
          {"prompt", "TEXT", "text to embed", ""},
          {"tokens", "IDS", "comma-separated token ids to embed instead of a text, e.g. 1,450,4996", ""},
          {"input-file", "PATH", "encoders: one text per line, all embedded (batched into steps of --batch-tokens)", ""},
          {"pooling", "KIND", "encoders: none, mean, cls, last or rank instead of the file's", ""},
          {"batch-tokens", "N", "encoders: tokens per forward step (inputs are never split)", "2048"},
          {"timing", "", "encoders: print inputs/s and tokens/s to stderr", ""},
          {"chunk", "N", "decoders: prefill chunk size (the result does not depend on it)", "512"},
          {"threads", "N", "compute threads; 0 = one per core", "0"},
          {"json", "", "JSON output", ""}});
  if (int rc = parse_args(a, argc, argv); rc >= 0) return rc;
  if (a.has("prompt") + a.has("tokens") + a.has("input-file") != 1) {
    std::fprintf(stderr, "cortex: give exactly one of --prompt TEXT, --tokens IDS or --input-file PATH\n");
    return 2;
  }
  std::vector<int32_t> ids;
  if (a.has("tokens") && !parse_id_list(a.get("tokens"), ids)) {
    std::fprintf(stderr, "cortex: --tokens expects comma-separated non-negative ids, e.g. 1,2,3\n");
    return 2;
  }
  auto chunk = a.get_int("chunk");
  auto batch_tokens = a.get_int("batch-tokens");
  if (!chunk || *chunk <= 0 || !batch_tokens || *batch_tokens <= 0) {
    std::fprintf(stderr, "cortex: --chunk and --batch-tokens must be positive integers\n");
    return 2;
  }
  auto m = load_model(a);
  if (!m) return 1;
  const auto& hp = m->hparams();
  const bool json = a.has("json");
  if (!hp.encoder.enabled) {
    if (a.has("input-file") || a.has("pooling")) {
      std::fprintf(stderr, "cortex: --input-file and --pooling are for encoders; '%s' is a decoder (mean pooling)\n",
                   m->name().c_str());
      return 2;
    }
    if (a.has("prompt")) ids = m->tokenizer().encode(a.get("prompt"), true);
    if (ids.empty()) {
      std::fprintf(stderr, "cortex: the input has no tokens (an empty prompt for a model that adds no BOS)\n");
      return 2;
    }
    kernels::thread_pool pool(thread_count(a));
    // An F32 cache, as llama-embedding's reference outputs were made with.
    single_sequence seq(*m, pool, static_cast<int>(ids.size()), kernels::kv_type::f32);
    auto e = embed_tokens(seq, *m, ids, static_cast<int>(*chunk));
    if (!e) {
      std::fprintf(stderr, "cortex: %s\n", e.error().message.c_str());
      return 2;
    }
    std::string out;
    print_vector(*e, ids.size(), json, out);
    std::fputs(out.c_str(), stdout);
    return 0;
  }

  pooling_kind pooling = hp.encoder.pooling;
  if (a.has("pooling") && !parse_pooling(a.get("pooling"), pooling)) {
    std::fprintf(stderr, "cortex: --pooling must be none, mean, cls, last or rank\n");
    return 2;
  }
  std::vector<std::vector<int32_t>> inputs;
  if (a.has("tokens")) {
    inputs.push_back(ids);
  } else if (a.has("prompt")) {
    inputs.push_back(m->tokenizer().encode(a.get("prompt"), true));
  } else {
    std::string text;
    if (!read_text(a.get("input-file"), text)) {
      std::fprintf(stderr, "cortex: cannot read --input-file '%s'\n", a.get("input-file").c_str());
      return 2;
    }
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) inputs.push_back(m->tokenizer().encode(line, true));
    if (inputs.empty()) {
      std::fprintf(stderr, "cortex: --input-file '%s' has no lines\n", a.get("input-file").c_str());
      return 2;
    }
  }
  kernels::thread_pool pool(thread_count(a));
  forward_pass fwd(*m, pool);
  kv_arena kv(hp, 1, 16, kernels::kv_type::f32);  // encoders keep no K/V: the pass only needs one to hold
  const double t0 = now_seconds();
  auto e = encode_inputs(fwd, kv, *m, inputs, pooling, true, static_cast<int>(*batch_tokens));
  const double seconds = now_seconds() - t0;
  if (!e) {
    std::fprintf(stderr, "cortex: %s\n", e.error().message.c_str());
    return 2;
  }
  std::string out;
  size_t n_tokens = 0;
  for (size_t i = 0; i < e->size(); ++i) {
    print_vector((*e)[i], inputs[i].size(), json, out);
    n_tokens += inputs[i].size();
  }
  std::fputs(out.c_str(), stdout);
  if (a.has("timing")) {
    std::fprintf(stderr, "[embed] %zu inputs, %zu tokens in %.3f s: %.2f inputs/s, %.1f tokens/s (%d threads)\n",
                 inputs.size(), n_tokens, seconds, inputs.size() / seconds, n_tokens / seconds, pool.size());
  }
  return 0;
}

}  // namespace cortex::cli
