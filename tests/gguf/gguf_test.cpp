// GGUF reader: round trip through our writer, every metadata type, and
// hostile files (truncated at every point, bytes flipped in the header and
// tensor table) that must give errors, never crashes or out-of-bounds reads.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <limits>
#include <random>

#include "kernels/fp16.hpp"
#include "gguf/gguf.hpp"
#include "gguf/gguf_writer.hpp"
#include "tests/support/golden.hpp"

namespace cortex::gguf {
namespace {

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

writer sample_writer() {
  writer w;
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.block_count", 2);
  w.set_i32("test.negative", -5);
  w.set_u64("test.big", 1ull << 40);
  w.set_f32("test.float", 0.25f);
  w.set_bool("test.flag", true);
  w.set_string_array("tokenizer.ggml.tokens", {"a", "bb", "", "\xe2\x96\x81x"});
  w.set_f32_array("tokenizer.ggml.scores", {0.5f, -1.0f, 2.0f, 3.0f});
  w.set_i32_array("tokenizer.ggml.token_type", {1, 2, 3, 6});
  w.add_tensor("a.weight", ggml_type::f32, {4, 2}, f32_bytes({1, 2, 3, 4, 5, 6, 7, 8}));
  std::vector<uint8_t> half(64 * 2);
  for (int i = 0; i < 64; ++i) {
    uint16_t h = fp32_to_fp16(static_cast<float>(i));
    std::memcpy(half.data() + 2 * i, &h, 2);
  }
  w.add_tensor("b.weight", ggml_type::f16, {64}, half);
  return w;
}

TEST(gguf_reader, round_trip_every_value_type) {
  auto image = sample_writer().build();
  auto f = file::parse(image.data(), image.size(), "sample");
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ((*f)->version(), 3u);
  EXPECT_EQ((*f)->get_string("general.architecture"), std::optional<std::string_view>("llama"));
  EXPECT_EQ((*f)->get_uint("llama.block_count"), std::optional<uint64_t>(2));
  EXPECT_EQ((*f)->get_int("test.negative"), std::optional<int64_t>(-5));
  EXPECT_FALSE((*f)->get_uint("test.negative").has_value()) << "a negative value is no unsigned";
  EXPECT_EQ((*f)->get_uint("test.big"), std::optional<uint64_t>(1ull << 40));
  EXPECT_EQ((*f)->get_float("test.float"), std::optional<double>(0.25));
  EXPECT_EQ((*f)->get_bool("test.flag"), std::optional<bool>(true));
  EXPECT_FALSE((*f)->get_string("llama.block_count").has_value()) << "type mismatch must not convert";
  auto* toks = (*f)->get_string_array("tokenizer.ggml.tokens");
  ASSERT_NE(toks, nullptr);
  ASSERT_EQ(toks->size(), 4u);
  EXPECT_EQ((*toks)[1], "bb");
  EXPECT_EQ((*toks)[2], "");
  EXPECT_EQ((*f)->get_f32_array("tokenizer.ggml.scores"), std::optional<std::vector<float>>({0.5f, -1.0f, 2.0f, 3.0f}));
  EXPECT_EQ((*f)->get_i32_array("tokenizer.ggml.token_type"), std::optional<std::vector<int32_t>>({1, 2, 3, 6}));
  auto* a = (*f)->find_tensor("a.weight");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->ne[0], 4);
  EXPECT_EQ(a->ne[1], 2);
  EXPECT_EQ(a->n_bytes, 32u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->data) % 32, reinterpret_cast<uintptr_t>(image.data()) % 32) << "data aligned to 32";
  float v[8];
  std::memcpy(v, a->data, 32);
  EXPECT_EQ(v[7], 8.0f);
  auto* b = (*f)->find_tensor("b.weight");
  ASSERT_NE(b, nullptr);
  uint16_t h;
  std::memcpy(&h, b->data + 2 * 63, 2);
  EXPECT_EQ(fp16_to_fp32(h), 63.0f);
}

TEST(gguf_reader, opens_the_shared_models) {
  CORTEX_NEEDS_REFERENCE_DATA();
  for (const char* name : {"stories260K.gguf", "stories260K-q8_0.gguf", "tiny-llama-q4_k_m.gguf", "tiny-qwen2-f32.gguf"}) {
    auto f = file::open(testing::model_path(name));
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_FALSE((*f)->tensors().empty());
    EXPECT_TRUE((*f)->get_string("general.architecture").has_value());
  }
}

// Releasing a tensor's pages (after a forward pass repacked it) only drops
// them from the resident set: the bytes read afterwards are the file's.
TEST(gguf_reader, released_pages_read_back_the_same_bytes) {
  auto f = file::open(testing::model_path("stories260K.gguf"));
  ASSERT_TRUE(f) << f.error().message;
  const auto* t = (*f)->find_tensor("token_embd.weight");
  ASSERT_NE(t, nullptr);
  ASSERT_GT(t->n_bytes, 3u * 4096) << "spans whole pages";
  const std::vector<uint8_t> before(t->data, t->data + t->n_bytes);
  (*f)->release_pages(t->data, t->n_bytes);
  (*f)->release_pages((*f)->tensors().back().data, 1 << 20);  // past the mapping's end: ignored
  EXPECT_EQ(std::vector<uint8_t>(t->data, t->data + t->n_bytes), before);
}

void expect_error_containing(const std::vector<uint8_t>& image, const std::string& needle, errc code = errc::malformed) {
  auto f = file::parse(image.data(), image.size(), "broken");
  ASSERT_FALSE(f) << "expected an error mentioning '" << needle << "'";
  EXPECT_NE(f.error().message.find(needle), std::string::npos) << f.error().message;
  EXPECT_EQ(f.error().code, code) << f.error().message;
}

TEST(gguf_reader, named_errors) {
  auto image = sample_writer().build();
  auto bad = image;
  bad[0] = 'X';
  expect_error_containing(bad, "bad magic");
  bad = image;
  bad[4] = 7;
  expect_error_containing(bad, "unsupported GGUF version 7", errc::unsupported);
  expect_error_containing(std::vector<uint8_t>(image.begin(), image.begin() + 10), "truncated");
  // Truncating the data section: the last tensor runs past the end.
  expect_error_containing(std::vector<uint8_t>(image.begin(), image.end() - 64), "past the end");

  writer w;
  w.add_tensor("t", static_cast<ggml_type>(99), {32}, std::vector<uint8_t>(32));
  expect_error_containing(w.build(), "unknown tensor type 99", errc::unsupported);
  writer w2;
  w2.add_tensor("q", ggml_type::q8_0, {48}, std::vector<uint8_t>(51));
  expect_error_containing(w2.build(), "not a multiple of the q8_0 block size");

  auto missing = file::open("/nonexistent/model.gguf");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("cannot open"), std::string::npos);
  EXPECT_EQ(missing.error().code, errc::invalid_param);
}

// An integer array read from floats that int32 cannot hold (found by
// tests/fuzz/fuzz_gguf: casting them was undefined behaviour) is no integer
// array; floats that fit convert by truncation, and the float read is as stored.
TEST(gguf_reader, i32_array_rejects_floats_out_of_range) {
  writer w;
  w.set_f32_array("big", {1.0f, 3.0e9f});
  w.set_f32_array("negative", {-1.0e38f});
  w.set_f32_array("nan", {std::numeric_limits<float>::quiet_NaN()});
  w.set_f32_array("fits", {-2147483648.0f, 2.75f, -2.75f});
  auto image = w.build();
  auto f = file::parse(image.data(), image.size(), "floats");
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_FALSE((*f)->get_i32_array("big"));
  EXPECT_FALSE((*f)->get_i32_array("negative"));
  EXPECT_FALSE((*f)->get_i32_array("nan"));
  EXPECT_EQ((*f)->get_i32_array("fits"), (std::vector<int32_t>{INT32_MIN, 2, -2}));
  EXPECT_EQ((*f)->get_f32_array("big"), (std::vector<float>{1.0f, 3.0e9f}));
}

// Every prefix of a valid file either parses (then every tensor is inside
// it) or gives an error.
TEST(gguf_reader, truncation_at_every_point_never_crashes) {
  auto image = sample_writer().build();
  int errors = 0;
  for (size_t n = 0; n < image.size(); ++n) {
    std::vector<uint8_t> part(image.begin(), image.begin() + static_cast<long>(n));
    auto f = file::parse(part.data(), part.size(), "truncated");
    if (!f) {
      ++errors;
      EXPECT_FALSE(f.error().message.empty());
      EXPECT_FALSE(f.error().is_ok());
      continue;
    }
    for (auto& t : (*f)->tensors()) EXPECT_LE(t.data + t.n_bytes, part.data() + part.size());
  }
  EXPECT_GT(errors, static_cast<int>(image.size()) - 40) << "nearly every truncation must be detected";
}

// Random bytes flipped in the header, metadata and tensor table: errors or
// a consistent file, never a crash (run under ASan/valgrind to see reads).
TEST(gguf_reader, flipped_bytes_never_crash) {
  auto image = sample_writer().build();
  const auto clean = file::parse(image.data(), image.size(), "clean");
  ASSERT_TRUE(clean);
  const size_t header_end = static_cast<size_t>((*clean)->tensors()[0].data - image.data());
  std::mt19937 rng(42);
  int errors = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    auto bad = image;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) bad[rng() % header_end] = static_cast<uint8_t>(rng());
    auto f = file::parse(bad.data(), bad.size(), "fuzzed");
    if (!f) { ++errors; continue; }
    for (auto& t : (*f)->tensors()) {
      EXPECT_GE(t.data, bad.data());
      EXPECT_LE(t.data + t.n_bytes, bad.data() + bad.size());
    }
  }
  EXPECT_GT(errors, 1000);
}

TEST(gguf_reader, real_model_truncated_gives_errors) {
  CORTEX_NEEDS_REFERENCE_DATA();
  std::ifstream in(testing::model_path("stories260K-q8_0.gguf"), std::ios::binary);
  std::vector<uint8_t> image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(image.size(), 1000u);
  std::mt19937 rng(7);
  for (int iter = 0; iter < 300; ++iter) {
    const size_t n = rng() % image.size();
    std::vector<uint8_t> part(image.begin(), image.begin() + static_cast<long>(n));
    auto f = file::parse(part.data(), part.size(), "truncated");
    EXPECT_FALSE(f) << "a truncated model at " << n << " of " << image.size() << " bytes must be rejected";
  }
}

}  // namespace
}  // namespace cortex::gguf
