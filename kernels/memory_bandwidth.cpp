#include "kernels/memory_bandwidth.hpp"

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "kernels/x86/vec_entries.hpp"

namespace cortex::kernels {

namespace {

volatile uint32_t g_sink;

}  // namespace

uint32_t read_pages(const void* p, size_t bytes) {
  return detail::active_vec_entries().read_streams(static_cast<const float*>(p), bytes / sizeof(float));
}

double measure_read_bandwidth(thread_pool& pool, size_t bytes, int reps) {
  bytes = bytes / 4096 * 4096;
  auto* buf = static_cast<uint8_t*>(std::aligned_alloc(4096, bytes));
  if (!buf) return 0;
  std::memset(buf, 1, bytes);  // fault every page in before timing
  const int n_tasks = pool.size();
  double best = 0;
  for (int r = 0; r <= reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(n_tasks, [&](int task, int) {
      // Whole 4 KiB pages per task, so each of its four streams starts on a
      // cache line and reads whole vectors.
      const size_t n_pages = bytes / 4096;
      const size_t begin = n_pages * task / n_tasks * 4096, end = n_pages * (task + 1) / n_tasks * 4096;
      g_sink = read_pages(reinterpret_cast<const uint8_t*>(buf) + begin, end - begin);
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0 && bytes / s > best) best = bytes / s;
  }
  std::free(buf);
  return best;
}

}  // namespace cortex::kernels
