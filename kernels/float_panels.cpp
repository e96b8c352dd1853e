#include "kernels/float_panels.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "kernels/cpu_features.hpp"
#include "kernels/fp16.hpp"
#include "kernels/matmul_kernels.hpp"
#include "kernels/thread_pool.hpp"

namespace cortex::kernels {

namespace {

constexpr int panel_rows = 16;

// Weight (r, c) of a bf16 or f32 w as a float (f16 panels keep the bits).
float wide_weight_at(const weight_view& w, int64_t r, int64_t c) {
  const uint8_t* row = static_cast<const uint8_t*>(w.data) + static_cast<size_t>(r) * w.row_bytes;
  if (w.type == ggml_type::bf16) return bf16_to_fp32(reinterpret_cast<const uint16_t*>(row)[c]);
  return reinterpret_cast<const float*>(row)[c];
}

// x rounded as llama.cpp rounds activations for the weight type, into
// scratch (f32 weights: x itself).
const float* rounded_activations(const float_panels& w, const float* x, int n_tokens, thread_pool& pool,
                                 matmul_scratch& scratch) {
  if (w.type() == ggml_type::f32) return x;
  const int64_t n = static_cast<int64_t>(n_tokens) * w.cols();
  auto* xr = reinterpret_cast<float*>(scratch.reserve(static_cast<size_t>(n) * sizeof(float)));
  const bool half = w.half();
  const int n_parts = n_tokens < 64 ? 1 : pool.size();
  pool.parallel_for(n_parts, [&](int part, int) {
    const int64_t i0 = n * part / n_parts, i1 = n * (part + 1) / n_parts;
    if (half) {
      active_activation_kernels().round_to_f16(x + i0, xr + i0, i1 - i0);
    } else {
      for (int64_t i = i0; i < i1; ++i) xr[i] = bf16_to_fp32(fp32_to_bf16(x[i]));
    }
  });
  return xr;
}

}  // namespace

void float_panels::free_deleter::operator()(uint8_t* p) const { std::free(p); }

bool float_panels_supported(ggml_type type) {
  const bool float_type = type == ggml_type::f32 || type == ggml_type::f16 || type == ggml_type::bf16;
  return float_type && active_isa() >= isa::avx512;
}

float_panels pack_float_panels(const weight_view& w, thread_pool& pool) {
  float_panels p;
  p.type_ = w.type;
  p.rows_ = w.rows;
  p.cols_ = w.cols;
  const size_t bytes = (p.bytes() + 63) / 64 * 64;
  p.data_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, bytes)));
  const int64_t n_panels = p.n_panels();
  const bool half = p.half();
  const int n_tasks = static_cast<int>(std::min<int64_t>(n_panels, 4 * pool.size()));
  pool.parallel_for(n_tasks, [&](int task, int) {
    for (int64_t q = n_panels * task / n_tasks; q < n_panels * (task + 1) / n_tasks; ++q) {
      uint8_t* panel = p.data_.get() + static_cast<size_t>(q) * p.panel_bytes();
      for (int64_t c = 0; c < w.cols; ++c) {
        for (int i = 0; i < panel_rows; ++i) {
          const int64_t r = q * panel_rows + i;
          const size_t at = static_cast<size_t>(c) * panel_rows + i;
          if (half) {
            const uint16_t h = r < w.rows ? reinterpret_cast<const uint16_t*>(
                                                static_cast<const uint8_t*>(w.data) + static_cast<size_t>(r) * w.row_bytes)[c]
                                          : uint16_t{0};
            std::memcpy(panel + at * 2, &h, 2);
          } else {
            const float v = r < w.rows ? wide_weight_at(w, r, c) : 0.0f;
            std::memcpy(panel + at * 4, &v, 4);
          }
        }
      }
    }
  });
  return p;
}

void matmul_float_panels(const float_panels& w, const float* x, int n_tokens, float* y, thread_pool& pool,
                         matmul_scratch& scratch) {
  if (!float_panels_supported(w.type())) {  // packed, then CORTEX_ISA lowered: the same bits, slowly
    matmul_float_panels_reference(w, x, n_tokens, y);
    return;
  }
  const float* xr = rounded_activations(w, x, n_tokens, pool, scratch);
  // Tasks: blocks of panel pairs x chunks of tokens whose rounded
  // activations fit in about 128 KiB (L2, beside the pair's columns), the
  // panel blocks of one chunk next to each other.
  constexpr int tile_tokens = 12;
  const int64_t per_token = std::max<int64_t>(1, w.cols() * 4);
  const int chunk = static_cast<int>(std::max<int64_t>(tile_tokens, (int64_t{128} << 10) / per_token / tile_tokens * tile_tokens));
  const int n_chunks = (n_tokens + chunk - 1) / chunk;
  const int64_t n_panels = w.n_panels();
  const int64_t target_blocks = pool.size() == 1 ? 1 : 4 * pool.size();
  int64_t block = (n_panels + target_blocks - 1) / target_blocks;
  block += block % 2;  // whole pairs
  const int64_t n_blocks = (n_panels + block - 1) / block;
  pool.parallel_for(static_cast<int>(n_blocks * n_chunks), [&](int task, int) {
    const int64_t b = task % n_blocks;
    const int c = static_cast<int>(task / n_blocks);
    const int t0 = c * chunk, t1 = std::min(n_tokens, t0 + chunk);
    const int64_t p0 = b * block, p1 = std::min(n_panels, p0 + block);
    float_panels_rows_avx512(w, xr, t0, t1, p0, p1, y, w.rows());
  });
}

void matmul_float_panels_reference(const float_panels& w, const float* x, int n_tokens, float* y) {
  const int64_t cols = w.cols();
  for (int t = 0; t < n_tokens; ++t) {
    for (int64_t r = 0; r < w.rows(); ++r) {
      const uint8_t* panel = w.data() + static_cast<size_t>(r / panel_rows) * w.panel_bytes();
      float acc = 0.0f;
      for (int64_t c = 0; c < cols; ++c) {
        const size_t at = static_cast<size_t>(c) * panel_rows + static_cast<size_t>(r % panel_rows);
        float wv;
        if (w.half()) {
          uint16_t h;
          std::memcpy(&h, panel + at * 2, 2);
          wv = fp16_to_fp32(h);
        } else {
          std::memcpy(&wv, panel + at * 4, 4);
        }
        float xv = x[static_cast<size_t>(t) * cols + c];
        if (w.type() == ggml_type::f16) xv = fp16_to_fp32(fp32_to_fp16(xv));
        if (w.type() == ggml_type::bf16) xv = bf16_to_fp32(fp32_to_bf16(xv));
        acc = std::fma(wv, xv, acc);
      }
      y[static_cast<size_t>(t) * w.rows() + r] = acc;
    }
  }
}

}  // namespace cortex::kernels
