// Measures the machine's sustained memory read bandwidth with the compute
// pool: the yardstick for memory-bound decode ("weights read at X% of the
// bandwidth"). Shared by `cortex bench` and the kernel benchmarks.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/thread_pool.hpp"

namespace cortex::kernels {

// Reads p[0, bytes) (REQUIRES: p 64-byte aligned, bytes a multiple of 4096)
// as the decode kernels read weights on the active isa: four streams, full
// vector loads (64 bytes on AVX-512). Returns a value that depends on every
// byte read, so no load is dropped.
uint32_t read_pages(const void* p, size_t bytes);

// Reads a `bytes` buffer (split across the pool's threads) `reps` times after
// one warm-up pass with read_pages (whole pages per thread) and returns the
// best bytes per second. Allocates and
// frees the buffer itself. REQUIRES: bytes >= 1 MiB.
double measure_read_bandwidth(thread_pool& pool, size_t bytes, int reps);

}  // namespace cortex::kernels
