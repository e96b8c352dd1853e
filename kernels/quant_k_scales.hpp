// The 12-byte packed scales of q4_K / q5_K super-blocks: eight 6-bit sub-block
// scales and eight 6-bit sub-block mins, laid out as in llama.cpp:
//   bytes 0..3:  scale[j] (low 6 bits), top 2 bits = scale[j+4] >> 4
//   bytes 4..7:  min[j]   (low 6 bits), top 2 bits = min[j+4] >> 4
//   bytes 8..11: low nibble = scale[j+4] & 15, high nibble = min[j+4] & 15
#pragma once

#include <cstdint>

namespace cortex {

// Sub-block j (0..7) of packed scales q -> its 6-bit scale *d and min *m.
inline void get_scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = static_cast<uint8_t>((q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// Inverse of get_scale_min_k4 for all eight sub-blocks.
// REQUIRES: every scale[j], min[j] <= 63. Writes all 12 bytes of q.
inline void set_scale_min_k4(const uint8_t* scale, const uint8_t* min, uint8_t* q) {
  for (int j = 0; j < 4; ++j) {
    q[j] = static_cast<uint8_t>(scale[j] | ((scale[j + 4] >> 4) << 6));
    q[j + 4] = static_cast<uint8_t>(min[j] | ((min[j + 4] >> 4) << 6));
    q[j + 8] = static_cast<uint8_t>((scale[j + 4] & 0x0f) | ((min[j + 4] & 0x0f) << 4));
  }
}

}  // namespace cortex
