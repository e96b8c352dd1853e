// llama.cpp's nearest_int (ggml-quants.c), bit for bit, for the quantizers.
#pragma once

#include <cstdint>
#include <cstring>

namespace cortex {
namespace {

// Round half to even for |v| < 2^22, and the same wrapped value as the
// reference beyond (where a degenerate block can take it), so such blocks
// still quantize to llama-quantize's bytes.
inline int nearest_int(float v) {
  const float shifted = v + 12582912.f;
  int32_t i;
  std::memcpy(&i, &shifted, 4);
  return (i & 0x007fffff) - 0x00400000;
}

}  // namespace
}  // namespace cortex
