// Splitting n items into the fewest parts of at most `max`, sized evenly
// (9 by 5: 5 + 4; 9 by 4: 3 + 3 + 3): the token groups and passes of the
// packed matmul kernels. An even split has no lone tail part, whose few
// independent vpdpbusd chains would wait on latency. Anonymous namespace on
// purpose, as kernels/x86/matmul_tile_loop.hpp: each isa TU keeps its copy.
#pragma once

namespace cortex::kernels {
namespace {

struct even_split {
  int count;  // parts
  int small;  // size of the later parts; the first `n_big` have small + 1
  int n_big;
  // REQUIRES: n >= 1, max >= 1.
  even_split(int n, int max) : count((n + max - 1) / max), small(n / count), n_big(n % count) {}
  int size(int k) const { return small + (k < n_big ? 1 : 0); }
};

}  // namespace
}  // namespace cortex::kernels
