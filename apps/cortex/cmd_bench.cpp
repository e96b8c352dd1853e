// cortex bench: prefill and decode speed of a model on this machine, with
// the machine's measured memory read bandwidth so decode can be read as an
// efficiency (weights streamed per token x tok/s / bandwidth).
#include <algorithm>
#include <cstdio>
#include <string>

#include "apps/cortex/commands.hpp"
#include "apps/cortex/common.hpp"
#include "kernels/memory_bandwidth.hpp"
#include "kernels/thread_pool.hpp"
#include "model/forward.hpp"

namespace cortex::cli {

namespace {

// A fresh K/V arena for n_seqs sequences over one forward pass (built once:
// at 8B, repacking the weights for every run would dominate the bench).
struct batch_runner {
  forward_pass& fwd;
  kv_arena kv;
  int blocks_per_seq;
  std::vector<std::vector<int32_t>> tables;
  std::vector<int32_t> pos;
  std::vector<std::vector<float>> states;  // a recurrent model's state per sequence

  batch_runner(const model& m, forward_pass& f, int n_seqs, int n_ctx, int block_size, kernels::kv_type kv_type)
      : fwd(f), kv(m.hparams(), n_seqs * ((n_ctx + block_size - 1) / block_size), block_size, kv_type),
        blocks_per_seq((n_ctx + block_size - 1) / block_size) {
    tables.resize(static_cast<size_t>(n_seqs));
    for (int s = 0; s < n_seqs; ++s) {
      for (int b = 0; b < blocks_per_seq; ++b) tables[static_cast<size_t>(s)].push_back(s * blocks_per_seq + b);
    }
    pos.assign(static_cast<size_t>(n_seqs), 0);
    states.assign(static_cast<size_t>(n_seqs), std::vector<float>(m.hparams().state_floats()));
  }

  // Every sequence adds `tokens` (same ids, distinct K/V). Returns seconds.
  double step(const std::vector<int32_t>& tokens, logits_mode mode) {
    std::vector<batch_seq> batch;
    for (size_t s = 0; s < tables.size(); ++s) {
      batch_seq b;
      b.tokens = tokens.data();
      b.n_tokens = static_cast<int32_t>(tokens.size());
      b.pos0 = pos[s];
      b.block_table = tables[s].data();
      b.n_blocks = blocks_per_seq;
      b.logits = mode;
      b.state = states[s].data();
      batch.push_back(b);
      pos[s] += b.n_tokens;
    }
    const double t0 = now_seconds();
    fwd.run(batch, kv);
    return now_seconds() - t0;
  }
};

// This process's resident set (VmRSS of /proc/self/status) in bytes; 0 where
// there is no procfs.
size_t resident_bytes() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  size_t kib = 0;
  while (std::fgets(line, sizeof line, f)) {
    if (std::sscanf(line, "VmRSS: %zu kB", &kib) == 1) break;
  }
  std::fclose(f);
  return kib * 1024;
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  args a("bench",
         "Measures, on this machine: memory read bandwidth, prefill speed of one prompt, and decode speed at\n"
         "several batch sizes (aggregate tokens/s over all sequences). Decode efficiency = weight bytes streamed\n"
         "per step x steps/s / measured bandwidth (1.0 = reading the weights at the bandwidth limit).",
         {{"model", "PATH", "GGUF model file", ""},
          {"threads", "N", "compute threads; 0 = one per core", "0"},
          {"prompt-tokens", "N", "prefill prompt length", "128"},
          {"decode-tokens", "N", "decode steps timed per batch size", "32"},
          {"batches", "LIST", "decode batch sizes", "1,4,16"},
          {"context", "N", "tokens every sequence holds before decode is timed (prefilled in chunks of 512)", "8"},
          kv_type_option_spec(),
          {"repeat", "N", "repetitions; the best is reported", "2"},
          {"json", "", "also print the results as one JSON object on stdout", ""}});
  if (int rc = parse_args(a, argc, argv); rc >= 0) return rc;
  auto n_prompt = a.get_int("prompt-tokens"), n_decode = a.get_int("decode-tokens"), repeat = a.get_int("repeat");
  auto n_context = a.get_int("context");
  std::vector<int32_t> batches;
  if (!n_prompt || !n_decode || !repeat || !n_context || *n_prompt < 1 || *n_decode < 1 || *repeat < 1 || *n_context < 1 ||
      !parse_id_list(a.get("batches"), batches)) {
    std::fprintf(stderr, "cortex: --prompt-tokens, --decode-tokens, --repeat, --context must be positive integers and --batches a list like 1,4,16\n");
    return 2;
  }
  auto m = load_model(a);
  if (!m) return 1;
  if (!check_generates(*m, "bench")) return 2;
  const auto& hp = m->hparams();
  kernels::kv_type kv_type;
  if (!read_kv_type(a, *m, kv_type)) return 2;
  kernels::thread_pool pool(thread_count(a));
  const int n_ctx = static_cast<int>(std::max(*n_prompt, *n_context) + *n_decode + 8);
  if (n_ctx > hp.n_ctx_train) std::fprintf(stderr, "[bench] note: %d tokens exceed the model's training context %d\n", n_ctx, hp.n_ctx_train);

  std::fprintf(stderr, "[bench] %s: %s, %d threads, %.1f MiB of weights per token, %s K/V (%zu bytes per token)\n", m->name().c_str(),
               m->quant_name().c_str(), pool.size(), m->bytes_per_token() / 1048576.0, kernels::kv_type_name(kv_type),
               kv_arena::bytes_per_token(hp, kv_type));
  const double bw = kernels::measure_read_bandwidth(pool, size_t(512) << 20, 3);
  std::fprintf(stderr, "[bench] memory read bandwidth: %.2f GB/s\n", bw / 1e9);

  const double t_load = now_seconds();
  forward_pass fwd(*m, pool);
  std::vector<int32_t> prompt(static_cast<size_t>(std::max(*n_prompt, *n_context)));
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 7919 + 13) % static_cast<size_t>(hp.n_vocab));
  double best_prefill = 1e30;
  size_t rss = 0, kv_bytes = 0;
  for (int r = 0; r < *repeat; ++r) {
    batch_runner br(*m, fwd, 1, n_ctx, 16, kv_type);
    best_prefill = std::min(best_prefill, br.step({prompt.begin(), prompt.begin() + *n_prompt}, logits_mode::last));
    if (r == 0) {
      rss = resident_bytes();
      kv_bytes = br.kv.bytes() + m->hparams().state_floats() * sizeof(float);  // + a recurrent model's state
      std::fprintf(stderr, "[bench] ready in %.1f s; resident after load and one prefill: %.2f GiB = %.2fx (file %.2f GiB + K/V and state %.2f GiB)\n",
                   now_seconds() - t_load, rss / 1073741824.0, static_cast<double>(rss) / (m->file().size() + kv_bytes),
                   m->file().size() / 1073741824.0, kv_bytes / 1073741824.0);
    }
  }
  const double prefill_tps = static_cast<double>(*n_prompt) / best_prefill;
  std::fprintf(stderr, "[bench] prefill %lld tokens: %.1f tok/s\n", (long long)*n_prompt, prefill_tps);

  std::string json = "{\"model\": \"" + m->name() + "\", \"quant\": \"" + m->quant_name() + "\", \"threads\": " + std::to_string(pool.size()) +
                     ", \"bandwidth_gbs\": " + std::to_string(bw / 1e9) + ", \"prefill_tokens\": " + std::to_string(*n_prompt) +
                     ", \"prefill_tps\": " + std::to_string(prefill_tps) + ", \"rss_bytes\": " + std::to_string(rss) +
                     ", \"file_bytes\": " + std::to_string(m->file().size()) + ", \"kv_bytes\": " + std::to_string(kv_bytes) +
                     ", \"decode\": [";
  double decode_b1 = 0;
  for (size_t bi = 0; bi < batches.size(); ++bi) {
    const int B = batches[bi];
    double best = 1e30;
    for (int r = 0; r < *repeat; ++r) {
      batch_runner br(*m, fwd, B, n_ctx, 16, kv_type);
      // The context of every sequence, in chunks of 512 (a step's budget).
      for (int64_t at = 0; at < *n_context; at += 512) {
        const auto end = prompt.begin() + std::min<int64_t>(*n_context, at + 512);
        br.step({prompt.begin() + at, end}, logits_mode::last);
      }
      double total = 0;
      for (int s = 0; s < *n_decode; ++s) total += br.step({static_cast<int32_t>((s * 31 + 7) % hp.n_vocab)}, logits_mode::last);
      best = std::min(best, total);
    }
    const double steps_per_s = *n_decode / best;
    const double tps = steps_per_s * B;
    const double eff = static_cast<double>(m->bytes_per_token()) * steps_per_s / bw;
    if (B == 1) decode_b1 = tps;
    std::fprintf(stderr, "[bench] decode batch %2d at context %lld: %.1f tok/s aggregate (%.1f steps/s, weight-read efficiency %.0f%% of bandwidth)%s\n", B, (long long)*n_context, tps,
                 steps_per_s, eff * 100, decode_b1 > 0 && B > 1 ? (" x" + std::to_string(tps / decode_b1).substr(0, 4) + " batch 1").c_str() : "");
    json += std::string(bi ? ", " : "") + "{\"batch\": " + std::to_string(B) + ", \"tps\": " + std::to_string(tps) +
            ", \"efficiency\": " + std::to_string(eff) + "}";
  }
  json += "]}";
  if (a.has("json")) std::printf("%s\n", json.c_str());
  return 0;
}

}  // namespace cortex::cli
