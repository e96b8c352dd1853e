// Software prefetch of packed weight records ahead of the decode and
// batched kernels (without it their compute and the weight stream barely
// overlap: a q4_0 decode read at the sum of both times). Anonymous namespace on purpose, as kernels/x86/even_split.hpp: each
// isa TU keeps its copy.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace cortex::kernels {
namespace {

// Record `rec` of the panel at `panel` (n_records records of record_bytes);
// from n_records on, the records of the panel at `next`, which the kernel
// streams after it. A prefetch never faults, so an address past the
// matrix's last panel is harmless.
inline const uint8_t* record_ahead(const uint8_t* panel, const uint8_t* next, int64_t n_records, int64_t record_bytes,
                                   int64_t rec) {
  return rec < n_records ? panel + rec * record_bytes : next + (rec - n_records) * record_bytes;
}

// Prefetches the 64-byte line at p into L1. An asm statement, not
// _mm_prefetch: GCC 12 counts __builtin_prefetch as touching no memory, so
// a helper made only of prefetches is found to be a const function and
// every call of it is deleted as dead code (this file's first helpers, and
// the q4_0 kernels' record prefetch, compiled to no prefetch at all). A
// volatile asm is never deleted. tests/kernels/prefetch_kept.py checks the
// kernels' objects still hold their prefetches.
inline void prefetch_line(const uint8_t* p) { asm volatile("prefetcht0 %0" : : "m"(*p)); }

// Step `step` of `steps` through a record of record_bytes (whole lines):
// prefetches its lines step, step + steps, ... A kernel that calls it once
// in each of the steps of its compute of one record spreads the next
// record's prefetches over that compute (a burst of them at the record's
// start holds the loads behind it).
inline void prefetch_record_step(const uint8_t* record, int64_t record_bytes, int step, int steps) {
  for (int64_t line = step; line < record_bytes / 64; line += steps) prefetch_line(record + 64 * line);
}

// The record `rec` ahead of NS panels a kernel streams together (record_ahead
// of each: past a panel's n_records, the panel next_offset bytes on, which
// the next tile streams in its place), found once per record; step() is
// prefetch_record_step on each.
template <int NS>
struct records_ahead {
  const uint8_t* at[NS];
  int64_t record_bytes;
  records_ahead(const uint8_t* const (&panel)[NS], size_t next_offset, int64_t n_records, int64_t record_bytes,
                int64_t rec)
      : record_bytes(record_bytes) {
    for (int i = 0; i < NS; ++i) at[i] = record_ahead(panel[i], panel[i] + next_offset, n_records, record_bytes, rec);
  }
  void step(int step, int steps) const {
    for (int i = 0; i < NS; ++i) prefetch_record_step(at[i], record_bytes, step, steps);
  }
};

// Prefetches the 64-byte lines of [p, p + bytes) into L1.
inline void prefetch_lines(const uint8_t* p, int64_t bytes) {
  for (int64_t line = 0; line < bytes; line += 64) prefetch_line(p + line);
}

}  // namespace
}  // namespace cortex::kernels
