// Matmul and memory-bandwidth benchmarks.
//   memory_read/threads:T       streaming read of 1 GiB: the decode roofline
//   matmul/<type>/<rows>x<cols>/tokens:N/<isa>/threads:T
//   matmul_packed/<type>/<rows>x<cols>/tokens:N/threads:T
// Every type with a matmul kernel is registered (kernels/quant_traits.cpp);
// filter, e.g. --benchmark_filter='matmul/(q4_0|iq4_nl)/2048x2048/tokens:(1|16)/avx512'.
// Counters: bytes_per_second = weight bytes read per second (meaningful at
// tokens:1, where matmul is memory-bound), ops_per_second = 2*rows*cols*N.
// Decode and small-batch benchmarks (tokens <= 16: a verify step of 1 + 8
// drafted tokens is tokens:9) cycle through enough copies of the matrix
// (>= 1 GiB, four times the largest L3 we have met, 260 MiB) that weights
// come from DRAM, as in a real forward pass.
#include <array>
#include <benchmark/benchmark.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_features.hpp"
#include "kernels/float_panels.hpp"
#include "kernels/fp16.hpp"
#include "kernels/matmul.hpp"
#include "kernels/matmul_packed.hpp"
#include "kernels/memory_bandwidth.hpp"
#include "kernels/thread_pool.hpp"

namespace cortex::kernels {
namespace {

constexpr size_t stream_bytes = size_t{1} << 30;
constexpr int max_streamed_tokens = 16;

thread_pool& pool_of(int n_threads) {
  static thread_pool one(1), two(2);
  return n_threads == 1 ? one : two;
}

struct aligned_buffer {
  uint8_t* data;
  explicit aligned_buffer(size_t n) : data(static_cast<uint8_t*>(std::aligned_alloc(64, (n + 63) / 64 * 64))) {}
  ~aligned_buffer() { std::free(data); }
};

void memory_read(benchmark::State& state) {
  const int n_threads = static_cast<int>(state.range(0));
  thread_pool& pool = pool_of(n_threads);
  aligned_buffer buf(stream_bytes);
  std::memset(buf.data, 1, stream_bytes);
  // Whole pages per task, read as cortex bench's probe reads them.
  const int n_tasks = 64;
  const size_t chunk = stream_bytes / 4096 / n_tasks * 4096;
  std::vector<uint32_t> sums(static_cast<size_t>(n_tasks) * 16);
  for (auto _ : state) {
    pool.parallel_for(n_tasks, [&](int task, int) {
      sums[static_cast<size_t>(task) * 16] = kernels::read_pages(buf.data + static_cast<size_t>(task) * chunk, chunk);
    });
    benchmark::DoNotOptimize(sums.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(chunk) * n_tasks);
}

// Where a block keeps its f16 scales (random bytes could be inf/nan, which
// can be slow): up to two offsets; mxfp4's E8M0 exponent is set apart.
struct scale_fields {
  size_t at[2];
  int n;
};

scale_fields scales_of(ggml_type t) {
  switch (t) {
    case ggml_type::q4_1: case ggml_type::q5_1: case ggml_type::q4_k: case ggml_type::q5_k: return {{0, 2}, 2};
    case ggml_type::q2_k: return {{offsetof(block_q2_k, d), offsetof(block_q2_k, dmin)}, 2};
    case ggml_type::q3_k: return {{offsetof(block_q3_k, d), 0}, 1};
    case ggml_type::q6_k: return {{offsetof(block_q6_k, d), 0}, 1};
    case ggml_type::mxfp4: case ggml_type::iq1_m: return {{0, 0}, 0};
    default: return {{0, 0}, 1};  // d first: q4_0, q5_0, q8_0, iq4_nl, iq4_xs, the other iq types
  }
}

void fill_weights(ggml_type t, uint8_t* data, size_t bytes, std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<uint8_t>(byte(rng));
  const uint16_t h = fp32_to_fp16(0.01f);
  if (t == ggml_type::f16) {
    for (size_t off = 0; off + 2 <= bytes; off += 2) std::memcpy(data + off, &h, 2);
    return;
  }
  const size_t block = type_traits(t).type_size;
  if (t == ggml_type::f32 || t == ggml_type::bf16) return;
  const scale_fields f = scales_of(t);
  for (size_t off = 0; off + block <= bytes; off += block) {
    for (int i = 0; i < f.n; ++i) std::memcpy(data + off + f.at[i], &h, 2);
    if (t == ggml_type::mxfp4) data[off] = 120;  // 2^-8
    if (t == ggml_type::iq1_m) {  // the f16's nibbles: top nibbles of the scale words (bytes 49, 51, 53, 55)
      for (int k = 0; k < 4; ++k) {
        uint8_t& b = data[off + offsetof(block_iq1_m, scales) + 2 * k + 1];
        b = static_cast<uint8_t>((b & 0x0f) | (((h >> (4 * k)) & 0xf) << 4));
      }
    }
  }
}

void matmul_case(benchmark::State& state, ggml_type type, int64_t rows, int64_t cols, int n_tokens, isa which,
                 int n_threads) {
  if (set_isa_for_testing(which) != which) {
    state.SkipWithError("isa not supported by this CPU");
    return;
  }
  const size_t row_bytes = matmul_row_bytes(type, cols);
  const size_t matrix_bytes = row_bytes * static_cast<size_t>(rows);
  const size_t n_copies = n_tokens <= max_streamed_tokens ? (stream_bytes + matrix_bytes - 1) / matrix_bytes : 1;
  aligned_buffer weights(matrix_bytes * n_copies);
  std::mt19937 rng(42);
  fill_weights(type, weights.data, matrix_bytes, rng);
  for (size_t c = 1; c < n_copies; ++c) std::memcpy(weights.data + c * matrix_bytes, weights.data, matrix_bytes);
  std::vector<float> x(static_cast<size_t>(n_tokens * cols)), y(static_cast<size_t>(n_tokens * rows));
  std::normal_distribution<float> normal(0.f, 1.f);
  for (auto& v : x) v = normal(rng);
  thread_pool& pool = pool_of(n_threads);
  matmul_scratch scratch;
  size_t copy = 0;
  for (auto _ : state) {
    const weight_view w{type, rows, cols, weights.data + copy * matrix_bytes, row_bytes};
    matmul(w, x.data(), n_tokens, y.data(), pool, scratch);
    benchmark::DoNotOptimize(y.data());
    copy = copy + 1 == n_copies ? 0 : copy + 1;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(matrix_bytes));
  state.counters["ops_per_second"] =
      benchmark::Counter(2.0 * static_cast<double>(rows) * static_cast<double>(cols) * n_tokens,
                         benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  set_isa_for_testing(best_supported_isa());
}

// The same shapes with weights packed at load time (kernels/matmul_packed.hpp).
// kernels/float_panels.hpp (encoders' float weights), the same shapes.
void float_panels_case(benchmark::State& state, ggml_type type, int64_t rows, int64_t cols, int n_tokens,
                       int n_threads) {
  if (!float_panels_supported(type)) {
    state.SkipWithError("no float panels on this CPU");
    return;
  }
  const size_t row_bytes = matmul_row_bytes(type, cols);
  aligned_buffer weights(row_bytes * static_cast<size_t>(rows));
  std::mt19937 rng(42);
  fill_weights(type, weights.data, row_bytes * static_cast<size_t>(rows), rng);
  thread_pool& pool = pool_of(n_threads);
  const float_panels w = pack_float_panels({type, rows, cols, weights.data, row_bytes}, pool);
  std::vector<float> x(static_cast<size_t>(n_tokens * cols)), y(static_cast<size_t>(n_tokens * rows));
  std::normal_distribution<float> normal(0.f, 1.f);
  for (auto& v : x) v = normal(rng);
  matmul_scratch scratch;
  for (auto _ : state) {
    matmul_float_panels(w, x.data(), n_tokens, y.data(), pool, scratch);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["ops_per_second"] =
      benchmark::Counter(2.0 * static_cast<double>(rows) * static_cast<double>(cols) * n_tokens,
                         benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

void matmul_packed_case(benchmark::State& state, ggml_type type, int64_t rows, int64_t cols, int n_tokens,
                        int n_threads) {
  const size_t row_bytes = matmul_row_bytes(type, cols);
  const size_t matrix_bytes = row_bytes * static_cast<size_t>(rows);
  aligned_buffer weights(matrix_bytes);
  std::mt19937 rng(42);
  fill_weights(type, weights.data, matrix_bytes, rng);
  thread_pool& pool = pool_of(n_threads);
  const weight_view w{type, rows, cols, weights.data, row_bytes};
  const packed_matrix first = pack_matrix(&w, 1, pool);
  const size_t n_copies = n_tokens <= max_streamed_tokens ? (stream_bytes + first.bytes() - 1) / first.bytes() : 1;
  std::vector<packed_matrix> copies;
  for (size_t c = 0; c < n_copies; ++c) copies.push_back(pack_matrix(&w, 1, pool));
  std::vector<float> x(static_cast<size_t>(n_tokens * cols)), y(static_cast<size_t>(n_tokens * rows));
  std::normal_distribution<float> normal(0.f, 1.f);
  for (auto& v : x) v = normal(rng);
  matmul_scratch scratch;
  float* ys[1] = {y.data()};
  size_t copy = 0;
  for (auto _ : state) {
    matmul_packed(copies[copy], x.data(), n_tokens, ys, pool, scratch);
    benchmark::DoNotOptimize(y.data());
    copy = copy + 1 == n_copies ? 0 : copy + 1;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(first.bytes()));
  state.counters["ops_per_second"] =
      benchmark::Counter(2.0 * static_cast<double>(rows) * static_cast<double>(cols) * n_tokens,
                         benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

// llama.cpp's name in lower case ("q4_k").
std::string type_name(ggml_type t) {
  std::string s = type_traits(t).name;
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

int register_all() {
  benchmark::RegisterBenchmark("memory_read", memory_read)->Arg(1)->Arg(2)->ArgName("threads")->UseRealTime()->Unit(benchmark::kMillisecond);
  // The original five first, then the other types by family.
  const ggml_type types[] = {ggml_type::q4_0,    ggml_type::q8_0,   ggml_type::q4_k,   ggml_type::q6_k,
                             ggml_type::f16,     ggml_type::q4_1,   ggml_type::q5_0,   ggml_type::q5_1,
                             ggml_type::q2_k,    ggml_type::q3_k,   ggml_type::q5_k,   ggml_type::iq4_nl,
                             ggml_type::iq4_xs,  ggml_type::mxfp4,  ggml_type::iq2_xxs, ggml_type::iq2_xs,
                             ggml_type::iq2_s,   ggml_type::iq3_xxs, ggml_type::iq3_s, ggml_type::iq1_s,
                             ggml_type::iq1_m};
  const int64_t shapes[][2] = {{5632, 2048}, {2048, 2048}};
  const isa isas[] = {isa::scalar, isa::avx2, isa::avx512};
  for (ggml_type t : types) {
    for (const auto& s : shapes) {
      for (int n_tokens : {1, 16, 128}) {
        for (isa i : isas) {
          if (i == isa::scalar && n_tokens > 1) continue;  // seconds per call
          for (int n_threads : {1, 2}) {
            if (n_tokens > 1 && n_threads == 1) continue;
            const std::string name = "matmul/" + type_name(t) + "/" + std::to_string(s[0]) + "x" +
                                     std::to_string(s[1]) + "/tokens:" + std::to_string(n_tokens) + "/" + isa_name(i) +
                                     "/threads:" + std::to_string(n_threads);
            benchmark::RegisterBenchmark(name.c_str(), matmul_case, t, s[0], s[1], n_tokens, i, n_threads)
                ->UseRealTime()
                ->Unit(benchmark::kMicrosecond);
          }
        }
      }
    }
  }
  // An encoder batch (bge-base's ffn_up and ffn_down, 4 inputs of 128
  // tokens): float weights, where the tile's arithmetic is the bound; matmul's
  // dot tiles and the float panels encoders use.
  for (ggml_type t : {ggml_type::f32, ggml_type::f16}) {
    for (const auto& s : {std::array<int64_t, 2>{3072, 768}, std::array<int64_t, 2>{768, 3072}}) {
      const std::string name = "matmul/" + type_name(t) + "/" + std::to_string(s[0]) + "x" + std::to_string(s[1]) +
                               "/tokens:512/avx512/threads:2";
      benchmark::RegisterBenchmark(name.c_str(), matmul_case, t, s[0], s[1], 512, isa::avx512, 2)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
      const std::string panels = "float_panels/" + type_name(t) + "/" + std::to_string(s[0]) + "x" +
                                 std::to_string(s[1]) + "/tokens:512/threads:2";
      benchmark::RegisterBenchmark(panels.c_str(), float_panels_case, t, s[0], s[1], 512, 2)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
  // tinyllama-1.1b's packed shapes: q+k+v, o, gate+up, down, output.
  const int64_t packed_shapes[][2] = {{2560, 2048}, {2048, 2048}, {11264, 2048}, {2048, 5632}, {32000, 2048}};
  for (ggml_type t : {ggml_type::q4_0, ggml_type::q8_0, ggml_type::q4_k, ggml_type::q6_k, ggml_type::q5_0,
                      ggml_type::q5_k, ggml_type::iq4_nl, ggml_type::mxfp4}) {
    for (const auto& s : packed_shapes) {
      for (int n_tokens : {1, 2, 4, 9, 16, 128}) {
        for (int n_threads : {1, 2}) {
          if (n_tokens > 1 && n_threads == 1) continue;
          const std::string name = "matmul_packed/" + type_name(t) + "/" + std::to_string(s[0]) + "x" +
                                   std::to_string(s[1]) + "/tokens:" + std::to_string(n_tokens) +
                                   "/threads:" + std::to_string(n_threads);
          benchmark::RegisterBenchmark(name.c_str(), matmul_packed_case, t, s[0], s[1], n_tokens, n_threads)
              ->UseRealTime()
              ->Unit(benchmark::kMicrosecond);
        }
      }
    }
  }
  return 0;
}

const int registered = register_all();

}  // namespace
}  // namespace cortex::kernels
