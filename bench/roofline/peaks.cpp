#include "bench/roofline/peaks.hpp"

// GCC 12 warns inside its own AVX-512 intrinsics (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/cpu_features.hpp"
#include "kernels/memory_bandwidth.hpp"

namespace cortex::bench {

namespace {

// 12 independent accumulator chains hide the 4-5 cycle latency on two ports.
constexpr int n_chains = 12;

// Throughput loops in inline asm: 12 independent accumulators (zmm0-11, enough
// to hide a 4-5 cycle latency on two ports), sources in zmm30/31. Intrinsics
// made GCC copy every accumulator each iteration, which halved the rate.
// Each returns the instructions executed: iters * n_chains.
#define CHAIN_ASM(op)                                                                                     \
  op " %%zmm31, %%zmm30, %%zmm0\n\t" op " %%zmm31, %%zmm30, %%zmm1\n\t" op " %%zmm31, %%zmm30, %%zmm2\n\t" \
  op " %%zmm31, %%zmm30, %%zmm3\n\t" op " %%zmm31, %%zmm30, %%zmm4\n\t" op " %%zmm31, %%zmm30, %%zmm5\n\t"   \
  op " %%zmm31, %%zmm30, %%zmm6\n\t" op " %%zmm31, %%zmm30, %%zmm7\n\t" op " %%zmm31, %%zmm30, %%zmm8\n\t"   \
  op " %%zmm31, %%zmm30, %%zmm9\n\t" op " %%zmm31, %%zmm30, %%zmm10\n\t" op " %%zmm31, %%zmm30, %%zmm11\n\t"
#define CHAIN_CLOBBERS \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm30", "xmm31"

__attribute__((target("avx512f"))) uint64_t fma_loop(uint64_t iters, float* sink) {
  const uint64_t n = iters;
  float out[16];
  __asm__ volatile(
      "vpxord %%zmm0, %%zmm0, %%zmm0\n\t"
      "vmovaps %%zmm0, %%zmm1\n\tvmovaps %%zmm0, %%zmm2\n\tvmovaps %%zmm0, %%zmm3\n\tvmovaps %%zmm0, %%zmm4\n\t"
      "vmovaps %%zmm0, %%zmm5\n\tvmovaps %%zmm0, %%zmm6\n\tvmovaps %%zmm0, %%zmm7\n\tvmovaps %%zmm0, %%zmm8\n\t"
      "vmovaps %%zmm0, %%zmm9\n\tvmovaps %%zmm0, %%zmm10\n\tvmovaps %%zmm0, %%zmm11\n\t"
      "vmovaps %%zmm0, %%zmm30\n\tvmovaps %%zmm0, %%zmm31\n\t"
      "test %[n], %[n]\n\tjz 2f\n\t"
      "1:\n\t" CHAIN_ASM("vfmadd231ps") "dec %[n]\n\tjnz 1b\n\t"
      "2:\n\tvaddps %%zmm1, %%zmm0, %%zmm0\n\tvmovups %%zmm0, %[out]\n\t"
      : [n] "+r"(iters), [out] "=m"(out)
      :
      : CHAIN_CLOBBERS, "cc");
  *sink = out[0];
  return n * n_chains;
}

__attribute__((target("avx512f,avx512vnni"))) uint64_t vnni_loop(uint64_t iters, int32_t* sink) {
  const uint64_t n = iters;
  int32_t out[16];
  __asm__ volatile(
      "vpxord %%zmm0, %%zmm0, %%zmm0\n\t"
      "vmovdqa64 %%zmm0, %%zmm1\n\tvmovdqa64 %%zmm0, %%zmm2\n\tvmovdqa64 %%zmm0, %%zmm3\n\t"
      "vmovdqa64 %%zmm0, %%zmm4\n\tvmovdqa64 %%zmm0, %%zmm5\n\tvmovdqa64 %%zmm0, %%zmm6\n\t"
      "vmovdqa64 %%zmm0, %%zmm7\n\tvmovdqa64 %%zmm0, %%zmm8\n\tvmovdqa64 %%zmm0, %%zmm9\n\t"
      "vmovdqa64 %%zmm0, %%zmm10\n\tvmovdqa64 %%zmm0, %%zmm11\n\t"
      "vpternlogd $0xff, %%zmm30, %%zmm30, %%zmm30\n\tvmovdqa64 %%zmm30, %%zmm31\n\t"
      "test %[n], %[n]\n\tjz 2f\n\t"
      "1:\n\t" CHAIN_ASM("vpdpbusd") "dec %[n]\n\tjnz 1b\n\t"
      "2:\n\tvpaddd %%zmm1, %%zmm0, %%zmm0\n\tvmovdqu32 %%zmm0, %[out]\n\t"
      : [n] "+r"(iters), [out] "=m"(out)
      :
      : CHAIN_CLOBBERS, "cc");
  *sink = out[0];
  return n * n_chains;
}
#undef CHAIN_ASM
#undef CHAIN_CLOBBERS


// Sums 64-byte lines with zmm loads into 4 accumulators: the read rate the
// AVX-512 kernels can reach (the scalar yardstick of cortex bench is lower).
__attribute__((target("avx512f"))) uint64_t read_zmm(const uint8_t* p, size_t bytes) {
  __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
  for (size_t i = 0; i + 256 <= bytes; i += 256) {
    a = _mm512_add_epi64(a, _mm512_load_si512(p + i));
    b = _mm512_add_epi64(b, _mm512_load_si512(p + i + 64));
    c = _mm512_add_epi64(c, _mm512_load_si512(p + i + 128));
    d = _mm512_add_epi64(d, _mm512_load_si512(p + i + 192));
  }
  return static_cast<uint64_t>(_mm512_reduce_add_epi64(_mm512_add_epi64(_mm512_add_epi64(a, b), _mm512_add_epi64(c, d))));
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Instructions per second summed over the pool's threads running loop at once.
template <class Loop>
double pool_rate(kernels::thread_pool& pool, double seconds, int reps, Loop loop) {
  // Calibrate on one thread: iterations for `seconds`.
  uint64_t iters = 1 << 16;
  for (;;) {
    const double t0 = now();
    loop(iters);
    const double dt = now() - t0;
    if (dt > 0.02) {
      iters = static_cast<uint64_t>(static_cast<double>(iters) * seconds / dt) + 1;
      break;
    }
    iters *= 4;
  }
  double best = 0;
  const int n = pool.size();
  for (int r = 0; r < reps; ++r) {
    std::vector<double> rate(static_cast<size_t>(n), 0.0);
    pool.parallel_for(n, [&](int task, int) {
      const double t0 = now();
      const uint64_t done = loop(iters);
      rate[static_cast<size_t>(task)] = static_cast<double>(done) / (now() - t0);
    });
    double sum = 0;
    for (double x : rate) sum += x;
    best = std::max(best, sum);
  }
  return best;
}

}  // namespace

machine_peaks measure_peaks(kernels::thread_pool& pool, double seconds, int reps) {
  machine_peaks p;
  p.read_bytes_per_s = kernels::measure_read_bandwidth(pool, size_t{512} << 20, 3);
  p.read_scalar_bytes_per_s = p.read_bytes_per_s;
  const kernels::cpu_features& f = kernels::detected_cpu_features();
  if (f.avx512f) {
    const size_t bytes = size_t{512} << 20;
    auto* buf = static_cast<uint8_t*>(std::aligned_alloc(4096, bytes));
    std::memset(buf, 1, bytes);
    std::vector<uint64_t> sink(static_cast<size_t>(pool.size()) * 8);
    const int n = pool.size();
    for (int r = 0; r <= reps; ++r) {
      const double t0 = now();
      pool.parallel_for(n, [&](int task, int) {
        const size_t b0 = bytes / 256 * task / n * 256, b1 = bytes / 256 * (task + 1) / n * 256;
        sink[static_cast<size_t>(task) * 8] = read_zmm(buf + b0, b1 - b0);
      });
      const double bw = static_cast<double>(bytes) / (now() - t0);
      if (r > 0) p.read_bytes_per_s = std::max(p.read_bytes_per_s, bw);
    }
    std::free(buf);
  }
  if (f.avx512f) {
    float sink = 0;
    p.fma_lanes = 16;
    p.fma_flop_per_s = 2.0 * 16 * pool_rate(pool, seconds, reps, [&](uint64_t it) { return fma_loop(it, &sink); });
  }
  if (f.avx512f && f.avx512_vnni) {
    int32_t sink = 0;
    p.vnni_op_per_s = 2.0 * 64 * pool_rate(pool, seconds, reps, [&](uint64_t it) { return vnni_loop(it, &sink); });
  }
  return p;
}

}  // namespace cortex::bench
