// Machine peaks the roofline report divides by, measured by the tool itself:
// memory read bandwidth and the integer / float SIMD throughput of the
// compute pool's threads (all threads busy at once).
#pragma once

#include "kernels/thread_pool.hpp"

namespace cortex::bench {

struct machine_peaks {
  double read_bytes_per_s = 0;   // streaming read, all threads: best of scalar and zmm loads
  double read_scalar_bytes_per_s = 0;  // 64-bit loads, as cortex bench measures
  double fma_flop_per_s = 0;     // f32 FMA, 2 flop per lane; 0 if no AVX-512F
  double vnni_op_per_s = 0;      // vpdpbusd, 2 op per int8 pair; 0 if no AVX512_VNNI
  int fma_lanes = 0;             // 16 (zmm) when measured
};

// Runs each throughput loop for about `seconds` on every pool thread and
// returns the best of `reps` measurements.
machine_peaks measure_peaks(kernels::thread_pool& pool, double seconds, int reps);

}  // namespace cortex::bench
