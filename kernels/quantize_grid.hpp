// The codebook search the lattice-codebook quantizers share
// (kernels/quantize_grid.cpp: iq2, iq3; quantize_iq1.cpp: iq1): llama.cpp's
// idealized codebooks (each entry value read as a level l, the point
// 2l + 1), the map from level patterns to entries, and each other
// pattern's nearest entries.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/ggml_type.hpp"
#include "kernels/quant_blocks.hpp"

namespace cortex::grid_quant {

struct grid_search {
  int group;      // elements per entry: 8 (iq1, iq2) or 4 (iq3)
  int bits;       // bits per element in a level pattern: 2 (iq1, iq2) or 3 (iq3)
  int max_level;  // levels 0..max_level
  std::vector<uint64_t> points;  // entry i: its values 2l + 1 as bytes
  // Per level pattern u (element j's level in bits [bits * j, bits * (j + 1))):
  // the entry whose levels these are, or -1 - (offset of its neighbour list).
  std::vector<int> map;
  // Lists: a count, then that many entry indices (nearest first, then by index).
  std::vector<uint16_t> neighbours;
};

// The search of iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s, iq1_s or iq1_m
// (built on first use; safe from any thread).
const grid_search& search_of(ggml_type t);

inline int8_t point_value(uint64_t point, int i) { return static_cast<int8_t>((point >> (8 * i)) & 0xff); }

// The map's value for a group's levels L[group] (each in [0, max_level]):
// their entry (>= 0), or -1 - the offset of their neighbour list.
int map_levels(const grid_search& s, const int8_t* L);

// Of the entries listed as the neighbours of levels whose map value is
// `mapped` (< 0), the first of least sum w * (scale * values[l] - x)^2 over
// the group, l being the entry's levels (values: iq2, iq3: the points
// 2l + 1; iq1: its shifted levels). Where no error is below FLT_MAX (an
// overflow), the nearest.
int best_neighbour(const grid_search& s, int mapped, const float* x, const float* w, float scale, const float* values);

// A row x[n] into n / qk_k blocks at y, each super-block quantized by
// quantize_block with its qk_k importance weights (nullptr: none).
template <class Block>
void quantize_super_blocks(const float* x, void* y, int64_t n, const float* qw,
                           void (*quantize_block)(const float* x, const float* qw, Block& out)) {
  auto* b = static_cast<Block*>(y);
  for (int64_t i = 0; i < n / qk_k; ++i) quantize_block(x + qk_k * i, qw ? qw + qk_k * i : nullptr, b[i]);
}

}  // namespace cortex::grid_quant
