// cortex_roofline: where the time of a forward step goes, against this
// machine's measured limits.
//
//   cortex_roofline --model M [--threads N] [--tokens 1,16,128,512] [--seconds S]
//
// 1. Peaks: memory read bandwidth, f32 FMA and int8 VNNI (vpdpbusd)
//    throughput of all threads (bench/roofline/peaks.hpp).
// 2. Kernels: every linear group of the forward pass (q/k/v, o, gate/up,
//    down, output) in the path the forward pass uses (packed panels where
//    faster, else matmul), at each token count; attention (decode over a
//    context, and a causal prefill); rmsnorm and rope. For each: time per
//    call, achieved GB/s (weights + activations read) and GOP/s, each as a
//    fraction of its peak, and the bound (mem or compute) that is closer.
// 3. Whole step: decode at batch 1 and 16 and a prefill, each with the
//    kernel-sum estimate (n_layer x the matmuls + the output) so the time
//    outside the matmuls is visible.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench/roofline/peaks.hpp"
#include "kernels/attention.hpp"
#include "kernels/cpu_features.hpp"
#include "kernels/matmul.hpp"
#include "kernels/matmul_packed.hpp"
#include "kernels/ops.hpp"
#include "model/forward.hpp"
#include "model/model.hpp"
#include "model/sampler.hpp"

namespace cortex::bench {
namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct options {
  std::string model;
  int threads = 2;
  std::vector<int> tokens{1, 16, 128, 512};
  double seconds = 0.3;  // minimum timed time per measurement
};

struct report_row {
  std::string name;
  double seconds;   // per call
  double bytes;     // per call
  double ops;       // per call
};

void print_header() {
  std::printf("%-34s %10s %9s %6s %9s %6s  %s\n", "kernel", "ms/call", "GB/s", "%bw", "GOP/s", "%peak", "bound");
}

// Compute peak: VNNI for integer matmuls, FMA for float kernels.
void print_row(const report_row& r, const machine_peaks& p, bool int8) {
  const double gbs = r.bytes / r.seconds / 1e9, gops = r.ops / r.seconds / 1e9;
  const double peak = int8 ? p.vnni_op_per_s : p.fma_flop_per_s;
  const double fbw = r.bytes / r.seconds / p.read_bytes_per_s, fop = peak > 0 ? r.ops / r.seconds / peak : 0;
  std::printf("%-34s %10.3f %9.2f %5.0f%% %9.1f %5.0f%%  %s\n", r.name.c_str(), r.seconds * 1e3, gbs, fbw * 100, gops, fop * 100,
              fbw >= fop ? "mem" : (int8 ? "vnni" : "fma"));
}

// One linear group of every layer: parts with one shared input.
struct linear_kind {
  std::string name;
  std::vector<std::vector<const kernels::weight_view*>> layers;  // (n_layer or 1, parts)
};

std::vector<linear_kind> linear_kinds(const model& m) {
  const auto& w = m.weights();
  std::vector<linear_kind> k{{"qkv", {}}, {"wo", {}}, {"gate_up", {}}, {"down", {}}, {"output", {}}};
  for (const auto& L : w.layers) {
    const layer_matrices mm = matrices_of(L);
    k[0].layers.push_back(mm.qkv);
    k[1].layers.push_back(mm.wo);
    k[2].layers.push_back(mm.gate_up);
    k[3].layers.push_back(mm.down);
  }
  k[4].layers.push_back({&w.output});
  return k;
}

// Prepared matmuls for one layer of one kind, split like forward_pass does:
// runs of packable parts of one type share a packed matrix.
struct prepared_linear {
  std::vector<kernels::packed_matrix> packed;
  std::vector<const kernels::weight_view*> plain;
  std::vector<std::vector<float*>> packed_out;
  std::vector<float*> plain_out;
  double weight_bytes = 0, rows = 0, cols = 0;
  std::string types;
};

prepared_linear prepare(const std::vector<const kernels::weight_view*>& parts, kernels::thread_pool& pool) {
  prepared_linear p;
  p.cols = static_cast<double>(parts[0]->cols);
  for (size_t i = 0; i < parts.size();) {
    const auto& w = *parts[i];
    p.rows += static_cast<double>(w.rows);
    p.weight_bytes += static_cast<double>(w.rows) * static_cast<double>(w.row_bytes);
    const char* tn = type_traits(w.type).name;
    if (p.types.find(tn) == std::string::npos) p.types += std::string(p.types.empty() ? "" : "+") + tn;
    if (!kernels::packed_is_faster(w.type)) {
      p.plain.push_back(&w);
      ++i;
      continue;
    }
    std::vector<kernels::weight_view> run{w};
    for (++i; i < parts.size() && parts[i]->type == w.type && parts[i]->cols == w.cols; ++i) {
      run.push_back(*parts[i]);
      p.rows += static_cast<double>(parts[i]->rows);
      p.weight_bytes += static_cast<double>(parts[i]->rows) * static_cast<double>(parts[i]->row_bytes);
    }
    p.packed.push_back(kernels::pack_matrix(run.data(), static_cast<int>(run.size()), pool));
  }
  return p;
}

void run_prepared(const prepared_linear& p, const float* x, int n, float* y, size_t y_stride, kernels::thread_pool& pool,
                  kernels::matmul_scratch& scratch) {
  // Outputs of every part go to y (overwritten: only the timing matters).
  float* ys[8];
  for (auto& v : ys) v = y;
  (void)y_stride;
  for (const auto& m : p.packed) kernels::matmul_packed(m, x, n, ys, pool, scratch);
  for (const auto* w : p.plain) kernels::matmul(*w, x, n, y, pool, scratch);
}

// Times f() cycling over `n_items` items until both `min_calls` calls and
// `seconds` have passed. Returns seconds per call.
template <class F>
double time_calls(int n_items, int min_calls, double seconds, F f) {
  f(0);  // warm-up (first-touch of scratch buffers)
  int calls = 0;
  const double t0 = now();
  double dt = 0;
  while (calls < min_calls || dt < seconds) {
    f(calls % n_items);
    ++calls;
    dt = now() - t0;
  }
  return dt / calls;
}

}  // namespace

int roofline_main(const options& o) {
  auto loaded = model::load(o.model);
  if (!loaded) {
    std::fprintf(stderr, "cortex_roofline: %s\n", loaded.error().message.c_str());
    return 1;
  }
  const model& m = **loaded;
  const auto& hp = m.hparams();
  kernels::thread_pool pool(o.threads);
  std::printf("model %s (%s), %d threads, isa %s\n", m.name().c_str(), m.quant_name().c_str(), pool.size(),
              kernels::isa_name(kernels::active_isa()));

  const machine_peaks peaks = measure_peaks(pool, 0.2, 3);
  std::printf("peaks: read %.2f GB/s (scalar loads %.2f) | f32 fma %.1f GFLOP/s | int8 vnni %.1f GOP/s (vpdpbusd)\n\n", peaks.read_bytes_per_s / 1e9,
              peaks.read_scalar_bytes_per_s / 1e9, peaks.fma_flop_per_s / 1e9, peaks.vnni_op_per_s / 1e9);

  // At least 16 rows: the rmsnorm / rope rows below use 16 tokens.
  const int max_t = std::max(16, *std::max_element(o.tokens.begin(), o.tokens.end()));
  const int max_dim = std::max({hp.n_embd, hp.n_ff, hp.n_head * hp.head_dim});
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(max_t) * max_dim);
  for (auto& v : x) v = nd(rng);
  std::vector<float> y(static_cast<size_t>(max_t) * std::max(hp.n_vocab, 3 * hp.n_ff));
  kernels::matmul_scratch scratch;

  // matmul time per (kind, n_tokens), for the step estimate below.
  std::map<std::string, std::map<int, double>> mm_seconds;
  print_header();
  for (const auto& kind : linear_kinds(m)) {
    std::vector<prepared_linear> layers;
    for (const auto& parts : kind.layers) layers.push_back(prepare(parts, pool));
    const auto& p0 = layers[0];
    for (int n : o.tokens) {
      // Decode cycles through every layer so weights come from DRAM.
      // Small batches cycle through every layer so weights come from DRAM, as
      // in a step; large ones are compute-bound (two layers suffice).
      const int items = n <= 16 ? static_cast<int>(layers.size()) : std::min<int>(static_cast<int>(layers.size()), 2);
      const double s = time_calls(items, n <= 16 ? 2 * items : 2, o.seconds, [&](int l) {
        run_prepared(layers[static_cast<size_t>(l)], x.data(), n, y.data(), 0, pool, scratch);
      });
      mm_seconds[kind.name][n] = s;
      char name[96];
      std::snprintf(name, sizeof name, "matmul %s %s %.0fx%.0f n=%d", kind.name.c_str(), p0.types.c_str(), p0.rows, p0.cols, n);
      print_row({name, s, p0.weight_bytes + 4.0 * n * (p0.cols + p0.rows), 2.0 * p0.rows * p0.cols * n}, peaks, true);
    }
  }

  // Attention: one layer's arena, GQA as the model, context ctx.
  {
    const int bs = 16, ctx = std::max(512, max_t);
    const int n_blocks = (ctx + bs - 1) / bs;
    const int dkv = hp.n_embd_kv(), dq = hp.n_head * hp.head_dim, group = hp.n_head / hp.n_head_kv;
    std::vector<float> k(static_cast<size_t>(n_blocks) * bs * dkv), v(k.size());
    for (auto& e : k) e = nd(rng);
    for (auto& e : v) e = nd(rng);
    std::vector<int32_t> table(static_cast<size_t>(n_blocks));
    for (int b = 0; b < n_blocks; ++b) table[static_cast<size_t>(b)] = b;
    const kernels::kv_layout layout{bs, hp.n_head_kv, hp.head_dim};
    const float scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim));
    auto run = [&](int n_q, int pos0) {
      pool.parallel_for(hp.n_head_kv, [&](int kvh, int) {
        kernels::attention_args a;
        a.q = x.data();
        a.n_q = n_q;
        a.pos0 = pos0;
        a.n_heads = hp.n_head;
        a.head_begin = kvh * group;
        a.head_end = (kvh + 1) * group;
        a.k_arena = k.data();
        a.v_arena = v.data();
        a.block_table = table.data();
        a.layout = layout;
        a.scale = scale;
        a.out = y.data();
        kernels::attention_paged(a);
      });
    };
    const double kv_bytes = 2.0 * 4 * dkv;  // per position, K and V
    const double s_dec = time_calls(1, 20, o.seconds, [&](int) { run(1, ctx - 1); });
    print_row({"attention decode ctx=" + std::to_string(ctx), s_dec, kv_bytes * ctx + 8.0 * dq, 4.0 * dq * ctx}, peaks, false);
    const int np = std::min(max_t, ctx);
    const double s_pre = time_calls(1, 2, o.seconds, [&](int) { run(np, 0); });
    const double pairs = 0.5 * np * (np + 1.0);
    print_row({"attention prefill n=" + std::to_string(np), s_pre, kv_bytes * np + 8.0 * dq * np, 4.0 * dq * pairs}, peaks, false);
  }

  // Per-token ops (single thread, as the forward pass runs them).
  {
    const auto& L = m.weights().layers[0];
    const int n = 16, d = hp.n_embd, dq = hp.n_head * hp.head_dim;
    const double s_norm = time_calls(1, 100, 0.05, [&](int) {
      for (int t = 0; t < n; ++t) kernels::rmsnorm(x.data() + t * d, L.attn_norm.data(), y.data() + t * d, d, hp.rms_eps);
    });
    print_row({"rmsnorm x16 tokens (1 thread)", s_norm, 12.0 * d * n, 4.0 * d * n}, peaks, false);
    const double s_rope = time_calls(1, 100, 0.05, [&](int) {
      for (int t = 0; t < n; ++t) kernels::rope(y.data() + t * dq, hp.n_head, hp.head_dim, hp.n_rot, 100 + t, hp.rope_freq_base, hp.rope_neox);
    });
    print_row({"rope q x16 tokens (1 thread)", s_rope, 8.0 * dq * n, 3.0 * dq * n}, peaks, false);
  }

  // Whole steps through forward_pass.
  std::printf("\n%-34s %10s %9s %6s %9s %6s  %s\n", "step", "ms/step", "GB/s", "%bw", "GOP/s", "%vnni", "matmul-sum ms (share)");
  forward_pass fwd(m, pool);
  const double wbytes = static_cast<double>(m.bytes_per_token());
  const double params = static_cast<double>(m.n_params());
  auto step_row = [&](const std::string& name, int n_seqs, int n_tok, int ctx0) {
    const int bs = 16, per_seq = (ctx0 + n_tok + bs - 1) / bs + 1;
    kv_arena kv(hp, n_seqs * per_seq, bs, kernels::kv_type::f16);  // the daemon's default
    std::vector<std::vector<int32_t>> tables(static_cast<size_t>(n_seqs));
    std::vector<int32_t> toks(static_cast<size_t>(std::max(n_tok, ctx0)));
    for (size_t i = 0; i < toks.size(); ++i) toks[i] = static_cast<int32_t>((i * 7919 + 13) % static_cast<size_t>(hp.n_vocab));
    for (int s = 0; s < n_seqs; ++s)
      for (int b = 0; b < per_seq; ++b) tables[static_cast<size_t>(s)].push_back(s * per_seq + b);
    auto make = [&](int n, int pos0) {
      std::vector<batch_seq> batch;
      for (int s = 0; s < n_seqs; ++s) batch.push_back({toks.data(), n, pos0, tables[static_cast<size_t>(s)].data(), per_seq, logits_mode::last});
      return batch;
    };
    if (ctx0 > 0) fwd.run(make(ctx0, 0), kv);
    int reps = 0;
    const double t0 = now();
    double dt = 0;
    while (reps < 3 || dt < 4 * o.seconds) {
      fwd.run(make(n_tok, ctx0), kv);  // same positions again: K/V rows rewritten, same work
      ++reps;
      dt = now() - t0;
    }
    const double s = dt / reps;
    const int T = n_seqs * n_tok;
    double est = 0;
    for (const auto& kname : {"qkv", "wo", "gate_up", "down"}) {
      auto it = mm_seconds[kname].find(T);
      est += it == mm_seconds[kname].end() ? NAN : hp.n_layer * it->second;
    }
    // The output rows (one per sequence) count only when that n was measured.
    auto it = mm_seconds["output"].find(n_seqs);
    if (it != mm_seconds["output"].end()) est += it->second;
    const double ops = 2.0 * params * T;
    std::printf("%-34s %10.2f %9.2f %5.0f%% %9.1f %5.0f%%  %.2f (%.0f%%)\n", name.c_str(), s * 1e3, wbytes / s / 1e9,
                100 * wbytes / s / peaks.read_bytes_per_s, ops / s / 1e9, peaks.vnni_op_per_s > 0 ? 100 * ops / s / peaks.vnni_op_per_s : 0,
                est * 1e3, 100 * est / s);
  };
  step_row("decode batch 1 (ctx 64)", 1, 1, 64);
  step_row("decode batch 16 (ctx 64)", 16, 1, 64);
  for (int n : o.tokens)
    if (n >= 128) step_row("prefill " + std::to_string(n), 1, n, 0);
  // Sampling over the vocabulary, part of the step overhead (16 rows, one per
  // sequence of a batch-16 decode step), greedy and temperature + top-p.
  for (const float temp : {0.0f, 0.8f}) {
    sampling_params sp;
    sp.temperature = temp;
    sp.top_p = temp > 0 ? 0.95f : 1.0f;
    sampler smp(sp);
    std::vector<int32_t> history(64, 1);
    std::vector<float> logits(static_cast<size_t>(hp.n_vocab) * 16);
    for (auto& v : logits) v = 4 * nd(rng);
    const double s = time_calls(1, 5, 0.1, [&](int) {
      for (int r = 0; r < 16; ++r) smp.sample(logits.data() + static_cast<size_t>(r) * hp.n_vocab, hp.n_vocab, history);
    });
    std::printf("sampling 16 rows x %d (%s)%*s %10.3f ms\n", hp.n_vocab, temp > 0 ? "temp 0.8, top-p 0.95" : "greedy", temp > 0 ? 1 : 13, "",
                s * 1e3);
  }
  std::printf("\n%%bw: bytes read / measured read bandwidth; %%peak: ops / measured vnni (int8 matmuls) or fma peak;\n"
              "matmul-sum: n_layer x matmul times above (+ output) -- the rest of the step is norms, rope, attention,\n"
              "K/V writes, embedding and thread-pool joins.\n");
  return 0;
}

}  // namespace cortex::bench

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  cortex::bench::options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "cortex_roofline: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--model") {
      o.model = next();
    } else if (a == "--threads") {
      o.threads = std::max(1, std::atoi(next()));
    } else if (a == "--seconds") {
      o.seconds = std::atof(next());
    } else if (a == "--tokens") {
      o.tokens.clear();
      std::string s = next();
      for (size_t p = 0; p < s.size();) {
        const size_t c = s.find(',', p);
        o.tokens.push_back(std::max(1, std::atoi(s.substr(p, c - p).c_str())));
        p = c == std::string::npos ? s.size() : c + 1;
      }
    } else if (a == "-h" || a == "--help") {
      std::printf("usage: cortex_roofline --model M [--threads N (2)] [--tokens 1,16,128,512] [--seconds S (0.3)]\n"
                  "Measures peaks (read bandwidth, FMA, VNNI) and reports each kernel and whole steps against them.\n");
      return 0;
    } else {
      std::fprintf(stderr, "cortex_roofline: unknown option %s (see --help)\n", a.c_str());
      return 2;
    }
  }
  if (o.model.empty()) {
    std::fprintf(stderr, "cortex_roofline: --model is required\n");
    return 2;
  }
  return cortex::bench::roofline_main(o);
}
