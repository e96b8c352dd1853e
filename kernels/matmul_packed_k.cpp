#include "kernels/matmul_packed_k.hpp"

#include <cstring>
#include <type_traits>

#include "kernels/fp16.hpp"
#include "kernels/quant_traits.hpp"

namespace cortex::kernels {

namespace {

constexpr int64_t panel_rows = packed_panel_rows;

void copy4(uint8_t* dst, const uint8_t* src) { std::memcpy(dst, src, 4); }

// 6-bit scale and min of sub-block j of a q4_k super-block (llama.cpp's get_scale_min_k4).
void k4_scale_min(const uint8_t* s, int j, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = s[j] & 63;
    *min = s[j + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

// The inverse: 8 scales and mins (6 bits each) into the 12-byte packing.
void k4_encode(const uint8_t* sc, const uint8_t* mn, uint8_t* s) {
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    s[j + 4] = static_cast<uint8_t>((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
    s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xf) | ((mn[j + 4] & 0xf) << 4));
  }
}

// q4_k / q5_k: the q4_k record; q5_k appends its fifth bits as 8 groups of
// 64 B at 2368, group g row r = qh[4g .. 4g + 3].
constexpr int64_t q5_k_high = 2368;

template <class Block>
void pack_k4(const Block& b, int64_t i, uint8_t* rec) {
  std::memcpy(rec + 2 * i, &b.d, 2);
  std::memcpy(rec + 32 + 2 * i, &b.dmin, 2);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, mn;
    k4_scale_min(b.scales, j, &sc, &mn);
    rec[64 + 16 * j + i] = sc;
    rec[192 + 32 * (j / 2) + 2 * i + j % 2] = mn;
  }
  for (int p = 0; p < 4; ++p)
    for (int g = 0; g < 8; ++g) copy4(rec + 320 + (p * 8 + g) * 64 + 4 * i, b.qs + 32 * p + 4 * g);
  if constexpr (std::is_same_v<Block, block_q5_k>) {
    for (int g = 0; g < 8; ++g) copy4(rec + q5_k_high + 64 * g + 4 * i, b.qh + 4 * g);
  }
}

template <class Block>
void unpack_k4(const uint8_t* rec, int64_t i, Block& b) {
  std::memcpy(&b.d, rec + 2 * i, 2);
  std::memcpy(&b.dmin, rec + 32 + 2 * i, 2);
  uint8_t sc[8], mn[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = rec[64 + 16 * j + i];
    mn[j] = rec[192 + 32 * (j / 2) + 2 * i + j % 2];
  }
  k4_encode(sc, mn, b.scales);
  for (int p = 0; p < 4; ++p)
    for (int g = 0; g < 8; ++g) copy4(b.qs + 32 * p + 4 * g, rec + 320 + (p * 8 + g) * 64 + 4 * i);
  if constexpr (std::is_same_v<Block, block_q5_k>) {
    for (int g = 0; g < 8; ++g) copy4(b.qh + 4 * g, rec + q5_k_high + 64 * g + 4 * i);
  }
}

// Byte offset of group (h, lq, part) in a q6_k record; part 0/1: ql, 2: qh.
constexpr int64_t q6_group(int h, int lq, int part) { return 320 + ((h * 8 + lq) * 3 + part) * 64; }

void pack_q6_k(const block_q6_k& b, int64_t i, uint8_t* rec) {
  std::memcpy(rec + 2 * i, &b.d, 2);
  for (int j = 0; j < 16; ++j) rec[64 + 16 * j + i] = static_cast<uint8_t>(b.scales[j]);
  for (int h = 0; h < 2; ++h)
    for (int lq = 0; lq < 8; ++lq) {
      copy4(rec + q6_group(h, lq, 0) + 4 * i, b.ql + 64 * h + 4 * lq);
      copy4(rec + q6_group(h, lq, 1) + 4 * i, b.ql + 64 * h + 32 + 4 * lq);
      copy4(rec + q6_group(h, lq, 2) + 4 * i, b.qh + 32 * h + 4 * lq);
    }
}

void unpack_q6_k(const uint8_t* rec, int64_t i, block_q6_k& b) {
  std::memcpy(&b.d, rec + 2 * i, 2);
  for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<int8_t>(rec[64 + 16 * j + i]);
  for (int h = 0; h < 2; ++h)
    for (int lq = 0; lq < 8; ++lq) {
      copy4(b.ql + 64 * h + 4 * lq, rec + q6_group(h, lq, 0) + 4 * i);
      copy4(b.ql + 64 * h + 32 + 4 * lq, rec + q6_group(h, lq, 1) + 4 * i);
      copy4(b.qh + 32 * h + 4 * lq, rec + q6_group(h, lq, 2) + 4 * i);
    }
}

// The k-quant panel layouts: block type, record size, one row's block
// into / out of a record, and the scalar dot of a block with 256 q8 codes
// times the activation scale dx (as the SIMD kernels compute it).
template <class Block, size_t Record>
struct layout_k4 {
  using block = Block;
  static constexpr size_t record = Record;
  static void pack(const block& b, int64_t i, uint8_t* rec) { pack_k4(b, i, rec); }
  static void unpack(const uint8_t* rec, int64_t i, block& b) { unpack_k4(rec, i, b); }
  static float dot(const block& blk, const int8_t* q, float dx) {
    int isum = 0, msum = 0;
    for (int j = 0; j < 8; ++j) {
      uint8_t sc, mn;
      k4_scale_min(blk.scales, j, &sc, &mn);
      int dot = 0, qsum = 0;
      for (int l = 0; l < 32; ++l) {
        const uint8_t byte = blk.qs[32 * (j / 2) + l];
        int code = j % 2 == 0 ? byte & 0xf : byte >> 4;
        if constexpr (std::is_same_v<Block, block_q5_k>) code |= ((blk.qh[l] >> j) & 1) << 4;
        dot += code * q[32 * j + l];
        qsum += q[32 * j + l];
      }
      isum += sc * dot;
      msum += mn * qsum;
    }
    return dx * (fp16_to_fp32(blk.d) * static_cast<float>(isum) - fp16_to_fp32(blk.dmin) * static_cast<float>(msum));
  }
};

using layout_q4_k = layout_k4<block_q4_k, packed_record_q4_k>;
using layout_q5_k = layout_k4<block_q5_k, packed_record_q5_k>;

struct layout_q6_k {
  using block = block_q6_k;
  static constexpr size_t record = packed_record_q6_k;
  static void pack(const block& b, int64_t i, uint8_t* rec) { pack_q6_k(b, i, rec); }
  static void unpack(const uint8_t* rec, int64_t i, block& b) { unpack_q6_k(rec, i, b); }
  static float dot(const block& blk, const int8_t* q, float dx) {
    int isum = 0;
    for (int e = 0; e < 256; ++e) {
      const int half = e / 128, l = e % 128, c = l / 32, li = l % 32;
      const uint8_t ql = blk.ql[half * 64 + (c & 1) * 32 + li];
      const int lo = c < 2 ? (ql & 0xf) : (ql >> 4);
      const int hi = (blk.qh[half * 32 + li] >> (2 * c)) & 3;
      isum += blk.scales[e / 16] * (((lo | (hi << 4)) - 32) * q[e]);
    }
    return dx * fp16_to_fp32(blk.d) * static_cast<float>(isum);
  }
};

template <class L>
void pack_panel(const weight_view& w, int64_t first_row, uint8_t* panel) {
  const int64_t nb = w.cols / 256;
  for (int64_t i = 0; i < panel_rows && first_row + i < w.rows; ++i) {
    const uint8_t* row = static_cast<const uint8_t*>(w.data) + static_cast<size_t>(first_row + i) * w.row_bytes;
    for (int64_t b = 0; b < nb; ++b) {
      typename L::block blk;
      std::memcpy(&blk, row + b * sizeof blk, sizeof blk);
      L::pack(blk, i, panel + static_cast<size_t>(b) * L::record);
    }
  }
}

template <class L>
void unpack_row(int64_t cols, const uint8_t* panel, int64_t i, uint8_t* out) {
  for (int64_t b = 0; b < cols / 256; ++b) {
    typename L::block blk;
    L::unpack(panel + static_cast<size_t>(b) * L::record, i, blk);
    std::memcpy(out + b * sizeof blk, &blk, sizeof blk);
  }
}

// Scalar packed kernel (x in the q8_kp layout): the reference of the layout.
template <class L>
void packed_rows_scalar(const packed_view& w, const quantized_x& x, int n_tokens, int64_t p0, int64_t p1) {
  const int64_t nb = w.cols / 256;
  for_each_packed_output(w, x, n_tokens, p0, p1, [&](const uint8_t* panel, int64_t i, const uint8_t* xt) {
    const auto* xq = reinterpret_cast<const int8_t*>(xt);
    const auto* xd = reinterpret_cast<const float*>(xt + x.d_offset);
    float sum = 0.f;
    for (int64_t b = 0; b < nb; ++b) {
      typename L::block blk;
      L::unpack(panel + static_cast<size_t>(b) * L::record, i, blk);
      sum += L::dot(blk, xq + b * 256, xd[b]);
    }
    return sum;
  });
}

}  // namespace

// Named by the rows of kernels/quant_traits.cpp.
extern const pack_panel_fn pack_panel_q4_k = pack_panel<layout_q4_k>, pack_panel_q5_k = pack_panel<layout_q5_k>,
                           pack_panel_q6_k = pack_panel<layout_q6_k>;
extern const unpack_row_fn unpack_row_q4_k = unpack_row<layout_q4_k>, unpack_row_q5_k = unpack_row<layout_q5_k>,
                           unpack_row_q6_k = unpack_row<layout_q6_k>;
extern const packed_rows_fn packed_scalar_q4_k = packed_rows_scalar<layout_q4_k>,
                            packed_scalar_q5_k = packed_rows_scalar<layout_q5_k>,
                            packed_scalar_q6_k = packed_rows_scalar<layout_q6_k>;

}  // namespace cortex::kernels
