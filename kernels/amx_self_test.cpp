#include "kernels/amx_self_test.hpp"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>

#include "kernels/cpu_features.hpp"
#include "kernels/fp16.hpp"
#include "kernels/quant_traits.hpp"

namespace cortex::kernels {

namespace {

constexpr int64_t test_rows = 37;  // panels 0 and 1 full, panel 2 with 5 rows
constexpr int test_token_counts[] = {1, 2, 16, 21, 70};

struct aligned_free {
  void operator()(uint8_t* p) const { std::free(p); }
};
using aligned_bytes = std::unique_ptr<uint8_t, aligned_free>;

aligned_bytes aligned_zeroed(size_t n) {
  const size_t size = (n + 63) / 64 * 64;
  aligned_bytes p(static_cast<uint8_t*>(std::aligned_alloc(64, size)));
  std::memset(p.get(), 0, size);
  return p;
}

// Random blocks of type t: every code byte pattern, finite scales (f16 in
// +-0.02; mxfp4's E8M0 around 2^-7; q4_k / q5_k's dmin >= 0).
std::vector<uint8_t> random_rows(ggml_type t, int64_t cols, std::mt19937& rng) {
  const quant_traits& tr = quant_traits_of(t);
  const size_t block = tr.type_size;
  std::vector<uint8_t> out(static_cast<size_t>(test_rows * cols / tr.block_size) * block);
  std::uniform_int_distribution<int> byte(0, 255), e8m0(110, 130);
  std::uniform_real_distribution<float> scale(-0.02f, 0.02f);
  for (auto& b : out) b = static_cast<uint8_t>(byte(rng));
  for (size_t off = 0; off < out.size(); off += block) {
    if (t == ggml_type::mxfp4) {
      out[off] = static_cast<uint8_t>(e8m0(rng));
      continue;
    }
    const uint16_t d = fp32_to_fp16(scale(rng));
    std::memcpy(out.data() + off, &d, 2);
    if (t == ggml_type::q4_k || t == ggml_type::q5_k) {
      const uint16_t dmin = fp32_to_fp16(std::fabs(scale(rng)));
      std::memcpy(out.data() + off + 2, &dmin, 2);
    }
  }
  return out;
}

// "" or the first output where y differs from y_ref in its bits.
std::string first_difference(ggml_type t, const std::vector<float>& y, const std::vector<float>& y_ref, int n_tokens) {
  for (int tok = 0; tok < n_tokens; ++tok) {
    for (int64_t r = 0; r < test_rows; ++r) {
      const size_t i = static_cast<size_t>(tok * test_rows + r);
      if (std::memcmp(&y[i], &y_ref[i], 4) == 0) continue;
      char line[160];
      std::snprintf(line, sizeof line,
                    "%s: row %" PRId64 ", token %d of %d: 0x%08" PRIx32 " where avx512 gives 0x%08" PRIx32,
                    quant_traits_of(t).name, r, tok, n_tokens, fp32_to_bits(y[i]), fp32_to_bits(y_ref[i]));
      return line;
    }
  }
  return "";
}

std::string test_type(const amx_kernel_under_test& k, std::mt19937& rng) {
  const packed_layout& layout = *quant_traits_of(k.type).packed;
  const packed_rows_fn reference = layout.kernels[static_cast<int>(isa::avx512)];
  const int64_t cols =
      3 * layout.cols_per_record / (layout.x == packed_x_format::q8_p ? 2 : 1);  // 3 blocks / super-blocks
  const std::vector<uint8_t> bytes = random_rows(k.type, cols, rng);
  const weight_view w{k.type, test_rows, cols, bytes.data(), bytes.size() / test_rows};
  const int64_t n_panels = (test_rows + packed_panel_rows - 1) / packed_panel_rows;
  const int64_t records = (cols + layout.cols_per_record - 1) / layout.cols_per_record;
  const size_t panel_bytes = (static_cast<size_t>(records) * layout.record_bytes + 63) / 64 * 64;
  const aligned_bytes panels = aligned_zeroed(panel_bytes * static_cast<size_t>(n_panels));
  for (int64_t p = 0; p < n_panels; ++p) {
    layout.pack_panel(w, p * packed_panel_rows, panels.get() + static_cast<size_t>(p) * panel_bytes);
  }
  const packed_x_layout xl = packed_x_layout_of(k.type, cols);
  for (int n_tokens : test_token_counts) {
    std::normal_distribution<float> normal(0.f, 1.f);
    std::vector<float> x(static_cast<size_t>(n_tokens * cols));
    for (float& v : x) v = normal(rng);
    const aligned_bytes qx = aligned_zeroed(xl.stride * static_cast<size_t>(n_tokens));
    for (int tok = 0; tok < n_tokens; ++tok) {
      quantize_packed_token(k.type, cols, x.data() + tok * cols, qx.get() + static_cast<size_t>(tok) * xl.stride,
                            quantize_block_q8_32);
    }
    std::vector<float> y(static_cast<size_t>(n_tokens * test_rows), -7.f), y_ref(y);
    packed_segment seg{0, test_rows, y.data(), test_rows};
    const packed_view view{k.type, cols, n_panels, panels.get(), panel_bytes, &seg, 1};
    const quantized_x q{qx.get(), xl.stride, xl.d_offset, xl.aux_offset};
    k.kernel(view, q, n_tokens, 0, n_panels);
    seg.y = y_ref.data();
    reference(view, q, n_tokens, 0, n_panels);
    const std::string why = first_difference(k.type, y, y_ref, n_tokens);
    if (!why.empty()) return why;
  }
  return "";
}

}  // namespace

std::vector<amx_kernel_under_test> amx_kernels_of(amx_mode mode) {
  std::vector<amx_kernel_under_test> out;
  for (ggml_type t : {ggml_type::q4_0, ggml_type::q5_0, ggml_type::q8_0, ggml_type::iq4_nl, ggml_type::mxfp4,
                      ggml_type::q4_k, ggml_type::q5_k, ggml_type::q6_k}) {
    const packed_layout& l = *quant_traits_of(t).packed;
    const packed_rows_fn k = mode == amx_mode::hardware   ? l.kernels[static_cast<int>(isa::amx)]
                             : mode == amx_mode::emulated ? l.amx_emulated
                                                          : nullptr;
    if (k != nullptr) out.push_back({t, k});
  }
  return out;
}

std::string amx_self_test(const std::vector<amx_kernel_under_test>& kernels) {
  if (kernels.empty()) return "no tile kernels";
  std::mt19937 rng(2028);
  for (const amx_kernel_under_test& k : kernels) {
    const std::string why = test_type(k, rng);
    if (!why.empty()) return why;
  }
  return "";
}

}  // namespace cortex::kernels
