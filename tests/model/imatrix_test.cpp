// Reading llama.cpp's importance matrices (model/imatrix.hpp): the files
// llama-imatrix wrote (tests/data/imatrix), and broken ones, each refused
// with an error that names what is wrong.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf.hpp"
#include "gguf/gguf_writer.hpp"
#include "model/imatrix.hpp"
#include "tests/support/golden.hpp"
#include "tests/support/temp_dir.hpp"

namespace cortex::quantize {
namespace {

using testing::temp_dir;

std::string data_file(const std::string& name) { return std::string(CORTEX_SOURCE_DIR) + "/tests/data/imatrix/" + name; }

TEST(imatrix, reads_llama_imatrix_gguf) {
  auto im = read_imatrix(data_file("qllama-imatrix.gguf"));
  ASSERT_TRUE(im) << im.error().message;
  EXPECT_FALSE(im->legacy);
  EXPECT_EQ(im->chunk_count, 4u);
  ASSERT_EQ(im->datasets.size(), 1u);
  EXPECT_EQ(im->datasets[0], "calib.txt");
  ASSERT_EQ(im->weights.size(), 14u);
  // qllama: d256, ff512; ffn_down's input is the 512-wide hidden state.
  EXPECT_EQ(im->weights.at("blk.0.attn_q.weight").size(), 256u);
  EXPECT_EQ(im->weights.at("blk.1.ffn_down.weight").size(), 512u);
  for (const auto& [name, w] : im->weights) {
    for (float v : w) {
      ASSERT_TRUE(std::isfinite(v) && v >= 0) << name;
    }
  }
}

// The same run written in both formats: the legacy file stores each mean
// times its call count, so the weights agree to rounding.
TEST(imatrix, legacy_dat_gives_the_weights_of_the_gguf) {
  auto gguf = read_imatrix(data_file("qllama-imatrix.gguf"));
  auto dat = read_imatrix(data_file("qllama-imatrix.dat"));
  ASSERT_TRUE(gguf) << gguf.error().message;
  ASSERT_TRUE(dat) << dat.error().message;
  EXPECT_TRUE(dat->legacy);
  EXPECT_EQ(dat->chunk_count, 4u);
  ASSERT_EQ(dat->weights.size(), gguf->weights.size());
  for (const auto& [name, w] : gguf->weights) {
    ASSERT_EQ(dat->weights.count(name), 1u) << name;
    const auto& v = dat->weights.at(name);
    ASSERT_EQ(v.size(), w.size()) << name;
    for (size_t i = 0; i < w.size(); ++i) ASSERT_NEAR(v[i], w[i], 1e-5 * std::fabs(w[i]) + 1e-30) << name << " column " << i;
  }
}

TEST(imatrix, experts_get_their_own_weights) {
  CORTEX_NEEDS_REFERENCE_DATA();
  auto im = read_imatrix(data_file("qwen3moe-imatrix.gguf"));
  ASSERT_TRUE(im) << im.error().message;
  auto src = gguf::file::open(testing::shared_dir() + "/golden/arch/qwen3moe-f32.gguf");
  ASSERT_TRUE(src) << src.error().message;
  const gguf::tensor_info* t = (*src)->find_tensor("blk.0.ffn_down_exps.weight");
  ASSERT_NE(t, nullptr);
  const auto& w = im->weights.at("blk.0.ffn_down_exps.weight");
  ASSERT_EQ(static_cast<int64_t>(w.size()), t->ne[0] * t->ne[2]) << "columns x experts";
  // Experts saw different tokens, so their weights differ.
  EXPECT_FALSE(std::equal(w.begin(), w.begin() + t->ne[0], w.begin() + t->ne[0]));
}

// A GGUF importance matrix of one tensor "blk.0.attn_q.weight" with
// n_mat blocks of 4 columns; `edit` may change anything before it is
// written.
struct fake_imatrix {
  std::vector<float> sums{1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> counts{2, 4};
  ggml_type sums_type = ggml_type::f32;
  bool with_counts = true, with_sums = true, with_metadata = true;

  std::string write(const temp_dir& dir) const {
    gguf::writer w;
    if (with_metadata) {
      w.set_string("general.type", "imatrix");
      w.set_string_array("imatrix.datasets", {"text.txt"});
      w.set_u32("imatrix.chunk_count", 3);
      w.set_u32("imatrix.chunk_size", 512);
    }
    const int64_t n_mat = static_cast<int64_t>(counts.size());
    auto bytes = [](const std::vector<float>& v) {
      std::vector<uint8_t> b(v.size() * sizeof(float));
      std::memcpy(b.data(), v.data(), b.size());
      return b;
    };
    if (with_sums) {
      const int64_t n_sums = static_cast<int64_t>(sums.size());
      if (sums_type == ggml_type::f32) {
        // [n_cols, n_mat] as llama-imatrix writes it, or flat where that
        // does not divide.
        std::vector<int64_t> ne = n_sums % n_mat == 0 ? std::vector<int64_t>{n_sums / n_mat, n_mat} : std::vector<int64_t>{n_sums};
        w.add_tensor("blk.0.attn_q.weight.in_sum2", ggml_type::f32, ne, bytes(sums));
      } else {
        w.add_tensor("blk.0.attn_q.weight.in_sum2", ggml_type::f16, {static_cast<int64_t>(sums.size())}, std::vector<uint8_t>(2 * sums.size()));
      }
    }
    if (with_counts) w.add_tensor("blk.0.attn_q.weight.counts", ggml_type::f32, {1, n_mat}, bytes(counts));
    const std::string path = dir.file("im.gguf");
    EXPECT_TRUE(w.write(path));
    return path;
  }
};

// The error of reading f's file, or "" if it reads.
std::string read_error(const fake_imatrix& f) {
  temp_dir dir;
  auto im = read_imatrix(f.write(dir));
  return im ? std::string() : im.error().message;
}

TEST(imatrix, weights_are_sums_over_counts_per_expert) {
  temp_dir dir;
  fake_imatrix f;
  f.counts = {2, 0.6f};  // rounded to 1, as llama-quantize does
  auto im = read_imatrix(f.write(dir));
  ASSERT_TRUE(im) << im.error().message;
  const std::vector<float> expect{0.5f, 1, 1.5f, 2, 5, 6, 7, 8};
  EXPECT_EQ(im->weights.at("blk.0.attn_q.weight"), expect);
  EXPECT_EQ(im->chunk_count, 3u);
}

TEST(imatrix, an_expert_no_token_reached_gets_weights_of_one) {
  temp_dir dir;
  fake_imatrix f;
  f.counts = {0, 4};
  auto im = read_imatrix(f.write(dir));
  ASSERT_TRUE(im) << im.error().message;
  const std::vector<float> expect{1, 1, 1, 1, 1.25f, 1.5f, 1.75f, 2};
  EXPECT_EQ(im->weights.at("blk.0.attn_q.weight"), expect);
}

TEST(imatrix, zero_counts_everywhere_are_an_error) {
  fake_imatrix f;
  f.counts = {0, 0};
  const std::string e = read_error(f);
  EXPECT_NE(e.find("blk.0.attn_q.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("zero counts"), std::string::npos) << e;
}

TEST(imatrix, sums_without_counts_and_counts_without_sums_are_errors) {
  fake_imatrix no_counts;
  no_counts.with_counts = false;
  std::string e = read_error(no_counts);
  EXPECT_NE(e.find("blk.0.attn_q.weight has .in_sum2 but no .counts"), std::string::npos) << e;
  fake_imatrix no_sums;
  no_sums.with_sums = false;
  e = read_error(no_sums);
  EXPECT_NE(e.find("blk.0.attn_q.weight has .counts but no .in_sum2"), std::string::npos) << e;
}

TEST(imatrix, sizes_that_do_not_divide_into_experts_are_an_error) {
  fake_imatrix f;
  f.counts = {1, 1, 1};  // 8 sums for 3 experts
  const std::string e = read_error(f);
  EXPECT_NE(e.find("8 sums for 3 counts"), std::string::npos) << e;
}

TEST(imatrix, a_tensor_that_is_not_f32_is_an_error) {
  fake_imatrix f;
  f.sums_type = ggml_type::f16;
  const std::string e = read_error(f);
  EXPECT_NE(e.find("must be F32"), std::string::npos) << e;
}

TEST(imatrix, non_finite_or_negative_values_are_errors) {
  for (float bad : {std::nanf(""), INFINITY, -1.0f}) {
    fake_imatrix sums;
    sums.sums[5] = bad;
    std::string e = read_error(sums);
    EXPECT_NE(e.find("sum of squares"), std::string::npos) << bad << ": " << e;
    EXPECT_NE(e.find("column 5"), std::string::npos) << e;
    fake_imatrix counts;
    counts.counts[1] = bad;
    e = read_error(counts);
    EXPECT_NE(e.find("count"), std::string::npos) << bad << ": " << e;
    EXPECT_NE(e.find("matrix 1"), std::string::npos) << e;
  }
}

TEST(imatrix, missing_metadata_is_an_error) {
  fake_imatrix f;
  f.with_metadata = false;
  const std::string e = read_error(f);
  EXPECT_NE(e.find("imatrix.datasets"), std::string::npos) << e;
}

TEST(imatrix, a_model_file_is_not_an_importance_matrix) {
  temp_dir dir;
  // A GGUF with the metadata but no .in_sum2 tensors: a model given by mistake.
  gguf::writer w;
  w.set_string_array("imatrix.datasets", {"x"});
  w.set_u32("imatrix.chunk_count", 1);
  w.set_u32("imatrix.chunk_size", 1);
  w.add_tensor("token_embd.weight", ggml_type::f32, {4, 2}, std::vector<uint8_t>(32));
  ASSERT_TRUE(w.write(dir.file("model.gguf")));
  auto im = read_imatrix(dir.file("model.gguf"));
  ASSERT_FALSE(im);
  EXPECT_NE(im.error().message.find("not an importance matrix"), std::string::npos) << im.error().message;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Truncations of both formats at many points, and random bytes: every one
// is an error (or, cut after the last weight, all of them), never a crash.
TEST(imatrix, truncated_and_garbage_files_are_errors) {
  temp_dir dir;
  for (const char* name : {"qllama-imatrix.gguf", "qllama-imatrix.dat"}) {
    const std::string whole = testing::read_file(data_file(name));
    ASSERT_GT(whole.size(), 1000u);
    auto full = read_imatrix(data_file(name));
    ASSERT_TRUE(full) << full.error().message;
    for (size_t cut : {size_t{0}, size_t{3}, size_t{4}, size_t{10}, size_t{100}, whole.size() / 2, whole.size() - 40, whole.size() - 1}) {
      write_bytes(dir.file("cut"), whole.substr(0, cut));
      auto im = read_imatrix(dir.file("cut"));
      if (im) {
        // Only what carries no weights may be cut (the legacy trailer, the
        // GGUF's padding after its last tensor): never partial data.
        EXPECT_GT(cut, whole.size() - 20) << name;
        EXPECT_EQ(im->weights, full->weights) << name << " cut at " << cut;
      } else {
        EXPECT_FALSE(im.error().message.empty());
      }
    }
  }
  std::mt19937 rng(26);
  for (int i = 0; i < 20; ++i) {
    std::string junk(static_cast<size_t>(1 + rng() % 4096), '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    if (i % 2 == 0) junk.replace(0, 4, "GGUF");
    write_bytes(dir.file("junk"), junk);
    auto im = read_imatrix(dir.file("junk"));
    EXPECT_FALSE(im) << "junk " << i;
  }
}

TEST(imatrix, a_missing_file_is_an_error_naming_it) {
  auto im = read_imatrix("/nonexistent/x.imatrix");
  ASSERT_FALSE(im);
  EXPECT_NE(im.error().message.find("/nonexistent/x.imatrix"), std::string::npos);
}

}  // namespace
}  // namespace cortex::quantize
