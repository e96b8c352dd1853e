#include "kernels/matmul.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "kernels/cpu_features.hpp"
#include "kernels/fp16.hpp"
#include "kernels/quant_traits.hpp"

namespace cortex::kernels {

namespace {

constexpr size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

// Round half to even, as llama.cpp's nearest_int and cvtps2dq do.
// REQUIRES: |f| < 2^22.
inline int nearest_int(float f) {
  const float shifted = f + 12582912.f;
  int32_t i;
  std::memcpy(&i, &shifted, 4);
  return (i & 0x007fffff) - 0x00400000;
}

struct x_layout {
  size_t stride = 0, d_offset = 0, aux_offset = 0;
};

x_layout layout_for(x_format f, int64_t cols) {
  x_layout l;
  if (f == x_format::q8_32 || f == x_format::q8_1) {
    const size_t nbp = round_up(static_cast<size_t>(cols / 32), 2);
    l.d_offset = nbp * 32;
    l.aux_offset = nbp * 64;
    l.stride = round_up(nbp * 96, 64);
  } else if (f == x_format::q8_256) {
    const size_t nb = static_cast<size_t>(cols / 256);
    l.d_offset = nb * 256;
    l.aux_offset = round_up(l.d_offset + nb * 4, 32);
    l.stride = round_up(l.aux_offset + nb * 32, 64);
  } else {
    l.stride = round_up(static_cast<size_t>(cols) * 4, 64);
  }
  return l;
}

// x (cols,) -> q8_32 layout at out (llama.cpp's quantize_row_q8_0 on x86).
using quantize_q8_32_fn = float (*)(const float*, int8_t*, int*);

void quantize_q8_32(const float* x, int64_t cols, int offset, const x_layout& l, uint8_t* out, quantize_q8_32_fn qfn) {
  const int64_t nb = cols / 32;
  const int64_t nbp = static_cast<int64_t>(round_up(static_cast<size_t>(nb), 2));
  auto* qs = reinterpret_cast<int8_t*>(out);
  auto* dxv = reinterpret_cast<float*>(out + l.d_offset);
  auto* cxv = reinterpret_cast<float*>(out + l.aux_offset);
  for (int64_t b = 0; b < nb; ++b) {
    int sum = 0;
    const float d_stored = qfn(x + b * 32, qs + b * 32, &sum);
    for (int j = 0; j < 8; ++j) {
      dxv[b * 8 + j] = d_stored;
      cxv[b * 8 + j] = 0.f;
    }
    cxv[b * 8] = -static_cast<float>(offset) * static_cast<float>(sum) * d_stored;
  }
  for (int64_t b = nb; b < nbp; ++b) {
    std::memset(qs + b * 32, 0, 32);
    for (int j = 0; j < 8; ++j) dxv[b * 8 + j] = cxv[b * 8 + j] = 0.f;
  }
}

// s of a q8_1 block: f16(d * sum(q)) with d = amax / 127 before its f16
// rounding, as llama.cpp's quantize_row_q8_1 on x86 (AVX2) computes it.
float q8_1_block_sum(const float* xb, int sum) {
  float amax = 0.f;
  for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(xb[j]));
  return fp16_to_fp32(fp32_to_fp16(amax / 127.f * static_cast<float>(sum)));
}

// x (cols,) -> q8_1 layout at out (llama.cpp's quantize_row_q8_1 on x86).
void quantize_q8_1(const float* x, int64_t cols, const x_layout& l, uint8_t* out, quantize_q8_32_fn qfn) {
  const int64_t nb = cols / 32;
  const int64_t nbp = static_cast<int64_t>(round_up(static_cast<size_t>(nb), 2));
  auto* qs = reinterpret_cast<int8_t*>(out);
  auto* dxv = reinterpret_cast<float*>(out + l.d_offset);
  auto* sxv = reinterpret_cast<float*>(out + l.aux_offset);
  for (int64_t b = 0; b < nb; ++b) {
    int sum = 0;
    const float d_stored = qfn(x + b * 32, qs + b * 32, &sum);
    for (int j = 0; j < 8; ++j) {
      dxv[b * 8 + j] = d_stored;
      sxv[b * 8 + j] = 0.f;
    }
    sxv[b * 8] = q8_1_block_sum(x + b * 32, sum);
  }
  for (int64_t b = nb; b < nbp; ++b) {
    std::memset(qs + b * 32, 0, 32);
    for (int j = 0; j < 8; ++j) dxv[b * 8 + j] = sxv[b * 8 + j] = 0.f;
  }
}

// x (cols,) -> q8_256 layout at out (llama.cpp's quantize_row_q8_K).
void quantize_q8_256(const float* x, int64_t cols, const x_layout& l, uint8_t* out) {
  const int64_t nb = cols / 256;
  auto* qs = reinterpret_cast<int8_t*>(out);
  auto* d = reinterpret_cast<float*>(out + l.d_offset);
  auto* bsums = reinterpret_cast<int16_t*>(out + l.aux_offset);
  for (int64_t b = 0; b < nb; ++b) {
    int8_t* q = qs + b * 256;
    d[b] = quantize_block_q8_256(x + b * 256, q);
    for (int g = 0; g < 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += q[g * 16 + j];
      bsums[b * 16 + g] = static_cast<int16_t>(sum);
    }
  }
}

// f16 / bf16 weights: llama.cpp's vec_dot_type for them is the weight type
// itself, i.e. it rounds activations to f16 / bf16 (nearest even) before
// the dot. We do the same (the rounded values stay stored as f32), so f16
// models give llama.cpp's numbers, not slightly more precise ones.
void quantize_token(const quant_traits& tr, int64_t cols, const float* x, const x_layout& l, uint8_t* out,
                    const activation_kernels& ks) {
  auto* y = reinterpret_cast<float*>(out);
  switch (tr.activation) {
    case x_format::q8_32: quantize_q8_32(x, cols, tr.zero_point, l, out, ks.quantize_q8_32); break;
    case x_format::q8_1: quantize_q8_1(x, cols, l, out, ks.quantize_q8_32); break;
    case x_format::q8_256: quantize_q8_256(x, cols, l, out); break;
    case x_format::f16: ks.round_to_f16(x, y, cols); break;
    case x_format::bf16:
      for (int64_t k = 0; k < cols; ++k) y[k] = bf16_to_fp32(fp32_to_bf16(x[k]));
      break;
    case x_format::f32:  // not prepared: the kernels read x itself
    case x_format::none: break;
  }
}

matmul_rows_fn pick(const quant_traits& tr, isa i) { return kernel_for_isa(tr.matmul, static_cast<int>(i)); }

// Activation kernels by isa; the isa ones are only called where active_isa()
// (never above the CPU's) selects them.
const activation_kernels activation_by_isa[n_kernel_isas] = {
    {quantize_block_q8_32, round_to_f16, to_f16},
    {quantize_block_q8_32, round_to_f16_avx2, to_f16_avx2},
    {quantize_block_q8_32_avx512, round_to_f16_avx2, to_f16_avx2},
    {quantize_block_q8_32_avx512, round_to_f16_avx2, to_f16_avx2},  // amx: avx512's
};

struct quantize_job {
  const quant_traits* tr;
  const weight_view* w;
  const float* x;
  const x_layout* l;
  uint8_t* out;
};

struct rows_job {
  matmul_rows_fn fn;
  const weight_view* w;
  quantized_x qx;
  int n_tokens;
  float* y;
  int64_t rows_per_task;
  int n_row_tasks;
  int tokens_per_task;
};

void run_rows_task(void* ctx, int task, int /*thread*/) {
  const auto& j = *static_cast<const rows_job*>(ctx);
  const int row_task = task % j.n_row_tasks;
  const int token_task = task / j.n_row_tasks;
  const int64_t r0 = row_task * j.rows_per_task;
  const int64_t r1 = r0 + j.rows_per_task < j.w->rows ? r0 + j.rows_per_task : j.w->rows;
  const int t0 = token_task * j.tokens_per_task;
  const int t1 = t0 + j.tokens_per_task < j.n_tokens ? t0 + j.tokens_per_task : j.n_tokens;
  quantized_x qx = j.qx;
  qx.data += static_cast<size_t>(t0) * qx.stride;
  j.fn(*j.w, qx, t1 - t0, j.y + static_cast<int64_t>(t0) * j.w->rows, r0, r1);
}

}  // namespace

const activation_kernels& active_activation_kernels() { return activation_by_isa[static_cast<int>(active_isa())]; }

float quantize_block_q8_32(const float* xb, int8_t* q, int* sum) {
  float amax = 0.f;
  for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(xb[j]));
  const float d = amax / 127.f;
  const float id = amax != 0.f ? 127.f / amax : 0.f;
  int s = 0;
  for (int j = 0; j < 32; ++j) {
    const int v = nearest_int(xb[j] * id);
    q[j] = static_cast<int8_t>(v);
    s += v;
  }
  *sum = s;
  return fp16_to_fp32(fp32_to_fp16(d));
}

float quantize_block_q8_256(const float* xb, int8_t* q) {
  float amax = 0.f, max = 0.f;
  for (int j = 0; j < 256; ++j) {
    const float ax = std::fabs(xb[j]);
    if (ax > amax) {
      amax = ax;
      max = xb[j];
    }
  }
  if (amax == 0.f) {
    std::memset(q, 0, 256);
    return 0.f;
  }
  const float iscale = -127.f / max;
  for (int j = 0; j < 256; ++j) {
    const int v = nearest_int(iscale * xb[j]);
    q[j] = static_cast<int8_t>(v < 127 ? v : 127);
  }
  return 1.f / iscale;
}

void round_to_f16(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(fp32_to_fp16(x[i]));
}

void to_f16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

matmul_scratch::~matmul_scratch() { std::free(data_); }

uint8_t* matmul_scratch::reserve(size_t n) {
  if (n > capacity_) {
    std::free(data_);
    capacity_ = round_up(n, 4096);
    data_ = static_cast<uint8_t*>(std::aligned_alloc(64, capacity_));
  }
  return data_;
}

bool matmul_supports(ggml_type type) {
  const quant_traits* r = find_quant_traits(static_cast<uint32_t>(type));
  return r != nullptr && r->matmul[0] != nullptr;
}

size_t matmul_row_bytes(ggml_type type, int64_t cols) { return matmul_supports(type) ? row_size(type, cols) : 0; }

void matmul(const weight_view& w, const float* x, int n_tokens, float* y, thread_pool& pool,
            matmul_scratch& scratch) {
  const quant_traits& tr = quant_traits_of(w.type);
  const matmul_rows_fn fn = pick(tr, active_isa());
  const x_format f = tr.activation;
  rows_job job{fn, &w, {}, n_tokens, y, 0, 0, 0};
  size_t x_bytes_per_token = static_cast<size_t>(w.cols) * 4;
  if (f == x_format::f32) {
    job.qx = {reinterpret_cast<const uint8_t*>(x), x_bytes_per_token, 0, 0};
  } else {
    const x_layout l = layout_for(f, w.cols);
    uint8_t* buf = scratch.reserve(l.stride * static_cast<size_t>(n_tokens));
    quantize_job qj{&tr, &w, x, &l, buf};
    auto quantize_one = [](void* ctx, int t, int) {
      const auto& q = *static_cast<const quantize_job*>(ctx);
      quantize_token(*q.tr, q.w->cols, q.x + static_cast<int64_t>(t) * q.w->cols, *q.l,
                     q.out + static_cast<size_t>(t) * q.l->stride, active_activation_kernels());
    };
    if (n_tokens == 1) {
      quantize_one(&qj, 0, 0);
    } else {
      pool.parallel_for(n_tokens, quantize_one, &qj);
    }
    job.qx = {buf, l.stride, l.d_offset, l.aux_offset};
    x_bytes_per_token = l.stride;
  }

  // Rows in contiguous chunks, several per thread so a preempted thread's
  // share is picked up by the others; chunks are multiples of 4 rows (tiles).
  // Tokens in blocks whose activations fit comfortably in L2 (~256 KiB).
  const int n_threads = pool.size();
  int tokens_per_task = n_tokens;
  if (n_tokens > 1) {
    const size_t fit = (size_t{256} << 10) / x_bytes_per_token;
    const int block = fit < 12 ? 12 : static_cast<int>(fit / 12 * 12);
    tokens_per_task = n_tokens < block ? n_tokens : block;
  }
  const int n_token_tasks = (n_tokens + tokens_per_task - 1) / tokens_per_task;
  const int64_t target_row_tasks = n_threads == 1 ? 1 : static_cast<int64_t>(n_threads) * 4;
  int64_t rows_per_task = (w.rows + target_row_tasks - 1) / target_row_tasks;
  rows_per_task = static_cast<int64_t>(round_up(static_cast<size_t>(rows_per_task < 16 ? 16 : rows_per_task), 4));
  job.rows_per_task = rows_per_task;
  job.n_row_tasks = static_cast<int>((w.rows + rows_per_task - 1) / rows_per_task);
  job.tokens_per_task = tokens_per_task;
  pool.parallel_for(job.n_row_tasks * n_token_tasks, run_rows_task, &job);
}

void matmul_reference(const weight_view& w, const float* x, int n_tokens, float* y) {
  const quant_traits& tr = quant_traits_of(w.type);
  const matmul_rows_fn fn = pick(tr, isa::scalar);
  const x_format f = tr.activation;
  if (f == x_format::f32) {
    fn(w, {reinterpret_cast<const uint8_t*>(x), static_cast<size_t>(w.cols) * 4, 0, 0}, n_tokens, y, 0, w.rows);
    return;
  }
  const x_layout l = layout_for(f, w.cols);
  matmul_scratch scratch;
  uint8_t* buf = scratch.reserve(l.stride * static_cast<size_t>(n_tokens));
  for (int t = 0; t < n_tokens; ++t) {
    quantize_token(tr, w.cols, x + static_cast<int64_t>(t) * w.cols, l, buf + static_cast<size_t>(t) * l.stride,
                   activation_by_isa[0]);
  }
  fn(w, {buf, l.stride, l.d_offset, l.aux_offset}, n_tokens, y, 0, w.rows);
}

}  // namespace cortex::kernels
