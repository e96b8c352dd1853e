// cortex_grammar_bench: what constrained decoding costs per engine step.
//
//   cortex_grammar_bench --vocab V.gguf [--threads 2] [--seqs 16] [--steps 96]
//                        [--schema FILE] [--step-ms MS] [--seed 1] [--distinct]
//
// Loads a vocabulary (any GGUF with a tokenizer: a model or a vocab-only
// file), builds its trie, compiles a JSON Schema (a nested object with
// strings, enums, numbers and an array unless --schema names a file), and
// runs `--seqs` sequences through `--steps` steps as the executor does: per
// step, the masks computed (sequences of one grammar share its matcher and
// cache, one task per grammar; --distinct gives each its own), then applied
// to a row of logits each (the sampler's ban loop) in parallel on a pool of
// `--threads`, then a token
// drawn uniformly among the allowed ones (a worst case for the cache: random
// text visits more states than a model's). A sequence whose document
// completes starts a new one. Prints the trie build time, the mean and p99
// time per step for all sequences, the cache hit rate, and with --step-ms
// (a decode step's time at that batch, e.g. from `cortex bench`) the share
// of the step that masking adds.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/thread_pool.hpp"
#include "gguf/gguf.hpp"
#include "grammar/json_schema.hpp"
#include "grammar/token_mask.hpp"
#include "text/tokenizer.hpp"

using namespace cortex;

namespace {

const char* k_default_schema = R"({"type": "object", "properties": {
  "name": {"type": "string", "maxLength": 40},
  "kind": {"enum": ["cat", "dog", "bird"]},
  "age": {"type": "integer", "minimum": 0, "maximum": 30},
  "weight": {"type": "number", "minimum": 0, "maximum": 100},
  "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 4},
  "owner": {"type": "object", "properties": {"first": {"type": "string"}, "last": {"type": "string"}},
            "required": ["first", "last"]}},
  "required": ["name", "kind", "age", "tags", "owner"]})";

// CPU time of the calling thread: on a shared machine, the work itself
// (wall time there counts the other processes' turns too).
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

struct sequence {
  size_t ctx = 0;  // its grammar context
  grammar_matcher::state s;
  size_t n_allowed = 0;
  std::vector<uint64_t> mask;
  std::vector<float> logits;
  std::mt19937_64 rng;
  int32_t next = -1;
  double cpu_ms = 0;  // this step's ban loop, on its thread
};

}  // namespace

int main(int argc, char** argv) {
  std::string vocab_path, schema_path;
  int threads = 2, n_seqs = 16, n_steps = 96;
  double step_ms = 0;
  uint64_t seed = 1;
  bool distinct = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--vocab" && v) vocab_path = argv[++i];
    else if (a == "--schema" && v) schema_path = argv[++i];
    else if (a == "--threads" && v) threads = std::atoi(argv[++i]);
    else if (a == "--seqs" && v) n_seqs = std::atoi(argv[++i]);
    else if (a == "--steps" && v) n_steps = std::atoi(argv[++i]);
    else if (a == "--step-ms" && v) step_ms = std::atof(argv[++i]);
    else if (a == "--seed" && v) seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--distinct") distinct = true;
    else {
      std::fprintf(stderr, "usage: cortex_grammar_bench --vocab V.gguf [--threads N] [--seqs N] [--steps N] "
                           "[--schema FILE] [--step-ms MS] [--seed S] [--distinct]\n");
      return 2;
    }
  }
  if (vocab_path.empty() || threads < 1 || n_seqs < 1 || n_steps < 1) {
    std::fprintf(stderr, "cortex_grammar_bench: --vocab is required; counts must be >= 1\n");
    return 2;
  }
  auto f = gguf::file::open(vocab_path);
  if (!f) return std::fprintf(stderr, "cortex_grammar_bench: %s\n", f.error().message.c_str()), 1;
  auto tok = tokenizer::from_gguf(**f);
  if (!tok) return std::fprintf(stderr, "cortex_grammar_bench: %s\n", tok.error().message.c_str()), 1;
  std::string schema = k_default_schema;
  if (!schema_path.empty()) {
    std::ifstream in(schema_path);
    std::stringstream ss;
    ss << in.rdbuf();
    schema = ss.str();
  }
  auto gbnf = json_schema_to_gbnf(schema);
  if (!gbnf) return std::fprintf(stderr, "cortex_grammar_bench: %s\n", gbnf.error().message.c_str()), 1;
  auto g = grammar::compile(*gbnf);
  if (!g) return std::fprintf(stderr, "cortex_grammar_bench: %s\n", g.error().message.c_str()), 1;

  const auto t_trie = std::chrono::steady_clock::now();
  auto trie = vocab_trie::from_tokenizer(**tok);
  const double trie_ms = ms_since(t_trie);
  const int n_vocab = trie->n_vocab();

  // As the executor: sequences with one grammar share a matcher and mask
  // cache (--distinct: one each, as if every request had its own schema).
  struct context {
    std::unique_ptr<grammar_matcher> m;
    std::unique_ptr<token_masker> masker;
    std::vector<size_t> seqs;
    double cpu_ms = 0;
  };
  std::vector<context> contexts(distinct ? static_cast<size_t>(n_seqs) : 1);
  for (auto& c : contexts) {
    c.m = std::make_unique<grammar_matcher>(*g);
    c.masker = std::make_unique<token_masker>(trie, *c.m);
  }
  std::vector<sequence> seqs(static_cast<size_t>(n_seqs));
  for (int i = 0; i < n_seqs; ++i) {
    sequence& q = seqs[static_cast<size_t>(i)];
    context& c = contexts[distinct ? static_cast<size_t>(i) : 0];
    c.seqs.push_back(static_cast<size_t>(i));
    q.ctx = &c - contexts.data();
    q.s = c.m->initial();
    q.logits.assign(static_cast<size_t>(n_vocab), 0.5f);
    q.rng.seed(seed + static_cast<uint64_t>(i));
  }
  kernels::thread_pool pool(threads);
  std::vector<double> step_times, step_cpu;
  size_t n_docs = 0;
  for (int step = 0; step < n_steps; ++step) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(static_cast<int>(contexts.size()), [&](int k, int) {  // masks, per context
      context& c = contexts[static_cast<size_t>(k)];
      const double c0 = thread_cpu_ms();
      for (size_t i : c.seqs) seqs[i].n_allowed = c.masker->compute(seqs[i].s, seqs[i].mask);
      c.cpu_ms = thread_cpu_ms() - c0;
    });
    pool.parallel_for(n_seqs, [&](int i, int) {  // the sampler's ban loop, then a uniform pick
      sequence& q = seqs[static_cast<size_t>(i)];
      const double c0 = thread_cpu_ms();
      for (int32_t id = 0; id < n_vocab; ++id) {
        if (((q.mask[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1) == 0) q.logits[static_cast<size_t>(id)] = -INFINITY;
      }
      q.cpu_ms = thread_cpu_ms() - c0;
      size_t k = q.n_allowed == 0 ? 0 : q.rng() % q.n_allowed;
      q.next = -1;
      for (int32_t id = 0; id < n_vocab && q.next < 0; ++id) {
        if ((q.mask[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1) {
          if (k-- == 0) q.next = id;
        }
      }
      std::fill(q.logits.begin(), q.logits.end(), 0.5f);
    });
    step_times.push_back(ms_since(t0));
    // Idle-machine wall time: each phase's work spread over the threads,
    // but no faster than its longest task.
    double mask_sum = 0, mask_max = 0, apply_sum = 0;
    for (const context& c : contexts) mask_sum += c.cpu_ms, mask_max = std::max(mask_max, c.cpu_ms);
    for (const sequence& q : seqs) apply_sum += q.cpu_ms;
    step_cpu.push_back(std::max(mask_max, mask_sum / threads) + apply_sum / threads);
    for (sequence& q : seqs) {  // advance outside the timing, as the executor does after the step
      grammar_matcher& m = *contexts[q.ctx].m;
      if (q.next < 0 || trie->is_eog(q.next)) {
        q.s = m.initial();
        ++n_docs;
      } else {
        m.advance(q.s, trie->token_bytes(q.next));
      }
    }
  }
  std::vector<double> sorted = step_times;
  std::sort(sorted.begin(), sorted.end());
  double sum = 0;
  for (double t : step_times) sum += t;
  const double mean = sum / static_cast<double>(step_times.size());
  const double p99 = sorted[std::min(sorted.size() - 1, static_cast<size_t>(std::ceil(0.99 * static_cast<double>(sorted.size()))) - 1)];
  uint64_t hits = 0, misses = 0;
  for (const context& c : contexts) {
    hits += c.masker->cache_hits();
    misses += c.masker->cache_misses();
  }
  std::printf("vocab %s: %d tokens, trie built in %.1f ms\n", vocab_path.c_str(), n_vocab, trie_ms);
  std::printf("%d sequences (%zu grammar contexts) x %d steps on %d threads: mask+apply per step mean %.3f ms, p99 %.3f ms, first %.3f ms, "
              "max %.3f ms; cache hits %.1f%% of %llu stack masks; %zu documents completed\n",
              n_seqs, contexts.size(), n_steps, threads, mean, p99, step_times.front(), sorted.back(),
              100.0 * static_cast<double>(hits) / static_cast<double>(std::max<uint64_t>(1, hits + misses)),
              static_cast<unsigned long long>(hits + misses), n_docs);
  double cpu_sum = 0;
  for (double t : step_cpu) cpu_sum += t;
  const double cpu_mean = cpu_sum / static_cast<double>(step_cpu.size());
  std::printf("CPU time per step / %d threads (idle-machine wall): mean %.3f ms\n", threads, cpu_mean);
  if (step_ms > 0) {
    std::printf("against a %.1f ms decode step: wall mean %.1f%%, p99 %.1f%%; CPU mean %.1f%%\n", step_ms,
                100.0 * mean / step_ms, 100.0 * p99 / step_ms, 100.0 * cpu_mean / step_ms);
  }
  return 0;
}
