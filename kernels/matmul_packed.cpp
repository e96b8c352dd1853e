#include "kernels/matmul_packed.hpp"

#include <cstdlib>
#include <cstring>

#include "kernels/amx_choice.hpp"
#include "kernels/cpu_features.hpp"
#include "kernels/fp16.hpp"
#include "kernels/matmul_packed_k.hpp"
#include "kernels/quant_tables.hpp"
#include "kernels/quant_traits.hpp"

namespace cortex::kernels {

namespace {

constexpr size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }
constexpr int64_t panel_rows = packed_panel_rows;
constexpr int64_t record_header = 64;

// The q8_p panel layouts (kernels/matmul_kernels.hpp): 4 (q4_0, q5_0) or 8
// (q8_0) 64-byte groups of the source block's qs per 32-column block; q8_0's
// int8 codes are stored offset to uint8 (xor 0x80); q5_0 adds one group of
// its fifth bits. iq4_nl and mxfp4 keep q4_0's nibbles: a nibble is an index
// into the type's table (lut), read as lut + zero point. mxfp4's E8M0 scale
// is stored in the scale slot as the top half (bf16) of its float value
// 2^(e - 128), which that half holds exactly for every e.
struct layout_q4_0 {
  using block = block_q4_0;
  static constexpr int n_groups = 4;
  static constexpr uint32_t flip = 0;
  static constexpr bool fifth_bits = false;
  static constexpr const int8_t* lut = nullptr;
  static constexpr bool e8m0 = false;
};
struct layout_q5_0 : layout_q4_0 {
  using block = block_q5_0;
  static constexpr bool fifth_bits = true;
};
struct layout_q8_0 : layout_q4_0 {
  using block = block_q8_0;
  static constexpr int n_groups = 8;
  static constexpr uint32_t flip = 0x80808080u;
};
struct layout_iq4_nl : layout_q4_0 {
  using block = block_iq4_nl;
  static constexpr const int8_t* lut = kvalues_iq4nl;
};
struct layout_mxfp4 : layout_q4_0 {
  using block = block_mxfp4;
  static constexpr const int8_t* lut = kvalues_mxfp4;
  static constexpr bool e8m0 = true;
};

// A block's scale as its panel slot holds it (f16, or bf16 for E8M0), and back.
template <class L>
uint16_t scale_slot(const typename L::block& b) {
  if constexpr (L::e8m0) {
    return static_cast<uint16_t>(fp32_to_bits(e8m0_half_to_fp32(b.e)) >> 16);
  } else {
    uint16_t h;
    std::memcpy(&h, &b.d, 2);
    return h;
  }
}
template <class L>
void scale_from_slot(uint16_t h, typename L::block& b) {
  if constexpr (L::e8m0) {
    const uint32_t bits = static_cast<uint32_t>(h) << 16;
    b.e = bits == 0x00200000u ? 0 : bits == 0x00400000u ? 1 : static_cast<uint8_t>((bits >> 23) + 1);
  } else {
    std::memcpy(&b.d, &h, 2);
  }
}
template <class L>
float slot_to_fp32(uint16_t h) {
  if constexpr (L::e8m0) return bf16_to_fp32(h);
  return fp16_to_fp32(h);
}

template <class L>
constexpr int64_t block_code_bytes = 64 * (L::n_groups + (L::fifth_bits ? 1 : 0));
template <class L>
constexpr int64_t record_bytes = record_header + 2 * block_code_bytes<L>;
template <class L>
constexpr int n_code_bytes = 4 * L::n_groups;  // qs bytes of one source block

// Byte offset of (block b, row i of the panel, code byte k of the source
// block's qs) inside a panel, and of the block's scale for row i.
template <class L>
size_t code_offset(int64_t b, int64_t i, int k) {
  return static_cast<size_t>((b / 2) * record_bytes<L> + record_header + (b % 2) * block_code_bytes<L> +
                             (k / 4) * 64 + i * 4 + k % 4);
}
template <class L>
size_t scale_offset(int64_t b, int64_t i) {
  return static_cast<size_t>((b / 2) * record_bytes<L> + (b % 2) * 32 + i * 2);
}

// q5_0's fifth bits as its packed group holds them: byte k (0..3) of a row's
// lane, bit 2g = the bit of code 4g + k, bit 2g + 1 = that of code 16 + 4g + k
// (g = 0..3), so the code groups g take their bits by one shift each.
uint32_t fifth_bits_to_lane(uint32_t qh) {
  uint32_t lane = 0;
  for (int k = 0; k < 4; ++k) {
    for (int g = 0; g < 4; ++g) {
      lane |= ((qh >> (4 * g + k)) & 1u) << (8 * k + 2 * g);
      lane |= ((qh >> (16 + 4 * g + k)) & 1u) << (8 * k + 2 * g + 1);
    }
  }
  return lane;
}

uint32_t fifth_bits_from_lane(uint32_t lane) {
  uint32_t qh = 0;
  for (int k = 0; k < 4; ++k) {
    for (int g = 0; g < 4; ++g) {
      qh |= ((lane >> (8 * k + 2 * g)) & 1u) << (4 * g + k);
      qh |= ((lane >> (8 * k + 2 * g + 1)) & 1u) << (16 + 4 * g + k);
    }
  }
  return qh;
}

// Byte offset of row i's fifth-bit lane of block b (q5_0).
template <class L>
size_t fifth_bits_offset(int64_t b, int64_t i) {
  return code_offset<L>(b, i, 0) + 64 * L::n_groups;
}

// Codes move as 4-byte groups (one lane of one zmm group).
template <class L>
void pack_panel(const weight_view& w, int64_t first_row, uint8_t* panel) {
  const int64_t nb = w.cols / 32;
  for (int64_t i = 0; i < panel_rows && first_row + i < w.rows; ++i) {
    const auto* row = static_cast<const uint8_t*>(w.data) + static_cast<size_t>(first_row + i) * w.row_bytes;
    for (int64_t b = 0; b < nb; ++b) {
      const auto* src = reinterpret_cast<const typename L::block*>(row) + b;
      const uint16_t h = scale_slot<L>(*src);
      std::memcpy(panel + scale_offset<L>(b, i), &h, 2);
      uint8_t* dst = panel + code_offset<L>(b, i, 0);
      for (int g = 0; g < L::n_groups; ++g) {
        uint32_t v;
        std::memcpy(&v, reinterpret_cast<const uint8_t*>(src->qs) + 4 * g, 4);
        v ^= L::flip;
        std::memcpy(dst + 64 * g, &v, 4);
      }
      if constexpr (L::fifth_bits) {
        uint32_t qh;
        std::memcpy(&qh, src->qh, 4);
        const uint32_t lane = fifth_bits_to_lane(qh);
        std::memcpy(panel + fifth_bits_offset<L>(b, i), &lane, 4);
      }
    }
  }
}

template <class L>
void unpack_row(int64_t cols, const uint8_t* panel, int64_t i, uint8_t* out) {
  const auto flip = static_cast<uint8_t>(L::flip);
  for (int64_t b = 0; b < cols / 32; ++b) {
    auto* dst = reinterpret_cast<typename L::block*>(out) + b;
    uint16_t h;
    std::memcpy(&h, panel + scale_offset<L>(b, i), 2);
    scale_from_slot<L>(h, *dst);
    auto* qs = reinterpret_cast<uint8_t*>(dst->qs);
    for (int k = 0; k < n_code_bytes<L>; ++k) qs[k] = panel[code_offset<L>(b, i, k)] ^ flip;
    if constexpr (L::fifth_bits) {
      uint32_t lane;
      std::memcpy(&lane, panel + fifth_bits_offset<L>(b, i), 4);
      const uint32_t qh = fifth_bits_from_lane(lane);
      std::memcpy(dst->qh, &qh, 4);
    }
  }
}

// Scalar packed kernel: the same integer math as the SIMD ones, for isas
// without a packed kernel and as the reference of the layout in tests.
template <class L>
void packed_rows_scalar(const packed_view& w, const quantized_x& x, int n_tokens, int64_t p0, int64_t p1) {
  const int64_t nb = w.cols / 32;
  constexpr bool q4 = L::n_groups == 4;
  const int zp = quant_traits_of(w.type).zero_point;  // LUT codes are read offset by it
  for_each_packed_output(w, x, n_tokens, p0, p1, [&](const uint8_t* panel, int64_t i, const uint8_t* xt) {
    const auto* xq = reinterpret_cast<const int8_t*>(xt);
    const auto* xd = reinterpret_cast<const float*>(xt + x.d_offset);
    const auto* xc = reinterpret_cast<const int32_t*>(xt + x.aux_offset);
    float sum = 0.f;
    for (int64_t b = 0; b < nb; ++b) {
      int32_t dot = xc[b];
      uint32_t qh = 0;
      if constexpr (L::fifth_bits) {
        uint32_t lane;
        std::memcpy(&lane, panel + fifth_bits_offset<L>(b, i), 4);
        qh = fifth_bits_from_lane(lane);
      }
      for (int k = 0; k < n_code_bytes<L>; ++k) {
        const uint8_t c = panel[code_offset<L>(b, i, k)];
        if (q4) {
          int lo = (c & 0x0f) | static_cast<int>(((qh >> k) & 1u) << 4);
          int hi = (c >> 4) | static_cast<int>(((qh >> (16 + k)) & 1u) << 4);
          if constexpr (L::lut != nullptr) {
            lo = L::lut[lo] + zp;
            hi = L::lut[hi] + zp;
          }
          dot += lo * xq[b * 32 + k] + hi * xq[b * 32 + 16 + k];
        } else {
          dot += c * xq[b * 32 + k];
        }
      }
      uint16_t h;
      std::memcpy(&h, panel + scale_offset<L>(b, i), 2);
      sum += static_cast<float>(dot) * (slot_to_fp32<L>(h) * xd[b]);
    }
    return sum;
  });
}

const packed_layout& layout_of(ggml_type t) { return *quant_traits_of(t).packed; }
bool is_k(ggml_type t) { return layout_of(t).x == packed_x_format::q8_kp; }

// Bytes of one panel: whole records, rounded up to 64.
size_t panel_bytes_for(ggml_type t, int64_t cols) {
  const packed_layout& l = layout_of(t);
  const auto n_records = static_cast<size_t>((cols + l.cols_per_record - 1) / l.cols_per_record);
  return round_up(n_records * l.record_bytes, 64);
}

// The kernel of a step of n_tokens on isa i: under amx, the tile kernel
// (real or emulated, as active_amx_mode() says) from amx_min_tokens tokens
// on where the type has one, avx512's otherwise.
packed_rows_fn pick_packed(ggml_type t, isa i, int n_tokens) {
  const packed_layout& l = layout_of(t);
  if (i == isa::amx) {
    const amx_mode mode = active_amx_mode();
    if (n_tokens >= amx_min_tokens && mode == amx_mode::emulated && l.amx_emulated != nullptr) return l.amx_emulated;
    if (n_tokens < amx_min_tokens || mode != amx_mode::hardware) i = isa::avx512;
  }
  return kernel_for_isa(l.kernels, static_cast<int>(i));
}

struct matmul_job {
  packed_rows_fn fn;
  packed_view view;
  quantized_x qx;
  int n_tokens;
  int64_t panels_per_task;
  int n_panel_tasks;
  int tokens_per_task;
};

void quantize_token_k(int64_t cols, const float* xt, const packed_x_layout& l, uint8_t* out) {
  auto* qs = reinterpret_cast<int8_t*>(out);
  auto* d = reinterpret_cast<float*>(out + l.d_offset);
  for (int64_t b = 0; b < cols / 256; ++b) {
    int8_t* q = qs + b * 256;
    d[b] = quantize_block_q8_256(xt + b * 256, q);
    uint8_t* aux = out + l.aux_offset + static_cast<size_t>(b) * 128;
    auto* bsum32 = reinterpret_cast<int16_t*>(aux);
    auto* corr16 = reinterpret_cast<int32_t*>(aux + 64);
    for (int g = 0; g < 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += q[16 * g + j];
      corr16[g] = -32 * sum;
      if (g % 2 == 0) bsum32[g / 2] = static_cast<int16_t>(sum);
      else bsum32[g / 2] = static_cast<int16_t>(bsum32[g / 2] + sum);
    }
  }
}

void run_task(void* ctx, int task, int /*thread*/) {
  const auto& j = *static_cast<const matmul_job*>(ctx);
  const int panel_task = task % j.n_panel_tasks;
  const int token_task = task / j.n_panel_tasks;
  const int64_t p0 = panel_task * j.panels_per_task;
  const int64_t p1 = p0 + j.panels_per_task < j.view.n_panels ? p0 + j.panels_per_task : j.view.n_panels;
  const int t0 = token_task * j.tokens_per_task;
  const int t1 = t0 + j.tokens_per_task < j.n_tokens ? t0 + j.tokens_per_task : j.n_tokens;
  // Shift x and every segment's y to the task's first token.
  packed_segment segs[8];
  packed_view view = j.view;
  for (int s = 0; s < view.n_segments; ++s) {
    segs[s] = view.segments[s];
    segs[s].y += static_cast<int64_t>(t0) * segs[s].ld;
  }
  view.segments = segs;
  quantized_x qx = j.qx;
  qx.data += static_cast<size_t>(t0) * qx.stride;
  j.fn(view, qx, t1 - t0, p0, p1);
}

}  // namespace

packed_x_layout packed_x_layout_of(ggml_type t, int64_t cols) {
  if (is_k(t)) {
    const size_t nb = static_cast<size_t>(cols / 256);
    packed_x_layout l;
    l.d_offset = nb * 256;
    l.aux_offset = round_up(l.d_offset + nb * 4, 64);
    l.stride = l.aux_offset + nb * 128;
    return l;
  }
  const size_t nbp = round_up(static_cast<size_t>(cols / 32), 2);
  packed_x_layout l;
  l.d_offset = nbp * 32;
  l.aux_offset = l.d_offset + nbp * 4;
  l.stride = round_up(l.aux_offset + nbp * 4, 64);
  return l;
}

void quantize_packed_token(ggml_type t, int64_t cols, const float* xt, uint8_t* out,
                           float (*q8_32)(const float*, int8_t*, int*)) {
  const packed_x_layout l = packed_x_layout_of(t, cols);
  if (is_k(t)) {
    quantize_token_k(cols, xt, l, out);
    return;
  }
  const int64_t nb = cols / 32;
  const int zp = quant_traits_of(t).zero_point;
  auto* qs = reinterpret_cast<int8_t*>(out);
  auto* d = reinterpret_cast<float*>(out + l.d_offset);
  auto* corr = reinterpret_cast<int32_t*>(out + l.aux_offset);
  for (int64_t b = 0; b < nb; ++b) {
    int sum = 0;
    d[b] = q8_32(xt + b * 32, qs + b * 32, &sum);
    corr[b] = -zp * sum;
  }
  if (nb % 2 == 1) {
    std::memset(qs + nb * 32, 0, 32);
    d[nb] = 0.f;
    corr[nb] = 0;
  }
}

packed_dest packed_dest_of(const packed_view& w, int64_t p) {
  int s = 0;
  while (s + 1 < w.n_segments && w.segments[s + 1].panel_begin <= p) ++s;
  const packed_segment& seg = w.segments[s];
  const int64_t r0 = (p - seg.panel_begin) * panel_rows;
  return {seg.y + r0, seg.ld, seg.rows - r0 < panel_rows ? seg.rows - r0 : panel_rows};
}

// Named by the rows of kernels/quant_traits.cpp.
extern const pack_panel_fn pack_panel_q4_0 = pack_panel<layout_q4_0>, pack_panel_q5_0 = pack_panel<layout_q5_0>,
                           pack_panel_q8_0 = pack_panel<layout_q8_0>, pack_panel_iq4_nl = pack_panel<layout_iq4_nl>,
                           pack_panel_mxfp4 = pack_panel<layout_mxfp4>;
extern const unpack_row_fn unpack_row_q4_0 = unpack_row<layout_q4_0>, unpack_row_q5_0 = unpack_row<layout_q5_0>,
                           unpack_row_q8_0 = unpack_row<layout_q8_0>, unpack_row_iq4_nl = unpack_row<layout_iq4_nl>,
                           unpack_row_mxfp4 = unpack_row<layout_mxfp4>;
extern const packed_rows_fn packed_scalar_q4_0 = packed_rows_scalar<layout_q4_0>,
                            packed_scalar_q5_0 = packed_rows_scalar<layout_q5_0>,
                            packed_scalar_q8_0 = packed_rows_scalar<layout_q8_0>,
                            packed_scalar_iq4_nl = packed_rows_scalar<layout_iq4_nl>,
                            packed_scalar_mxfp4 = packed_rows_scalar<layout_mxfp4>;

void packed_matrix::free_deleter::operator()(uint8_t* p) const { std::free(p); }

bool packed_supported(ggml_type type) {
  const quant_traits* r = find_quant_traits(static_cast<uint32_t>(type));
  return r != nullptr && r->packed != nullptr;
}

bool packed_is_faster(ggml_type type) {
  if (!packed_supported(type) || active_isa() < isa::avx2) return false;
  return pick_packed(type, active_isa(), 1) != pick_packed(type, isa::scalar, 1);
}

packed_matrix pack_matrix(const weight_view* parts, int n_parts, thread_pool& pool) {
  packed_matrix m;
  m.type_ = parts[0].type;
  m.cols_ = parts[0].cols;
  m.panel_bytes_ = panel_bytes_for(m.type_, m.cols_);
  for (int s = 0; s < n_parts; ++s) {
    m.part_rows_.push_back(parts[s].rows);
    m.part_panel_begin_.push_back(m.n_panels_);
    m.n_panels_ += (parts[s].rows + panel_rows - 1) / panel_rows;
  }
  const size_t bytes = m.panel_bytes_ * static_cast<size_t>(m.n_panels_);
  m.data_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, bytes)));
  uint8_t* data = m.data_.get();
  pool.parallel_for(static_cast<int>(m.n_panels_), [&](int p, int) {
    uint8_t* panel = data + static_cast<size_t>(p) * m.panel_bytes_;
    std::memset(panel, 0, m.panel_bytes_);
    int s = 0;
    while (s + 1 < n_parts && m.part_panel_begin_[static_cast<size_t>(s) + 1] <= p) ++s;
    const int64_t first_row = (p - m.part_panel_begin_[static_cast<size_t>(s)]) * panel_rows;
    layout_of(m.type_).pack_panel(parts[s], first_row, panel);
  });
  return m;
}

void unpack_row(const packed_matrix& w, int part, int64_t row, uint8_t* out) {
  const int64_t p = w.part_panel_begin(part) + row / panel_rows;
  const int64_t i = row % panel_rows;
  const uint8_t* panel = w.data() + static_cast<size_t>(p) * w.panel_bytes();
  layout_of(w.type()).unpack_row(w.cols(), panel, i, out);
}

void matmul_packed(const packed_matrix& w, const float* x, int n_tokens, float* const* ys, thread_pool& pool,
                   matmul_scratch& scratch) {
  const activation_kernels& set = active_activation_kernels();
  matmul_job job{};
  job.fn = pick_packed(w.type(), active_isa(), n_tokens);
  packed_segment segs[8];
  const int n_segs = w.n_parts() < 8 ? w.n_parts() : 8;
  for (int s = 0; s < n_segs; ++s) segs[s] = {w.part_panel_begin(s), w.part_rows(s), ys[s], w.part_rows(s)};
  job.view = {w.type(), w.cols(), w.n_panels(), w.data(), w.panel_bytes(), segs, n_segs};

  const packed_x_layout l = packed_x_layout_of(w.type(), w.cols());
  uint8_t* buf = scratch.reserve(l.stride * static_cast<size_t>(n_tokens));
  auto quantize_one = [&](int t, int) {
    quantize_packed_token(w.type(), w.cols(), x + static_cast<int64_t>(t) * w.cols(), buf + static_cast<size_t>(t) * l.stride,
                          set.quantize_q8_32);
  };
  if (n_tokens == 1) {
    quantize_one(0, 0);
  } else {
    pool.parallel_for(n_tokens, quantize_one);
  }
  job.qx = {buf, l.stride, l.d_offset, l.aux_offset};
  job.n_tokens = n_tokens;

  // Panels in chunks of 4 (the decode tile), several chunks per thread so a
  // preempted thread's share is picked up by the others. Tokens in blocks
  // whose activations stay in L2 while a panel pair streams past them.
  const int n_threads = pool.size();
  int tokens_per_task = n_tokens;
  if (n_tokens > 1) {
    const size_t fit = (size_t{256} << 10) / l.stride;
    const int block = fit < 16 ? 16 : static_cast<int>(fit / 4 * 4);
    tokens_per_task = n_tokens < block ? n_tokens : block;
  }
  const int n_token_tasks = (n_tokens + tokens_per_task - 1) / tokens_per_task;
  const int64_t target = n_threads == 1 ? 1 : static_cast<int64_t>(n_threads) * 4;
  int64_t per_task = (w.n_panels() + target - 1) / target;
  per_task = static_cast<int64_t>(round_up(static_cast<size_t>(per_task < 4 ? 4 : per_task), 4));
  job.panels_per_task = per_task;
  job.n_panel_tasks = static_cast<int>((w.n_panels() + per_task - 1) / per_task);
  job.tokens_per_task = tokens_per_task;
  pool.parallel_for(job.n_panel_tasks * n_token_tasks, run_task, &job);
}

}  // namespace cortex::kernels
