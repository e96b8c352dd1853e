// tokenize, logits and info: commands that show what the model sees.
#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <string>

#include "apps/cortex/commands.hpp"
#include "apps/cortex/common.hpp"
#include "kernels/amx_choice.hpp"
#include "kernels/thread_pool.hpp"
#include "model/single_sequence.hpp"
#include "text/tokenizer.hpp"

namespace cortex::cli {

int cmd_tokenize(int argc, char** argv) {
  args a("tokenize", "Prints the token ids of a text, space separated (or a JSON list with --json).",
         {{"model", "PATH", "GGUF model or vocabulary-only file (only its tokenizer is used)", ""},
          {"prompt", "TEXT", "text to tokenize", ""},
          {"file", "PATH", "read the text from a file ('-' = stdin)", ""},
          {"no-bos", "", "do not add the BOS token", ""},
          {"parse-special", "", "recognise control-token text such as <s>", ""},
          {"json", "", "print a JSON list", ""}});
  if (int rc = parse_args(a, argc, argv); rc >= 0) return rc;
  std::string text = a.get("prompt");
  if (a.has("file") && !read_text(a.get("file"), text)) {
    std::fprintf(stderr, "cortex: cannot read '%s'\n", a.get("file").c_str());
    return 1;
  }
  if (!a.has("prompt") && !a.has("file")) {
    std::fprintf(stderr, "cortex: give the text with --prompt TEXT or --file PATH\n");
    return 2;
  }
  auto m = load_model(a, /*vocab_only=*/true);
  if (!m) return 1;
  auto ids = m->tokenizer().encode(text, !a.has("no-bos"), a.has("parse-special"));
  const bool json = a.has("json");
  std::string out = json ? "[" : "";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += json ? ", " : " ";
    out += std::to_string(ids[i]);
  }
  out += json ? "]\n" : "\n";
  std::fputs(out.c_str(), stdout);
  return 0;
}

int cmd_logits(int argc, char** argv) {
  args a("logits", "Feeds the tokens as one prefill and prints, for every position, the top K [id, logit] pairs,\n"
                   "highest first, as a JSON list (one entry per position).",
         {{"model", "PATH", "GGUF model file", ""},
          {"tokens", "IDS", "comma-separated token ids, e.g. 1,450,4996", ""},
          {"top", "K", "entries per position", "8"},
          {"chunk", "N", "prefill chunk size", "512"},
          {"threads", "N", "compute threads; 0 = one per core", "0"},
          {"json", "", "JSON output (the only format; accepted for clarity)", ""}});
  if (int rc = parse_args(a, argc, argv); rc >= 0) return rc;
  std::vector<int32_t> ids;
  if (!parse_id_list(a.get("tokens"), ids)) {
    std::fprintf(stderr, "cortex: --tokens expects comma-separated non-negative ids, e.g. 1,2,3\n");
    return 2;
  }
  auto top = a.get_int("top");
  auto chunk = a.get_int("chunk");
  if (!top || *top <= 0 || !chunk || *chunk <= 0) {
    std::fprintf(stderr, "cortex: --top and --chunk must be positive integers\n");
    return 2;
  }
  auto m = load_model(a);
  if (!m) return 1;
  if (!check_generates(*m, "logits")) return 2;
  const int n_vocab = m->hparams().n_vocab;
  for (int32_t id : ids) {
    if (id >= n_vocab) {
      std::fprintf(stderr, "cortex: token id %d is out of range (vocabulary has %d tokens)\n", id, n_vocab);
      return 2;
    }
  }
  kernels::thread_pool pool(thread_count(a));
  // An F32 cache: the logits are compared with references made that way.
  single_sequence seq(*m, pool, static_cast<int>(ids.size()), kernels::kv_type::f32);
  const int rows = seq.feed(ids, logits_mode::all, static_cast<int>(*chunk));
  const int k = std::min<int>(static_cast<int>(*top), n_vocab);
  std::vector<int32_t> order(static_cast<size_t>(n_vocab));
  std::string out = "[";
  char buf[64];
  for (int r = 0; r < rows; ++r) {
    const float* lg = seq.logits(r);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t x, int32_t y) {
      return lg[x] > lg[y] || (lg[x] == lg[y] && x < y);
    });
    out += r ? ",\n [" : "[";
    for (int j = 0; j < k; ++j) {
      std::snprintf(buf, sizeof buf, "%s[%d, %.6g]", j ? ", " : "", order[static_cast<size_t>(j)], lg[order[static_cast<size_t>(j)]]);
      out += buf;
    }
    out += "]";
  }
  out += "]\n";
  std::fputs(out.c_str(), stdout);
  return 0;
}

namespace {

std::string value_summary(const gguf::value& v) {
  using gguf::value_type;
  char buf[64];
  switch (v.type) {
    case value_type::string: {
      std::string s(v.str.substr(0, 80));
      return "\"" + s + (v.str.size() > 80 ? "...\"" : "\"");
    }
    case value_type::array:
      return std::string("[") + gguf::value_type_name(v.elem_type) + " x " + std::to_string(v.count) + "]";
    case value_type::f32: case value_type::f64:
      std::snprintf(buf, sizeof buf, "%g", v.f);
      return buf;
    case value_type::boolean: return v.u ? "true" : "false";
    case value_type::i8: case value_type::i16: case value_type::i32: case value_type::i64: return std::to_string(v.i);
    default: return std::to_string(v.u);
  }
}

}  // namespace

int cmd_info(int argc, char** argv) {
  args a("info", "Shows a model's metadata, hyper-parameters, tensor types and sizes.",
         {{"model", "PATH", "GGUF model file", ""}, {"tensors", "", "list every tensor", ""}});
  if (int rc = parse_args(a, argc, argv); rc >= 0) return rc;
  auto m = load_model(a);
  if (!m) return 1;
  const auto& f = m->file();
  const auto& hp = m->hparams();
  std::printf("file: %s (GGUF v%u, %.2f MiB)\n", f.path().c_str(), f.version(), f.size() / 1048576.0);
  std::printf("model: %s, arch %s, %s, %.2f M parameters\n", m->name().c_str(), hp.arch.c_str(), m->quant_name().c_str(), m->n_params() / 1e6);
  std::printf("n_vocab %d, n_ctx_train %d, n_embd %d, n_layer %d, n_head %d, n_head_kv %d, head_dim %d, n_ff %d, n_rot %d\n",
              hp.n_vocab, hp.n_ctx_train, hp.n_embd, hp.n_layer, hp.n_head, hp.n_head_kv, hp.head_dim, hp.n_ff, hp.n_rot);
  std::printf("rms_eps %g, rope_freq_base %g, rope %s\n", hp.rms_eps, hp.rope_freq_base, hp.rope_neox ? "neox" : "normal");
  // Layers that differ from the line above (per-layer sizes, windows, K/V read from an earlier layer).
  for (int il = 0; il < hp.n_layer; ++il) {
    const layer_attention& at = hp.attn[static_cast<size_t>(il)];
    if (hp.head_dim_of(il) == hp.head_dim && hp.n_head_kv_of(il) == hp.n_head_kv && hp.n_ff_of(il) == hp.n_ff &&
        hp.n_rot_of(il) == hp.n_rot && hp.has_own_kv(il)) {
      continue;
    }
    std::printf("  layer %d: head_dim %d, n_head_kv %d, n_ff %d, n_rot %d, window %d%s\n", il, hp.head_dim_of(il),
                hp.n_head_kv_of(il), hp.n_ff_of(il), hp.n_rot_of(il), at.window,
                hp.has_own_kv(il) ? "" : (", K/V of layer " + std::to_string(hp.kv_layer_of(il))).c_str());
  }
  std::printf("weights streamed per decoded token: %.2f MiB\n", m->bytes_per_token() / 1048576.0);
  std::printf("%s\n", kernels::kernel_path_line().c_str());
  std::printf("K/V cache bytes per token:");
  for (auto t : {kernels::kv_type::f32, kernels::kv_type::f16, kernels::kv_type::bf16, kernels::kv_type::q8_0}) {
    if (kv_type_fits(hp, t)) std::printf(" %s %zu", kernels::kv_type_name(t), kv_arena::bytes_per_token(hp, t));
  }
  std::printf("\n\nmetadata (%zu keys):\n", f.metadata().size());
  for (auto& [k, v] : f.metadata()) std::printf("  %-42s %s\n", k.c_str(), value_summary(v).c_str());
  std::map<std::string, std::pair<int, uint64_t>> by_type;
  for (auto& t : f.tensors()) {
    auto& e = by_type[type_traits(t.type).name];
    e.first++;
    e.second += t.n_bytes;
  }
  std::printf("\ntensors (%zu):\n", f.tensors().size());
  for (auto& [name, e] : by_type) std::printf("  %-6s %4d tensors %10.2f MiB\n", name.c_str(), e.first, e.second / 1048576.0);
  if (a.has("tensors")) {
    for (auto& t : f.tensors()) {
      std::printf("  %-32s %-5s [%lld, %lld, %lld, %lld] %llu bytes\n", t.name.c_str(), type_traits(t.type).name,
                  (long long)t.ne[0], (long long)t.ne[1], (long long)t.ne[2], (long long)t.ne[3], (unsigned long long)t.n_bytes);
    }
  }
  return 0;
}

}  // namespace cortex::cli
