#include <cmath>
#include <cstdio>
#include <string>

#include "apps/cortex/commands.hpp"
#include "apps/cortex/common.hpp"
#include "kernels/thread_pool.hpp"
#include "model/perplexity.hpp"
#include "text/tokenizer.hpp"

namespace cortex::cli {

int cmd_perplexity(int argc, char** argv) {
  args a("perplexity",
         "Perplexity of a text as llama.cpp's perplexity tool computes it: the text is tokenized (with BOS),\n"
         "cut into windows of N tokens whose first token is replaced by BOS, and the second half of each\n"
         "window is scored. Prints 'PPL = <value>' on stdout, progress on stderr.",
         {{"model", "PATH", "GGUF model file", ""},
          {"file", "PATH", "text file ('-' = stdin)", ""},
          {"ctx", "N", "window size in tokens", "128"},
          {"threads", "N", "compute threads; 0 = one per core", "0"},
          kv_type_option_spec()});
  if (int rc = parse_args(a, argc, argv); rc >= 0) return rc;
  std::string text;
  if (!a.has("file")) { std::fprintf(stderr, "cortex: --file PATH is required\n"); return 2; }
  if (!read_text(a.get("file"), text)) { std::fprintf(stderr, "cortex: cannot read '%s'\n", a.get("file").c_str()); return 1; }
  auto ctx = a.get_int("ctx");
  if (!ctx || *ctx < 8) { std::fprintf(stderr, "cortex: --ctx must be an integer >= 8\n"); return 2; }
  auto m = load_model(a);
  if (!m) return 1;
  if (!check_generates(*m, "perplexity")) return 2;
  kernels::kv_type kv_type;
  if (!read_kv_type(a, *m, kv_type)) return 2;
  const auto& tok = m->tokenizer();
  const int n_ctx = static_cast<int>(*ctx);
  auto ids = tok.encode(text, true);
  const int n_chunks = static_cast<int>(ids.size()) / n_ctx;
  if (n_chunks < 1) {
    std::fprintf(stderr, "cortex: the text has %zu tokens; it needs at least %d for one window of --ctx %d\n", ids.size(), n_ctx, n_ctx);
    return 2;
  }
  kernels::thread_pool pool(thread_count(a));
  const double t0 = now_seconds();
  const perplexity_result r = windowed_perplexity(*m, pool, ids, n_ctx, kv_type, [&](int done, int total, double ppl) {
    std::fprintf(stderr, "[%d/%d] running PPL %.4f (%.1f s)\n", done, total, ppl, now_seconds() - t0);
  });
  std::printf("PPL = %.4f\n", r.ppl);
  return 0;
}

}  // namespace cortex::cli
