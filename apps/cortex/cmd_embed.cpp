#include <cstdio>
#include <string>
#include <vector>

#include "apps/cortex/commands.hpp"
#include "apps/cortex/common.hpp"
#include "kernels/thread_pool.hpp"
#include "model/embedding.hpp"
#include "model/single_sequence.hpp"
#include "text/tokenizer.hpp"

namespace cortex::cli {

int cmd_embed(int argc, char** argv) {
  args a("embed",
         "Embedding of a text or token list, as llama.cpp's llama-embedding --pooling mean computes it: the mean over\n"
         "every token (BOS included: a text is tokenized with the model's BOS rule) of the final hidden state after\n"
         "the output norm, L2-normalized. Prints the components on one line separated by spaces, or with --json\n"
         "{\"n_embd\", \"prompt_tokens\", \"embedding\"}.",
         {{"model", "PATH", "GGUF model file", ""},
          {"prompt", "TEXT", "text to embed", ""},
          {"tokens", "IDS", "comma-separated token ids to embed instead of a text, e.g. 1,450,4996", ""},
          {"chunk", "N", "prefill chunk size (the result does not depend on it)", "512"},
          {"threads", "N", "compute threads; 0 = one per core", "0"},
          {"json", "", "JSON output", ""}});
  if (int rc = parse_args(a, argc, argv); rc >= 0) return rc;
  if (a.has("prompt") == a.has("tokens")) {
    std::fprintf(stderr, "cortex: give exactly one of --prompt TEXT or --tokens IDS\n");
    return 2;
  }
  std::vector<int32_t> ids;
  if (a.has("tokens") && !parse_id_list(a.get("tokens"), ids)) {
    std::fprintf(stderr, "cortex: --tokens expects comma-separated non-negative ids, e.g. 1,2,3\n");
    return 2;
  }
  auto chunk = a.get_int("chunk");
  if (!chunk || *chunk <= 0) {
    std::fprintf(stderr, "cortex: --chunk must be a positive integer\n");
    return 2;
  }
  auto m = load_model(a);
  if (!m) return 1;
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
  const bool json = a.has("json");
  std::string out = json ? "{\"n_embd\": " + std::to_string(e->size()) + ", \"prompt_tokens\": " +
                               std::to_string(ids.size()) + ", \"embedding\": ["
                         : "";
  char buf[32];
  for (size_t i = 0; i < e->size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.9g", i == 0 ? "" : json ? ", " : " ", (*e)[i]);
    out += buf;
  }
  out += json ? "]}\n" : "\n";
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace cortex::cli
