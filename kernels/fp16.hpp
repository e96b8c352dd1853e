// Scalar IEEE half and bfloat16 conversions (exact, portable).
#pragma once

#include <cstdint>
#include <cstring>

namespace cortex {

inline float fp32_from_bits(uint32_t w) { float f; std::memcpy(&f, &w, 4); return f; }
inline uint32_t fp32_to_bits(float f) { uint32_t w; std::memcpy(&w, &f, 4); return w; }

inline float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    if (mant == 0) return fp32_from_bits(sign);
    // subnormal: normalise
    int e = -1;
    do { mant <<= 1; ++e; } while ((mant & 0x400u) == 0);
    mant &= 0x3ffu;
    return fp32_from_bits(sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | (mant << 13));
  }
  if (exp == 31) return fp32_from_bits(sign | 0x7f800000u | (mant << 13));
  return fp32_from_bits(sign | ((exp + 127 - 15) << 23) | (mant << 13));
}

// Round to nearest even, with overflow to inf and proper subnormals.
inline uint16_t fp32_to_fp16(float f) {
  uint32_t x = fp32_to_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (x > 0x7f800000u ? 0x200u : 0));
  if (x >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (x < 0x38800000u) {  // subnormal or zero in half
    if (x < 0x33000000u) return static_cast<uint16_t>(sign);
    const uint32_t e = x >> 23;
    uint32_t m = (x & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14 + (113 - e)
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t r = ((x >> 13) - (112u << 10));
  const uint32_t rem = x & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1))) ++r;
  return static_cast<uint16_t>(sign | r);
}

inline float bf16_to_fp32(uint16_t h) { return fp32_from_bits(static_cast<uint32_t>(h) << 16); }

inline uint16_t fp32_to_bf16(float f) {
  uint32_t x = fp32_to_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 64);  // quiet NaN
  return static_cast<uint16_t>((x + (0x7fffu + ((x >> 16) & 1))) >> 16);
}

}  // namespace cortex
