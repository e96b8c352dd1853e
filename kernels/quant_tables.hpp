// The value tables of the non-linear 4-bit formats (iq4_nl, iq4_xs, mxfp4),
// mxfp4's E8M0 block scale and iq4_xs's sub-block scales. Facts of the formats: the tables are those of
// llama.cpp's ggml/src/ggml-common.h (kvalues_iq4nl, kvalues_mxfp4), the
// scale is its ggml_e8m0_to_fp32_half (ggml/src/ggml-impl.h).
//
// Anonymous namespace on purpose (see x86/matmul_tile_loop.hpp): the isa
// translation units include this too, and each gets its own copy compiled
// with its own flags.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/quant_blocks.hpp"

namespace cortex {
namespace {

// iq4_nl / iq4_xs: code (0..15) -> value, times the block scale.
constexpr int8_t kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// mxfp4: code (0..15) -> twice its E2M1 value (sign bit 3, two exponent bits,
// one mantissa bit), so every value is an integer; the scale is halved to
// match (e8m0_half_to_fp32).
constexpr int8_t kvalues_mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// 2^(e - 128): half of the E8M0 scale 2^(e - 127), exact for every e (e < 2
// gives the float subnormals 2^-128 and 2^-127). E8M0's NaN (e = 255) is not
// special-cased, as in ggml: it reads as 2^127.
inline float e8m0_half_to_fp32(uint8_t e) {
  const uint32_t bits = e < 2 ? uint32_t{0x00200000} << e : static_cast<uint32_t>(e - 1) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// The 6-bit scale of sub-block s (0..7) of an iq4_xs super-block, minus 32.
inline int iq4_xs_scale(const block_iq4_xs& b, int s) {
  const int low = (b.scales_l[s / 2] >> (4 * (s % 2))) & 0x0f;
  const int high = (b.scales_h >> (2 * s)) & 3;
  return (low | (high << 4)) - 32;
}

}  // namespace
}  // namespace cortex
