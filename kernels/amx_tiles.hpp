// Intel AMX tiles (palette 1: eight tiles tmm0..tmm7 of at most 16 rows of
// 64 bytes) as the tile kernels see them, in two implementations with one
// static interface:
//
//   amx_tiles_emu (here): an exact scalar emulation of the instructions,
//     written from the pseudo-code of Intel's SDM (vol. 2, LDTILECFG,
//     TILELOADD, TILESTORED, TILEZERO, TILERELEASE, TDPB[SU][SU]D,
//     TDPBF16PS). Runs anywhere; a fault the hardware would raise aborts
//     with a message naming the rule broken.
//   amx_tiles_hw (kernels/x86/amx_tiles_hw.hpp): the instructions, for
//     *_amx.cpp translation units only.
//
// The interface (T, C, A, B: tile numbers 0..7, compile-time constants):
//   configure(const amx_tile_config&)       LDTILECFG
//   release()                               TILERELEASE
//   load<T>(base, stride)                   TILELOADD tmmT, [base + stride]
//   store<T>(base, stride)                  TILESTORED
//   zero<T>()                               TILEZERO
//   dpbssd<C, A, B>() (and dpbsud, dpbusd,  C (M x N int32) += A (M x K
//     dpbuud: s = signed, u = unsigned        bytes) . B (K/4 x N x 4 bytes,
//     bytes of A, then of B)                  the "VNNI" layout)
//   dpbf16ps<C, A, B>()                     C (M x N f32) += A . B, bf16 pairs
#pragma once

#include <cstddef>
#include <cstdint>

namespace cortex::kernels {

constexpr int amx_n_tiles = 8;
constexpr int amx_max_rows = 16;
constexpr int amx_max_colsb = 64;  // bytes per row
// TMUL limits of palette 1 (CPUID leaf 0x1E): K up to 16 dwords (64 bytes
// of a row of A, 16 rows of B), N up to 16 dwords.
constexpr int amx_tmul_maxk = 16;
constexpr int amx_tmul_maxn = 16;

// LDTILECFG's 64-byte memory operand. Entries 8..15 of colsb and rows
// belong to no tile of palette 1 and must be zero, as must reserved.
struct alignas(64) amx_tile_config {
  uint8_t palette_id = 0;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(amx_tile_config) == 64, "LDTILECFG reads 64 bytes");

// One logical processor's tile state, instruction by instruction. Tile
// numbers are 0..7; strides are in bytes and may be negative. A fault (#GP,
// #UD) prints "amx emulation: <fault> in <INSTRUCTION>: <rule>" to stderr
// and aborts: the hardware would have killed the process with SIGSEGV /
// SIGILL.
class amx_tile_emulator {
 public:
  // LDTILECFG: palette 0 returns to the init state; palette 1 checks the
  // operand (#GP: unknown palette, nonzero reserved bytes, rows > 16,
  // colsb > 64, exactly one of rows / colsb zero) and zeroes every tile.
  void ldtilecfg(const void* mem);
  // STTILECFG: the configuration, or 64 zero bytes in the init state.
  void sttilecfg(void* mem) const;
  // TILERELEASE: the init state (not configured, tiles zero).
  void tilerelease();
  // TILELOADD: rows start_row .. rows-1 from base + r * stride, colsb bytes
  // each; bytes past colsb and rows past rows become zero.
  void tileloadd(int tdest, const void* base, int64_t stride);
  // TILESTORED: rows start_row .. rows-1, colsb bytes each.
  void tilestored(int tsrc, void* base, int64_t stride);
  // TILEZERO: the whole tile (16 x 64 bytes).
  void tilezero(int tdest);
  // C[m][n] += sum over k, j < 4 of A[m][4k + j] * B[k][4n + j], as 32-bit
  // wrap-around integers, bytes of A / B signed (s) or unsigned (u). #UD
  // unless the three tiles differ and M, K, N agree: C.rows == A.rows,
  // A.colsb / 4 == B.rows, C.colsb == B.colsb (and the TMUL limits).
  void tdpbssd(int c, int a, int b);
  void tdpbsud(int c, int a, int b);
  void tdpbusd(int c, int a, int b);
  void tdpbuud(int c, int a, int b);
  // C[m][n] += (t[2n] + t[2n+1]), t[2n + i] = sum over k of A[m].bf16[2k+i]
  // * B[k].bf16[2n+i] accumulated by FMAs from zero; every operation rounds
  // to nearest even, treats denormal inputs as zero (DAZ) and flushes
  // denormal results to zero (FTZ), whatever MXCSR says.
  void tdpbf16ps(int c, int a, int b);

  bool configured() const { return configured_; }
  const amx_tile_config& config() const { return cfg_; }
  // Tile t's register: 16 rows of 64 bytes.
  const uint8_t* tile_bytes(int t) const { return tiles_[t][0]; }

 private:
  template <bool SignedA, bool SignedB>
  void dot_bytes(const char* name, int c, int a, int b);
  void check_tile(const char* name, int t) const;
  void check_tmul(const char* name, int c, int a, int b) const;
  void zero_upper(int t);

  bool configured_ = false;
  amx_tile_config cfg_;
  alignas(64) uint8_t tiles_[amx_n_tiles][amx_max_rows][amx_max_colsb] = {};
};

// Rounds like TDPBF16PS's accumulation: fma(a, b, c) to nearest even with
// denormal inputs read as zero and a denormal result flushed to zero (tiny
// after rounding, as x86 detects it). Exposed for tests.
float amx_fma_daz_ftz(float a, float b, float c);

// The calling thread's emulator (a thread_local: tiles are per logical
// processor).
amx_tile_emulator& amx_thread_emulator();

// TMUL instructions (TDP*) all emulators of the process have run: tests
// use it to see that a tile kernel really ran.
uint64_t amx_emulated_tmul_count();

namespace {

// The emulation with amx_tiles_hw's interface. Unnamed namespace: each
// translation unit, whatever its compile flags, keeps its own copy.
struct amx_tiles_emu {
  static void configure(const amx_tile_config& c) { amx_thread_emulator().ldtilecfg(&c); }
  static void release() { amx_thread_emulator().tilerelease(); }
  template <int T>
  static void load(const void* base, size_t stride) {
    amx_thread_emulator().tileloadd(T, base, static_cast<int64_t>(stride));
  }
  template <int T>
  static void store(void* base, size_t stride) {
    amx_thread_emulator().tilestored(T, base, static_cast<int64_t>(stride));
  }
  template <int T>
  static void zero() {
    amx_thread_emulator().tilezero(T);
  }
  template <int C, int A, int B>
  static void dpbssd() {
    amx_thread_emulator().tdpbssd(C, A, B);
  }
  template <int C, int A, int B>
  static void dpbsud() {
    amx_thread_emulator().tdpbsud(C, A, B);
  }
  template <int C, int A, int B>
  static void dpbusd() {
    amx_thread_emulator().tdpbusd(C, A, B);
  }
  template <int C, int A, int B>
  static void dpbuud() {
    amx_thread_emulator().tdpbuud(C, A, B);
  }
  template <int C, int A, int B>
  static void dpbf16ps() {
    amx_thread_emulator().tdpbf16ps(C, A, B);
  }
};

}  // namespace

}  // namespace cortex::kernels
