#include "kernels/memory_bandwidth.hpp"

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>


namespace cortex::kernels {

namespace {

// Sums 64-bit words with independent accumulators so the loads, not the
// adds, are the limit. volatile sink keeps the compiler from dropping it.
uint64_t read_range(const uint64_t* p, size_t n) {
  uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
  for (size_t i = 0; i + 8 <= n; i += 8) {
    a0 += p[i]; a1 += p[i + 1]; a2 += p[i + 2]; a3 += p[i + 3];
    a4 += p[i + 4]; a5 += p[i + 5]; a6 += p[i + 6]; a7 += p[i + 7];
  }
  return a0 ^ a1 ^ a2 ^ a3 ^ a4 ^ a5 ^ a6 ^ a7;
}

volatile uint64_t g_sink;

}  // namespace

double measure_read_bandwidth(thread_pool& pool, size_t bytes, int reps) {
  bytes = bytes / 4096 * 4096;
  auto* buf = static_cast<uint64_t*>(std::aligned_alloc(4096, bytes));
  if (!buf) return 0;
  std::memset(buf, 1, bytes);  // fault every page in before timing
  const size_t n_words = bytes / sizeof(uint64_t);
  const int n_tasks = pool.size();
  double best = 0;
  for (int r = 0; r <= reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(n_tasks, [&](int task, int) {
      const size_t begin = n_words * task / n_tasks, end = n_words * (task + 1) / n_tasks;
      g_sink = read_range(buf + begin, end - begin);
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0 && bytes / s > best) best = bytes / s;
  }
  std::free(buf);
  return best;
}

}  // namespace cortex::kernels
