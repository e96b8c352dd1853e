// Paged attention benchmarks, one KV head group per call as the forward pass
// issues them (tinyllama-1.1b's shape: 32 heads over 4 KV heads, head_dim
// 64, f16 cache, blocks of 16):
//   attention/nq:N/ctx:C/isa    N queries at positions C - N .. C - 1
// nq:1 is a decode step, nq:9 a verify step of 1 + 8 drafted tokens, nq:64
// a prefill chunk. Counter row_keys_per_second: (query, head, key) triples.
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "kernels/attention.hpp"
#include "kernels/cpu_features.hpp"
#include "kernels/kv_type.hpp"

namespace cortex::kernels {
namespace {

constexpr int n_heads = 32, n_kv_heads = 4, head_dim = 64, block = 16;

void attention_case(benchmark::State& state, int n_q, int ctx, isa which) {
  if (set_isa_for_testing(which) != which) {
    state.SkipWithError("isa not supported by this CPU");
    return;
  }
  const kv_layout layout{block, n_kv_heads, head_dim, kv_type::f16};
  const int n_blocks = (ctx + block - 1) / block;
  std::vector<uint8_t> k(static_cast<size_t>(n_blocks) * block * layout.slot_bytes()), v(k.size());
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> row(head_dim);
  const auto& tr = kv_traits(layout.type);
  for (size_t r = 0; r < k.size() / layout.row_bytes(); ++r) {
    for (auto& x : row) x = normal(rng);
    tr.store_row(row.data(), k.data() + r * layout.row_bytes(), head_dim);
    for (auto& x : row) x = normal(rng);
    tr.store_row(row.data(), v.data() + r * layout.row_bytes(), head_dim);
  }
  std::vector<int32_t> table(static_cast<size_t>(n_blocks));
  for (int b = 0; b < n_blocks; ++b) table[static_cast<size_t>(b)] = n_blocks - 1 - b;  // not in order
  std::vector<float> q(static_cast<size_t>(n_q) * n_heads * head_dim), out(q.size());
  for (auto& x : q) x = normal(rng);
  const int group = n_heads / n_kv_heads;
  for (auto _ : state) {
    for (int g = 0; g < n_kv_heads; ++g) {
      attention_args a;
      a.q = q.data();
      a.n_q = n_q;
      a.pos0 = ctx - n_q;
      a.n_heads = n_heads;
      a.head_begin = g * group;
      a.head_end = (g + 1) * group;
      a.k_arena = k.data();
      a.v_arena = v.data();
      a.block_table = table.data();
      a.layout = layout;
      a.scale = 0.125f;
      a.out = out.data();
      attention_paged(a);
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["row_keys_per_second"] =
      benchmark::Counter(static_cast<double>(n_q) * n_heads * ctx, benchmark::Counter::kIsIterationInvariantRate);
  set_isa_for_testing(best_supported_isa());
}

int register_all() {
  const isa isas[] = {isa::avx2, isa::avx512};
  for (int n_q : {1, 9, 64}) {
    for (int ctx : {137, 1024}) {
      for (isa i : isas) {
        const std::string name = "attention/nq:" + std::to_string(n_q) + "/ctx:" + std::to_string(ctx) + "/" + isa_name(i);
        benchmark::RegisterBenchmark(name.c_str(), attention_case, n_q, ctx, i)->Unit(benchmark::kMicrosecond);
      }
    }
  }
  return 0;
}

const int registered = register_all();

}  // namespace
}  // namespace cortex::kernels
