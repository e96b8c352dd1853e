// The trait table: every row is consistent with itself and with the public
// queries built on it, so a new row that forgets a field fails here.
#include "kernels/quant_traits.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernels/matmul.hpp"
#include "kernels/matmul_packed.hpp"
#include "kernels/quant.hpp"

namespace cortex {
namespace {

using kernels::packed_x_format;
using kernels::x_format;

std::vector<const quant_traits*> all_rows() {
  std::vector<const quant_traits*> rows;
  for (uint32_t id = 0; id < 64; ++id) {
    if (const quant_traits* r = find_quant_traits(id)) rows.push_back(r);
  }
  return rows;
}

TEST(quant_traits, rows_are_found_by_their_own_id) {
  const auto rows = all_rows();
  EXPECT_EQ(rows.size(), 33u);  // every ggml_type enumerator
  for (const quant_traits* r : rows) {
    EXPECT_EQ(&quant_traits_of(r->type), r) << r->name;
    EXPECT_GT(r->block_size, 0) << r->name;
    EXPECT_GT(r->type_size, 0u) << r->name;
  }
  EXPECT_EQ(find_quant_traits(4), nullptr);
  EXPECT_EQ(find_quant_traits(31), nullptr);  // removed from llama.cpp
  EXPECT_NE(find_quant_traits(39), nullptr);  // mxfp4: ids past 31 are found
  EXPECT_EQ(find_quant_traits(64), nullptr);
  EXPECT_EQ(find_quant_traits(0xffffffffu), nullptr);
}

TEST(quant_traits, activation_format_fits_the_block_and_zero_point) {
  for (const quant_traits* r : all_rows()) {
    SCOPED_TRACE(r->name);
    // A matmul needs a scalar kernel and a format, and the file must be readable.
    EXPECT_EQ(r->matmul[0] != nullptr, r->activation != x_format::none);
    if (r->activation != x_format::none) {
      EXPECT_NE(r->dequantize, nullptr);
    }
    if (r->quantize != nullptr) {
      EXPECT_NE(r->dequantize, nullptr);
    }
    switch (r->activation) {
      case x_format::q8_32:
        // Weight codes are unsigned with the zero point subtracted: 4-bit
        // codes around 8, 5-bit around 16, int8 offset to uint8 by 128.
        EXPECT_EQ(r->block_size, 32);
        EXPECT_TRUE(r->zero_point == 8 || r->zero_point == 16 || r->zero_point == 128) << r->zero_point;
        break;
      case x_format::q8_1:
        // The min is added through the activation's block sums, not a zero point.
        EXPECT_EQ(r->block_size, 32);
        EXPECT_EQ(r->zero_point, 0);
        break;
      case x_format::q8_256: EXPECT_EQ(r->block_size, 256); break;
      case x_format::none: break;
      default: EXPECT_EQ(r->block_size, 1); break;
    }
  }
}

// The public queries against facts of the formats (llama.cpp's block
// layouts, and the type set the README documents), not against the rows.
TEST(quant_traits, public_queries_give_the_documented_support_and_row_sizes) {
  using t = ggml_type;
  for (t type : {t::f32, t::f16, t::bf16, t::q8_0, t::q4_0, t::q4_1, t::q5_0, t::q5_1, t::q2_k, t::q3_k, t::q4_k,
                 t::q5_k, t::q6_k, t::iq4_nl, t::iq4_xs, t::mxfp4, t::iq1_s, t::iq1_m, t::iq2_xxs, t::iq2_xs,
                 t::iq2_s, t::iq3_xxs, t::iq3_s}) {
    EXPECT_TRUE(kernels::matmul_supports(type)) << type_traits(type).name;
  }
  EXPECT_FALSE(kernels::matmul_supports(t::q8_1)) << "q8_1 is only made at run time";
  EXPECT_FALSE(kernels::matmul_supports(t::q8_k)) << "q8_k is only made at run time";
  for (t type : {t::f32, t::f16, t::bf16, t::q4_0, t::q4_1, t::q5_0, t::q5_1, t::q8_0, t::q2_k, t::q3_k, t::q4_k,
                 t::q5_k, t::q6_k, t::iq4_nl, t::iq4_xs, t::mxfp4, t::iq1_s, t::iq1_m, t::iq2_xxs, t::iq2_xs,
                 t::iq2_s, t::iq3_xxs, t::iq3_s}) {
    EXPECT_TRUE(dequantize_supported(type)) << type_traits(type).name;
  }
  for (t type : {t::iq1_s, t::iq1_m, t::iq2_xxs, t::iq2_xs, t::tq1_0, t::tq2_0, t::nvfp4}) {
    EXPECT_FALSE(quantize_supported(type)) << type_traits(type).name;
  }
  // llama-quantize writes iq2_xxs, iq2_xs, iq1_s and iq1_m only with
  // importance weights.
  for (t type : {t::iq2_xxs, t::iq2_xs, t::iq1_s, t::iq1_m}) {
    EXPECT_TRUE(quantize_uses_weights(type)) << type_traits(type).name;
  }
  for (t type : {t::tq1_0, t::tq2_0, t::nvfp4}) {
    EXPECT_FALSE(dequantize_supported(type)) << type_traits(type).name;
    EXPECT_FALSE(kernels::matmul_supports(type)) << type_traits(type).name;
  }
  for (t type : {t::f16, t::bf16, t::q8_0, t::q4_0, t::q4_1, t::q5_1, t::q4_k, t::q5_k, t::q6_k, t::iq4_nl, t::iq4_xs,
                 t::mxfp4, t::iq2_s, t::iq3_xxs, t::iq3_s}) {
    EXPECT_TRUE(quantize_supported(type)) << type_traits(type).name;
  }
  EXPECT_FALSE(dequantize_supported(t::i32));
  // 512 values: f32 4 B each; f16 2; q8_0 16 blocks of 34 B; q4_0 16 of 18;
  // q4_1 16 of 20; q5_1 16 of 24; q2_K 2 super-blocks of 84; q3_K 2 of 110;
  // q4_K 2 of 144; q6_K 2 of 210; iq4_nl 16 of 18; iq4_xs 2 of 136; mxfp4
  // 16 of 17; iq2_xxs 2 of 66; iq3_s 2 of 110; iq1_m 2 of 56.
  EXPECT_EQ(kernels::matmul_row_bytes(t::f32, 512), 2048u);
  EXPECT_EQ(kernels::matmul_row_bytes(t::f16, 512), 1024u);
  EXPECT_EQ(kernels::matmul_row_bytes(t::q8_0, 512), 544u);
  EXPECT_EQ(kernels::matmul_row_bytes(t::q4_0, 512), 288u);
  EXPECT_EQ(kernels::matmul_row_bytes(t::q4_1, 512), 320u);
  EXPECT_EQ(kernels::matmul_row_bytes(t::q5_1, 512), 384u);
  EXPECT_EQ(kernels::matmul_row_bytes(t::q2_k, 512), 168u);
  EXPECT_EQ(kernels::matmul_row_bytes(t::q3_k, 512), 220u);
  EXPECT_EQ(kernels::matmul_row_bytes(t::q4_k, 512), 288u);
  EXPECT_EQ(kernels::matmul_row_bytes(t::q6_k, 512), 420u);
  EXPECT_EQ(kernels::matmul_row_bytes(t::iq4_nl, 512), 288u);
  EXPECT_EQ(kernels::matmul_row_bytes(t::iq4_xs, 512), 272u);
  EXPECT_EQ(kernels::matmul_row_bytes(t::mxfp4, 512), 272u);
  EXPECT_EQ(kernels::matmul_row_bytes(t::iq2_xxs, 512), 132u);
  EXPECT_EQ(kernels::matmul_row_bytes(t::iq3_s, 512), 220u);
  EXPECT_EQ(kernels::matmul_row_bytes(t::iq1_m, 512), 112u);
}

TEST(quant_traits, packed_layouts_round_trip_their_rows) {
  std::mt19937 rng(15);
  std::uniform_int_distribution<int> byte(0, 255);
  int n_packed = 0;
  for (const quant_traits* r : all_rows()) {
    if (r->packed == nullptr) continue;
    ++n_packed;
    SCOPED_TRACE(r->name);
    const kernels::packed_layout& l = *r->packed;
    EXPECT_NE(l.kernels[0], nullptr);
    EXPECT_EQ(l.x == packed_x_format::q8_p, r->activation == x_format::q8_32);
    EXPECT_EQ(l.x == packed_x_format::q8_kp, r->activation == x_format::q8_256);
    EXPECT_EQ(l.record_bytes % 64, 0u);
    EXPECT_EQ(l.cols_per_record % r->block_size, 0);
    // 16 rows of random blocks (any bytes are a valid block to move) pack
    // into one panel and unpack to the same bytes.
    const int64_t cols = 2 * l.cols_per_record, rows = kernels::packed_panel_rows;
    const size_t row_bytes = row_size(r->type, cols);
    std::vector<uint8_t> src(row_bytes * rows), out(row_bytes);
    for (uint8_t& b : src) b = static_cast<uint8_t>(byte(rng));
    std::vector<uint8_t> panel(2 * l.record_bytes, 0);
    l.pack_panel({r->type, rows, cols, src.data(), row_bytes}, 0, panel.data());
    for (int64_t i = 0; i < rows; ++i) {
      l.unpack_row(cols, panel.data(), i, out.data());
      ASSERT_EQ(0, std::memcmp(out.data(), src.data() + i * row_bytes, row_bytes)) << "row " << i;
    }
    EXPECT_TRUE(kernels::packed_supported(r->type));
  }
  EXPECT_EQ(n_packed, 8);  // q4_0, q5_0, q8_0, iq4_nl, mxfp4, q4_K, q5_K, q6_K
}

void fn_a() {}
void fn_b() {}

TEST(quant_traits, kernel_for_isa_falls_back_to_the_isa_below) {
  using fn = void (*)();
  const fn only_scalar[kernels::n_kernel_isas] = {fn_a, nullptr, nullptr};
  const fn up_to_avx2[kernels::n_kernel_isas] = {fn_a, fn_b, nullptr};
  EXPECT_EQ(kernel_for_isa(only_scalar, 2), fn_a);
  EXPECT_EQ(kernel_for_isa(up_to_avx2, 2), fn_b);
  EXPECT_EQ(kernel_for_isa(up_to_avx2, 0), fn_a);
}

}  // namespace
}  // namespace cortex
