// Measures the machine's sustained memory read bandwidth with the compute
// pool: the yardstick for memory-bound decode ("weights read at X% of the
// bandwidth"). Shared by `cortex bench` and the kernel benchmarks.
#pragma once

#include <cstddef>

#include "kernels/thread_pool.hpp"

namespace cortex::kernels {

// Reads a `bytes` buffer (split across the pool's threads) `reps` times after
// one warm-up pass and returns the best bytes per second. Allocates and
// frees the buffer itself. REQUIRES: bytes >= 1 MiB.
double measure_read_bandwidth(thread_pool& pool, size_t bytes, int reps);

}  // namespace cortex::kernels
