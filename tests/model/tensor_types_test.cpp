// Every GGML tensor type id, as the type of a model's matrices: the model
// either loads and runs a step, or is refused at load with an error that
// names the tensor and its type. Never a crash (a Q3_K file once loaded,
// reported ready and died with SIGSEGV on the first request).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "kernels/quant.hpp"
#include "kernels/quant_traits.hpp"
#include "kernels/thread_pool.hpp"
#include "gguf/gguf_writer.hpp"
#include "model/model.hpp"
#include "model/single_sequence.hpp"
#include "model/synthetic.hpp"

namespace cortex {
namespace {

class tensor_types : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    base_ = ::testing::TempDir() + "tensor_types_base.gguf";
    const synthetic_shape* s = find_synthetic_shape("tiny");  // d256, ff 768: rows of whole 256-blocks
    ASSERT_NE(s, nullptr);
    synthetic_shape one = *s;
    one.n_layer = 1;
    ASSERT_TRUE(write_synthetic_model(one, "f32", 7, base_, 1));
  }

  // Rewrites the base model with every matrix of layer 0 stored as type_id:
  // quantized from the f32 weights where we have a quantizer, random bytes
  // otherwise; for an id we have no row for, the type field is patched in
  // the file so the reader meets an unknown id.
  static std::string with_matrices_as(uint32_t type_id) {
    auto f = gguf::file::open(base_);
    EXPECT_TRUE(f);
    const gguf::file& src = **f;
    gguf::writer w;
    for (const auto& [key, v] : src.metadata()) w.set_value(key, v);
    const quant_traits* q = find_quant_traits(type_id);
    const bool known = q != nullptr;
    std::mt19937 rng(type_id);
    for (const auto& t : src.tensors()) {
      const bool convert = t.name.rfind("blk.0.", 0) == 0 && t.n_dims == 2;
      std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
      const auto* data = reinterpret_cast<const float*>(t.data);
      if (!convert || !known) {
        w.add_tensor(t.name, t.type, ne, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
        continue;
      }
      const auto type = static_cast<ggml_type>(type_id);
      const size_t rb = row_size(type, t.ne[0]);
      std::vector<uint8_t> bytes(rb * static_cast<size_t>(t.ne[1]));
      for (int64_t r = 0; r < t.ne[1]; ++r) {
        uint8_t* dst = bytes.data() + rb * static_cast<size_t>(r);
        if (quantize_row(type, data + r * t.ne[0], dst, t.ne[0]) == 0) {
          for (size_t i = 0; i < rb; ++i) dst[i] = static_cast<uint8_t>(rng());
        }
      }
      w.add_tensor(t.name, type, ne, std::move(bytes));
    }
    auto image = w.build();
    if (!known) {
      // The first converted tensor's type field: after its name, n_dims and dims.
      const std::string name = "blk.0.attn_q.weight";
      auto it = std::search(image.begin(), image.end(), name.begin(), name.end());
      EXPECT_NE(it, image.end());
      const size_t at = static_cast<size_t>(it - image.begin()) + name.size() + 4 + 2 * 8;
      std::memcpy(image.data() + at, &type_id, 4);
    }
    const std::string path = ::testing::TempDir() + "tensor_types_" + std::to_string(type_id) + ".gguf";
    FILE* out = std::fopen(path.c_str(), "wb");
    EXPECT_NE(out, nullptr);
    std::fwrite(image.data(), 1, image.size(), out);
    std::fclose(out);
    return path;
  }

  static std::string base_;
};
std::string tensor_types::base_;

TEST_F(tensor_types, every_type_id_runs_or_is_refused_naming_the_tensor) {
  kernels::thread_pool pool(2);
  int n_ran = 0, n_refused = 0;
  for (uint32_t id = 0; id < 48; ++id) {
    SCOPED_TRACE("type id " + std::to_string(id));
    const std::string path = with_matrices_as(id);
    auto m = model::load(path);
    const quant_traits* q = find_quant_traits(id);
    if (!m) {
      ++n_refused;
      EXPECT_EQ(m.error().code, errc::unsupported) << m.error().message;
      EXPECT_NE(m.error().message.find("'blk.0."), std::string::npos) << "names the tensor: " << m.error().message;
      if (q != nullptr) {
        EXPECT_NE(m.error().message.find(q->name), std::string::npos) << "names the type: " << m.error().message;
        // Refused exactly when we have no matrix kernel for a known type.
        EXPECT_TRUE(q->matmul[0] == nullptr || q->dequantize == nullptr) << m.error().message;
      }
      std::remove(path.c_str());
      continue;
    }
    ASSERT_NE(q, nullptr) << "an unknown type id loaded";
    ASSERT_NE(q->matmul[0], nullptr) << "loaded without a matrix kernel";
    ++n_ran;
    single_sequence seq(**m, pool, 32, kernels::kv_type::f32);
    ASSERT_EQ(seq.feed({1, 5, 9, 200, 3}, logits_mode::all), 5);
    if (q->quantize != nullptr) {
      // Real weights (quantized from the f32 model): finite logits.
      for (int r = 0; r < 5; ++r) {
        for (int i = 0; i < (*m)->hparams().n_vocab; ++i) ASSERT_TRUE(std::isfinite(seq.logits(r)[i])) << q->name;
      }
    }
    std::remove(path.c_str());
  }
  std::printf("[ types    ] %d type ids ran, %d refused at load\n", n_ran, n_refused);
  EXPECT_GE(n_ran, 10);  // f32, f16, bf16, q8_0, q4_0, q4_K, q6_K at least
}

}  // namespace
}  // namespace cortex
