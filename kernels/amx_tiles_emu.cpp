// The AMX emulation (kernels/amx_tiles.hpp), transcribed from the SDM's
// pseudo-code: zero_upper_rows / write_row_and_zero_upper become the zeroing
// of every byte past a tile's configured shape, zero_tilecfg_start the reset
// of start_row after each instruction. Faults follow the SDM's exception
// classes (LDTILECFG's #GP list; #UD for an unconfigured state or tile and
// for a TMUL whose shapes disagree).
#include "kernels/amx_tiles.hpp"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels/fp16.hpp"

namespace cortex::kernels {

namespace {

[[noreturn]] void fault(const char* kind, const char* instruction, const char* rule, long a = 0, long b = 0) {
  char why[200];
  std::snprintf(why, sizeof why, rule, a, b);
  std::fprintf(stderr, "amx emulation: %s in %s: %s\n", kind, instruction, why);
  std::fflush(stderr);
  std::abort();
}

bool all_zero(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// make_fp32 of the pseudo-code: the bf16 as the top half of an fp32.
float bf16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return bf16_to_fp32(h);
}

float daz(float v) { return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.f, v) : v; }

constexpr float min_normal = 0x1p-126f;

std::atomic<uint64_t> tmul_count{0};

}  // namespace

float amx_fma_daz_ftz(float a, float b, float c) {
  a = daz(a);
  b = daz(b);
  c = daz(c);
  const float r = std::fma(a, b, c);
  if (std::fpclassify(r) == FP_SUBNORMAL) return std::copysign(0.f, r);
  if (std::fabs(r) == min_normal) {
    // Tininess after rounding: the exact a * b + c rounded to 24 bits with an
    // unbounded exponent may lie below the smallest normal although rounding
    // onto the denormal grid reached it; x86 flushes that result. The exact
    // value is p + c = s + e (p = a * b exact in double, two-sum for s, e);
    // the 24-bit rounding is below 2^-126 iff |exact| < 2^-126 - 2^-151 (the
    // midpoint to the next float down; a tie goes to 2^-126, the even one).
    const double p = static_cast<double>(a) * static_cast<double>(b);
    const double s = p + static_cast<double>(c);
    const double bb = s - p;
    const double e = (p - (s - bb)) + (static_cast<double>(c) - bb);
    const double threshold = 0x1p-126 - 0x1p-151;
    const double mag = std::fabs(s);
    const double mag_e = s < 0 ? -e : e;
    if (mag < threshold || (mag == threshold && mag_e < 0)) return std::copysign(0.f, r);
  }
  return r;
}

uint64_t amx_emulated_tmul_count() { return tmul_count.load(std::memory_order_relaxed); }

amx_tile_emulator& amx_thread_emulator() {
  static thread_local amx_tile_emulator state;
  return state;
}

void amx_tile_emulator::ldtilecfg(const void* mem) {
  const char* name = "LDTILECFG";
  amx_tile_config c;
  std::memcpy(&c, mem, sizeof c);
  if (c.palette_id == 0) {
    tilerelease();
    return;
  }
  if (c.palette_id > 1) fault("#GP", name, "palette_id %ld is not supported (palette 1 is the only one)", c.palette_id);
  if (!all_zero(c.reserved, sizeof c.reserved)) fault("#GP", name, "bytes 2..15 (reserved) are not zero");
  for (int t = 0; t < amx_n_tiles; ++t) {
    if (c.colsb[t] > amx_max_colsb) fault("#GP", name, "tile %ld: colsb %ld > bytes_per_row 64", t, c.colsb[t]);
  }
  if (!all_zero(reinterpret_cast<const uint8_t*>(c.colsb + amx_n_tiles), 2 * (16 - amx_n_tiles))) {
    fault("#GP", name, "colsb of tiles 8..15 (bytes 32..47) are not zero");
  }
  for (int t = 0; t < amx_n_tiles; ++t) {
    if (c.rows[t] > amx_max_rows) fault("#GP", name, "tile %ld: rows %ld > max_rows 16", t, c.rows[t]);
  }
  if (!all_zero(c.rows + amx_n_tiles, 16 - amx_n_tiles)) {
    fault("#GP", name, "rows of tiles 8..15 (bytes 56..63) are not zero");
  }
  for (int t = 0; t < amx_n_tiles; ++t) {
    if ((c.rows[t] == 0) != (c.colsb[t] == 0)) {
      fault("#GP", name, "tile %ld: one of rows and colsb is zero but not both (rows %ld)", t, c.rows[t]);
    }
  }
  cfg_ = c;
  std::memset(tiles_, 0, sizeof tiles_);
  configured_ = true;
}

void amx_tile_emulator::sttilecfg(void* mem) const {
  amx_tile_config out;
  if (configured_) out = cfg_;
  std::memcpy(mem, &out, sizeof out);
}

void amx_tile_emulator::tilerelease() {
  cfg_ = amx_tile_config{};
  std::memset(tiles_, 0, sizeof tiles_);
  configured_ = false;
}

// #UD unless the tiles are configured and tile t is one of them (valid:
// rows and colsb nonzero).
void amx_tile_emulator::check_tile(const char* name, int t) const {
  if (!configured_) fault("#UD", name, "tiles are not configured (LDTILECFG with palette 1 first)");
  if (t < 0 || t >= amx_n_tiles) fault("#UD", name, "tmm%ld does not exist in palette 1 (tmm0..tmm7)", t);
  if (cfg_.rows[t] == 0) fault("#UD", name, "tmm%ld is not a valid tile (rows and colsb 0 in the configuration)", t);
}

// zero_upper_rows(t, rows) and the zeroing past colsb of every written row.
void amx_tile_emulator::zero_upper(int t) {
  for (int r = 0; r < amx_max_rows; ++r) {
    const int keep = r < cfg_.rows[t] ? cfg_.colsb[t] : 0;
    std::memset(tiles_[t][r] + keep, 0, static_cast<size_t>(amx_max_colsb - keep));
  }
}

void amx_tile_emulator::tileloadd(int tdest, const void* base, int64_t stride) {
  check_tile("TILELOADD", tdest);
  const auto* mem = static_cast<const uint8_t*>(base);
  // Rows below start_row are kept (a restarted load resumes there).
  for (int r = cfg_.start_row; r < cfg_.rows[tdest]; ++r) {
    std::memcpy(tiles_[tdest][r], mem + r * stride, cfg_.colsb[tdest]);
  }
  zero_upper(tdest);
  cfg_.start_row = 0;
}

void amx_tile_emulator::tilestored(int tsrc, void* base, int64_t stride) {
  check_tile("TILESTORED", tsrc);
  auto* mem = static_cast<uint8_t*>(base);
  for (int r = cfg_.start_row; r < cfg_.rows[tsrc]; ++r) {
    std::memcpy(mem + r * stride, tiles_[tsrc][r], cfg_.colsb[tsrc]);
  }
  cfg_.start_row = 0;
}

void amx_tile_emulator::tilezero(int tdest) {
  check_tile("TILEZERO", tdest);
  std::memset(tiles_[tdest], 0, sizeof tiles_[tdest]);
  cfg_.start_row = 0;
}

// The #UD rules of a TMUL instruction (C = M x N, A = M x K, B = K x N).
void amx_tile_emulator::check_tmul(const char* name, int c, int a, int b) const {
  check_tile(name, c);
  check_tile(name, a);
  check_tile(name, b);
  if (c == a || a == b || c == b) fault("#UD", name, "the three tiles must differ (tmm%ld, tmm%ld, ...)", c, a);
  const int m_c = cfg_.rows[c], m_a = cfg_.rows[a];
  const int k_a = cfg_.colsb[a] / 4, k_b = cfg_.rows[b];
  const int n_c = cfg_.colsb[c], n_b = cfg_.colsb[b];
  if (k_a != k_b) {
    fault("#UD", name, "K: colsb / 4 of the first source (%ld) != rows of the second source (%ld)", k_a, k_b);
  }
  if (n_c != n_b) fault("#UD", name, "N: colsb of the destination (%ld) != colsb of the second source (%ld)", n_c, n_b);
  if (m_c != m_a) fault("#UD", name, "M: rows of the destination (%ld) != rows of the first source (%ld)", m_c, m_a);
  if (cfg_.colsb[a] > 4 * amx_tmul_maxk) {
    fault("#UD", name, "K: colsb of the first source %ld > 4 * tmul_maxk", cfg_.colsb[a]);
  }
  if (k_b > amx_tmul_maxk) fault("#UD", name, "K: rows of the second source %ld > tmul_maxk", k_b);
  if (n_b > 4 * amx_tmul_maxn) fault("#UD", name, "N: colsb of the second source %ld > 4 * tmul_maxn", n_b);
  tmul_count.fetch_add(1, std::memory_order_relaxed);
}

template <bool SignedA, bool SignedB>
void amx_tile_emulator::dot_bytes(const char* name, int c, int a, int b) {
  check_tmul(name, c, a, b);
  const int m_rows = cfg_.rows[c], k_dwords = cfg_.colsb[a] / 4, n_dwords = cfg_.colsb[c] / 4;
  auto byte_a = [](uint8_t v) {
    return SignedA ? static_cast<int32_t>(static_cast<int8_t>(v)) : static_cast<int32_t>(v);
  };
  auto byte_b = [](uint8_t v) {
    return SignedB ? static_cast<int32_t>(static_cast<int8_t>(v)) : static_cast<int32_t>(v);
  };
  for (int m = 0; m < m_rows; ++m) {
    for (int n = 0; n < n_dwords; ++n) {
      uint32_t acc = load_u32(tiles_[c][m] + 4 * n);
      for (int k = 0; k < k_dwords; ++k) {
        // DPBD: four products of at most 2^14 in magnitude, summed, added
        // to the dword with wrap-around.
        int32_t p = 0;
        for (int j = 0; j < 4; ++j) p += byte_a(tiles_[a][m][4 * k + j]) * byte_b(tiles_[b][k][4 * n + j]);
        acc += static_cast<uint32_t>(p);
      }
      std::memcpy(tiles_[c][m] + 4 * n, &acc, 4);
    }
  }
  zero_upper(c);
  cfg_.start_row = 0;
}

void amx_tile_emulator::tdpbssd(int c, int a, int b) { dot_bytes<true, true>("TDPBSSD", c, a, b); }
void amx_tile_emulator::tdpbsud(int c, int a, int b) { dot_bytes<true, false>("TDPBSUD", c, a, b); }
void amx_tile_emulator::tdpbusd(int c, int a, int b) { dot_bytes<false, true>("TDPBUSD", c, a, b); }
void amx_tile_emulator::tdpbuud(int c, int a, int b) { dot_bytes<false, false>("TDPBUUD", c, a, b); }

void amx_tile_emulator::tdpbf16ps(int c, int a, int b) {
  check_tmul("TDPBF16PS", c, a, b);
  const int m_rows = cfg_.rows[c], k_pairs = cfg_.colsb[a] / 4, n_dwords = cfg_.colsb[c] / 4;
  for (int m = 0; m < m_rows; ++m) {
    float t[2 * amx_tmul_maxn] = {};
    for (int k = 0; k < k_pairs; ++k) {
      for (int n = 0; n < n_dwords; ++n) {
        for (int i = 0; i < 2; ++i) {
          t[2 * n + i] = amx_fma_daz_ftz(bf16_at(tiles_[a][m] + 4 * k + 2 * i), bf16_at(tiles_[b][k] + 4 * n + 2 * i),
                                         t[2 * n + i]);
        }
      }
    }
    for (int n = 0; n < n_dwords; ++n) {
      const float pair = amx_fma_daz_ftz(t[2 * n], 1.f, t[2 * n + 1]);
      const float sum = amx_fma_daz_ftz(fp32_from_bits(load_u32(tiles_[c][m] + 4 * n)), 1.f, pair);
      std::memcpy(tiles_[c][m] + 4 * n, &sum, 4);
    }
  }
  zero_upper(c);
  cfg_.start_row = 0;
}

}  // namespace cortex::kernels
