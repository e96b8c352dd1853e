// ISA-generic tile bodies of the row-major matmul kernels (float weights,
// the q8_32 types and the k-quants), written once over an isa traits type I and compiled per isa
// by x86/matmul_avx2.cpp, matmul_avx512.cpp, matmul_k_avx2.cpp and
// matmul_k_avx512.cpp, as vec_body.hpp does for the vector ops. What differs
// per isa (register width, how codes meet activations) is in I and in the
// per-type policies each TU defines; the loops over rows, tokens, blocks and
// chunks are here once.
//
// Anonymous namespace on purpose (see matmul_tile_loop.hpp): each TU gets its
// own copy compiled with its own flags.
//
// I provides (all static):
//   facc                 float accumulator vector; fzero(), reduce(facc) -> float
//   width                floats per facc; loadx(const float*) -> facc (unaligned);
//                        fmadd(a, b, c) = a * b + c
//   finish_float<Load>(acc, row, x, k, cols) -> float
//                        reduce(acc) plus the products of columns [k, cols),
//                        fewer than width of them
//   optionally add_tail<Load>(acc, row, x, k, cols) -> facc and
//   store_sums_4x4(acc[4][4], y, ld): y[j * ld + i] = the sum of acc[i][j]
//                        with its tail, bit for bit what finish_float gives
//   iacc                 int32 accumulator vector; izero()
//   chunk                64 codes (or their scales) of one k-quant chunk
//   load_chunk(p)        64 int8 activations at p (64-aligned)
//   dot_chunk(isum, codes, x, scales) -> iacc
//                        isum + per-lane sums of codes (u8) * x (s8) * scales
// A float Load provides load(row, k) -> facc: width weights from column k.
// A k-quant Policy provides block, row_state, prepare(block, row_state&),
// codes(block, row_state, c) -> chunk, scale(row_state, c) -> chunk and
// finish(row_state, iacc, __m256i bsums, float dx, facc) -> facc; with
// `static constexpr bool own_dot = true`, also its own dot(iacc, codes,
// chunk x, chunk scales) -> iacc in place of I::dot_chunk, for codes outside
// dot_chunk's range (iq4_xs) or signed ones (the iq grids); its codes() may
// then return any type that dot takes (e.g. magnitudes and signs).
// For q8_32 weights I is the isa's q8_32 extension (in its TU), adding:
//   q8_blocks            blocks of 32 per step (1 or 2; with 2, an odd last
//                        block is a step of 1 against the zero padding block)
//   qvec                 the codes of a step
//   wscale               the weight blocks' scales of a step: facc (d), or
//                        for the q8_1 types a pair of facc (d and min m)
//   codes<Unpack, n>(const block*) -> qvec, scales<n>(const block*) -> wscale
//   q8_x, load_x(xt, x, b) a token's activations of the step at block b
//   dot<Unpack>(qvec, wscale wd, q8_x, facc acc) -> facc
//                        acc + (codes . xq * dx + zero point term) * wd, or
//                        for q8_1: acc + codes . xq * dx * d + m * s
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "kernels/matmul_kernels.hpp"
#include "kernels/x86/matmul_tile_loop.hpp"

namespace cortex::kernels {
namespace {

// acc[i][j] = I::fzero() for an nr x nt tile.
template <class I, int nr, int nt>
void zero_tile(typename I::facc (&acc)[nr][nt]) {
  for (int i = 0; i < nr; ++i)
    for (int j = 0; j < nt; ++j) acc[i][j] = I::fzero();
}

// y[t + j, r + i] = reduce(acc[i][j]) (y is (n_tokens, ld) row-major).
template <class I, int nr, int nt>
void store_tile(const typename I::facc (&acc)[nr][nt], float* y, int64_t ld, int64_t r, int t) {
  for (int i = 0; i < nr; ++i)
    for (int j = 0; j < nt; ++j) y[(t + j) * ld + r + i] = I::reduce(acc[i][j]);
}

// Whether an isa sums a 4 x 4 float tile's accumulators together
// (store_sums_4x4, with add_tail for the leftover columns).
template <class I, class = void>
struct has_store_sums_4x4 : std::false_type {};
template <class I>
struct has_store_sums_4x4<I, std::void_t<decltype(&I::store_sums_4x4)>> : std::true_type {};

// f32 / f16 / bf16 weights against f32 (possibly rounded) activations.
template <class I, class Load>
struct float_tile {
  const weight_view& w;
  const quantized_x& x;
  float* y;

  // y[t.., r..] = W rows (nr, cols) . x tokens (nt, cols)
  template <int nr, int nt>
  void run(int64_t r, int t) const {
    const tile_operands<uint8_t, float, nr, nt> op(w, x, r, t);
    typename I::facc acc[nr][nt];
    zero_tile<I>(acc);
    int64_t k = 0;
    for (; k + I::width <= w.cols; k += I::width) {
      typename I::facc wv[nr];
      for (int i = 0; i < nr; ++i) wv[i] = Load::load(op.rows[i], k);
      for (int j = 0; j < nt; ++j) {
        const typename I::facc xv = I::loadx(op.xs[j] + k);
        for (int i = 0; i < nr; ++i) acc[i][j] = I::fmadd(wv[i], xv, acc[i][j]);
      }
    }
    if constexpr (nr == 4 && nt == 4 && has_store_sums_4x4<I>::value) {
      for (int i = 0; i < nr; ++i)
        for (int j = 0; j < nt; ++j) acc[i][j] = I::template add_tail<Load>(acc[i][j], op.rows[i], op.xs[j], k, w.cols);
      I::store_sums_4x4(acc, y + t * w.rows + r, w.rows);
    } else {
      for (int i = 0; i < nr; ++i)
        for (int j = 0; j < nt; ++j)
          y[(t + j) * w.rows + r + i] = I::template finish_float<Load>(acc[i][j], op.rows[i], op.xs[j], k, w.cols);
    }
  }
};

// q8_32 weights (blocks of 32 codes and one scale: f16, or mxfp4's E8M0)
// against q8_32 activations, or q4_1 / q5_1 (a scale and a min) against
// q8_1; each step's weight codes are unpacked once for all nt tokens.
template <class I, class Unpack>
struct q8_32_tile {
  using block = typename Unpack::block;
  const weight_view& w;
  const quantized_x& x;
  float* y;

  template <int n_blocks, int nr, int nt>
  void step(const tile_operands<block, uint8_t, nr, nt>& op, int64_t b, typename I::facc (&acc)[nr][nt]) const {
    typename I::qvec wq[nr];
    typename I::wscale wd[nr];
    for (int i = 0; i < nr; ++i) {
      wq[i] = I::template codes<Unpack, n_blocks>(op.rows[i] + b);
      wd[i] = I::template scales<n_blocks>(op.rows[i] + b);
    }
    for (int j = 0; j < nt; ++j) {
      const typename I::q8_x xb = I::load_x(op.xs[j], x, b);
      for (int i = 0; i < nr; ++i) acc[i][j] = I::template dot<Unpack>(wq[i], wd[i], xb, acc[i][j]);
    }
  }

  template <int nr, int nt>
  void run(int64_t r, int t) const {
    const int64_t nb = w.cols / 32;
    const tile_operands<block, uint8_t, nr, nt> op(w, x, r, t);
    typename I::facc acc[nr][nt];
    zero_tile<I>(acc);
    int64_t b = 0;
    for (; b + I::q8_blocks <= nb; b += I::q8_blocks) step<I::q8_blocks>(op, b, acc);
    if (b < nb) step<1>(op, b, acc);
    store_tile<I>(acc, y, w.rows, r, t);
  }
};

// Whether a k-quant Policy has its own dot (else the isa's dot_chunk).
template <class Policy, class = void>
struct has_own_dot : std::false_type {};
template <class Policy>
struct has_own_dot<Policy, std::void_t<decltype(Policy::own_dot)>> : std::integral_constant<bool, Policy::own_dot> {};

// k-quant weights against q8_256 activations: per super-block, each weight
// block is decoded once (four chunks of 64 codes) and used for all nt tokens.
template <class I, class Policy>
struct k_tile {
  using block = typename Policy::block;
  // I::chunk, or what a policy with its own dot decodes a chunk into.
  using wchunk = decltype(Policy::codes(std::declval<const block&>(),
                                        std::declval<const typename Policy::row_state&>(), 0));
  const weight_view& w;
  const quantized_x& x;
  float* y;

  template <int nr, int nt>
  void run(int64_t r, int t) const {
    const int64_t nb = w.cols / 256;
    const tile_operands<block, uint8_t, nr, nt> op(w, x, r, t);
    typename I::facc acc[nr][nt];
    zero_tile<I>(acc);
    for (int64_t b = 0; b < nb; ++b) {
      typename Policy::row_state rs[nr];
      for (int i = 0; i < nr; ++i) Policy::prepare(op.rows[i][b], rs[i]);
      typename I::iacc isum[nr][nt];
      for (int i = 0; i < nr; ++i)
        for (int j = 0; j < nt; ++j) isum[i][j] = I::izero();
      for (int c = 0; c < 4; ++c) {
        wchunk wq[nr];
        typename I::chunk sc[nr];
        for (int i = 0; i < nr; ++i) {
          wq[i] = Policy::codes(op.rows[i][b], rs[i], c);
          sc[i] = Policy::scale(rs[i], c);
        }
        for (int j = 0; j < nt; ++j) {
          const typename I::chunk xq = I::load_chunk(op.xs[j] + b * 256 + c * 64);
          for (int i = 0; i < nr; ++i) {
            if constexpr (has_own_dot<Policy>::value) {
              isum[i][j] = Policy::dot(isum[i][j], wq[i], xq, sc[i]);
            } else {
              isum[i][j] = I::dot_chunk(isum[i][j], wq[i], xq, sc[i]);
            }
          }
        }
      }
      for (int j = 0; j < nt; ++j) {
        const __m256i bsums = _mm256_load_si256(reinterpret_cast<const __m256i*>(op.xs[j] + x.aux_offset) + b);
        const float dx = reinterpret_cast<const float*>(op.xs[j] + x.d_offset)[b];
        for (int i = 0; i < nr; ++i) acc[i][j] = Policy::finish(rs[i], isum[i][j], bsums, dx, acc[i][j]);
      }
    }
    store_tile<I>(acc, y, w.rows, r, t);
  }
};

}  // namespace
}  // namespace cortex::kernels
