#include <cstdio>
#include <string>

#include "apps/cortex/commands.hpp"
#include "apps/cortex/common.hpp"
#include "kernels/thread_pool.hpp"
#include "model/sampler.hpp"
#include "model/single_sequence.hpp"
#include "text/tokenizer.hpp"

namespace cortex::cli {

namespace {

// Maps the sampling options onto sampler parameters; false + message on a bad value.
bool read_sampling(args& a, sampling_params& p, std::string& err) {
  auto t = a.get_float("temperature"), tp = a.get_float("top-p"), mp = a.get_float("min-p");
  auto rp = a.get_float("repeat-penalty"), pp = a.get_float("presence-penalty"), fp = a.get_float("frequency-penalty");
  auto tk = a.get_int("top-k"), pl = a.get_int("penalty-last-n");
  if (!t || !tp || !mp || !rp || !pp || !fp || !tk || !pl) { err = a.error(); return false; }
  if (*t < 0) { err = "--temperature must be >= 0 (0 = greedy)"; return false; }
  if (*tp <= 0 || *tp > 1) { err = "--top-p must be in (0, 1]"; return false; }
  if (*mp < 0 || *mp > 1) { err = "--min-p must be in [0, 1]"; return false; }
  if (*rp <= 0) { err = "--repeat-penalty must be > 0 (1 = off)"; return false; }
  if (*tk < 0) { err = "--top-k must be >= 0 (0 = off)"; return false; }
  if (*pl < 0) { err = "--penalty-last-n must be >= 0"; return false; }
  p.temperature = static_cast<float>(*t);
  p.top_p = static_cast<float>(*tp);
  p.min_p = static_cast<float>(*mp);
  p.repetition_penalty = static_cast<float>(*rp);
  p.presence_penalty = static_cast<float>(*pp);
  p.frequency_penalty = static_cast<float>(*fp);
  p.top_k = static_cast<int>(*tk);
  p.penalty_last_n = static_cast<int>(*pl);
  if (a.has("seed")) {
    auto s = a.get_int("seed");
    if (!s || *s < 0) { err = "--seed expects a non-negative integer"; return false; }
    p.seed = static_cast<uint64_t>(*s);
  }
  return true;
}

}  // namespace

int cmd_generate(int argc, char** argv) {
  args a("generate", "Generates text from a prompt. Only the generated text goes to stdout, as it is produced;\n"
                     "a summary (prompt tokens, prefill and decode speed) goes to stderr.",
         {{"model", "PATH", "GGUF model file", ""},
          {"prompt", "TEXT", "prompt text", ""},
          {"file", "PATH", "read the prompt from a file ('-' = stdin)", ""},
          {"max-tokens", "N", "tokens to generate at most", "128"},
          {"temperature", "T", "sampling temperature; 0 = greedy", "0.8"},
          {"top-k", "K", "keep the K most likely tokens; 0 = off", "40"},
          {"top-p", "P", "nucleus sampling threshold", "0.95"},
          {"min-p", "P", "drop tokens below P x the top probability", "0.05"},
          {"repeat-penalty", "R", "repetition penalty over the last tokens; 1 = off", "1.0"},
          {"presence-penalty", "X", "presence penalty", "0"},
          {"frequency-penalty", "X", "frequency penalty", "0"},
          {"penalty-last-n", "N", "tokens the penalties look back over", "64"},
          {"seed", "S", "RNG seed (same seed, same output); random when absent", ""},
          {"ctx", "N", "context size in tokens; 0 = the model's", "0"},
          {"threads", "N", "compute threads; 0 = one per core", "0"},
          kv_type_option_spec(),
          {"no-bos", "", "do not add the BOS token", ""},
          {"ignore-eos", "", "keep generating past end-of-sequence", ""},
          {"no-summary", "", "do not print the summary to stderr", ""}});
  if (int rc = parse_args(a, argc, argv); rc >= 0) return rc;
  std::string prompt = a.get("prompt");
  if (a.has("file") && !read_text(a.get("file"), prompt)) {
    std::fprintf(stderr, "cortex: cannot read prompt file '%s'\n", a.get("file").c_str());
    return 1;
  }
  if (!a.has("prompt") && !a.has("file")) {
    std::fprintf(stderr, "cortex: give a prompt with --prompt TEXT or --file PATH\n");
    return 2;
  }
  sampling_params sp;
  std::string err;
  auto max_tokens = a.get_int("max-tokens");
  auto ctx_opt = a.get_int("ctx");
  if (!read_sampling(a, sp, err) || !max_tokens || !ctx_opt) {
    std::fprintf(stderr, "cortex: %s\n", err.empty() ? a.error().c_str() : err.c_str());
    return 2;
  }
  if (*max_tokens < 0) { std::fprintf(stderr, "cortex: --max-tokens must be >= 0\n"); return 2; }
  auto m = load_model(a);
  if (!m) return 1;
  if (!check_generates(*m, "generate")) return 2;
  kernels::kv_type kv_type;
  if (!read_kv_type(a, *m, kv_type)) return 2;
  const auto& tok = m->tokenizer();
  const int n_ctx = *ctx_opt > 0 ? static_cast<int>(*ctx_opt) : m->hparams().n_ctx_train;
  std::vector<int32_t> ids = tok.encode(prompt, !a.has("no-bos"));
  if (ids.empty()) {
    std::fprintf(stderr, "cortex: the prompt is empty after tokenization\n");
    return 2;
  }
  if (static_cast<int>(ids.size()) >= n_ctx) {
    std::fprintf(stderr, "cortex: the prompt has %zu tokens but the context is %d (use a shorter prompt or --ctx)\n", ids.size(), n_ctx);
    return 2;
  }
  const int n_gen_max = std::min<int>(static_cast<int>(*max_tokens), n_ctx - static_cast<int>(ids.size()));

  kernels::thread_pool pool(thread_count(a));
  single_sequence seq(*m, pool, n_ctx, kv_type);
  sampler smp(sp);
  incremental_detokenizer detok(tok, /*continues_text=*/true);
  std::vector<int32_t> history = ids;

  const double t0 = now_seconds();
  seq.feed(ids, logits_mode::last);
  const double t1 = now_seconds();
  int n_gen = 0;
  const bool ignore_eos = a.has("ignore-eos");
  const char* stop_reason = "length";
  while (n_gen < n_gen_max) {
    auto s = smp.sample(seq.logits(0), m->hparams().n_vocab, history);
    ++n_gen;
    if (!ignore_eos && tok.is_eog(s.id)) { stop_reason = "eos"; break; }
    history.push_back(s.id);
    std::string piece = detok.push(s.id);
    if (!piece.empty()) { std::fwrite(piece.data(), 1, piece.size(), stdout); std::fflush(stdout); }
    if (n_gen == n_gen_max) break;
    seq.feed({s.id}, logits_mode::last);
  }
  std::string rest = detok.flush();
  std::fwrite(rest.data(), 1, rest.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
  const double t2 = now_seconds();
  if (!a.has("no-summary")) {
    const double pf = t1 - t0, dc = t2 - t1;
    std::fprintf(stderr, "\n[cortex] prompt %zu tokens, prefill %.3f s (%.1f tok/s); generated %d tokens (%s), decode %.3f s (%.1f tok/s); %d threads\n",
                 ids.size(), pf, ids.size() / std::max(pf, 1e-9), n_gen, stop_reason, dc,
                 n_gen > 1 ? (n_gen - 1) / std::max(dc, 1e-9) : 0.0, pool.size());
  }
  return 0;
}

}  // namespace cortex::cli
