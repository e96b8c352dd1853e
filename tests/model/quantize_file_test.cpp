// `cortex quantize` against llama-quantize: F32 models of ../shared
// quantized to a file type must give byte for byte the file llama-quantize
// wrote from the same input (compared by SHA-256), and every refusal comes
// before anything is written.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kernels/quant.hpp"
#include "gguf/gguf.hpp"
#include "model/quantize_file.hpp"
#include "tests/support/golden.hpp"
#include "tests/support/sha256.hpp"
#include "tests/support/temp_dir.hpp"

namespace cortex::quantize {
namespace {

using testing::sha256_file;
using testing::temp_dir;

// An F32 input of ../shared and the SHA-256 of that file.
struct input_file {
  const char* path;  // under ../shared
  const char* sha256;
};

// golden/models/tiny-*: rows of 256 and 768, so every k-quant without a
// fallback; qwen2 has tied embeddings and GQA 2. golden/arch/*: rows of 64,
// so the fallbacks (Q5_0 / Q5_1 / Q8_0 / Q4_0 / IQ4_NL), with qwen3moe's and
// gpt-oss's 3-D experts, phi3's fused attn_qkv, gemma3's tied embeddings,
// qwen35's never-quantized ssm tensors. stories260K: ffn_down rows of 172
// (F16 fallback).
constexpr input_file k_tiny_llama{"golden/models/tiny-llama-f32.gguf", "c9ca21a3e39cb763e1f8eb11b08b860f05dc271352e1f57ff5d6d54e8226e449"};
constexpr input_file k_tiny_qwen2{"golden/models/tiny-qwen2-f32.gguf", "38feee996bec654f7f315dbdc800e6294349698a1a327e6d463634199663d06e"};
constexpr input_file k_arch_llama{"golden/arch/llama-f32.gguf", "8002b3323f99c21f16ccffde9068f84b6002a60be4a747e2906d04369ae219d2"};
constexpr input_file k_arch_qwen3moe{"golden/arch/qwen3moe-f32.gguf", "f1ca5db0268169f598e0c23ba39085cefcb67ca9487d59a6fc68d844e29b2201"};
constexpr input_file k_arch_phi3{"golden/arch/phi3-f32.gguf", "00396069b441827fb441667bcf76e236cb437ca42d10856d1046f5f8b291278a"};
constexpr input_file k_arch_gemma3{"golden/arch/gemma3-f32.gguf", "bf410c3017285a27b56bfc41c3ef41ff547f20e8136f4489e04868931e6c9f33"};
constexpr input_file k_arch_qwen35{"golden/arch/qwen35-f32.gguf", "a94d992e11afb901e80bfb881cfa19c5e642bfc66564a41e8f6c85b7ee969da7"};
constexpr input_file k_arch_gpt_oss{"golden/arch/gpt-oss-f32.gguf", "45d7d86e8d83a23b7958623a48c9a3ca396cdfb451d8709c62b163ba0b4a4b06"};
constexpr input_file k_qllama{"golden/arch/qllama-bf16.gguf", "5faea705c89a70ecdc608f8c398e27ca073bea37c86d772f48782f00a2f06ee0"};
constexpr input_file k_stories260k{"models/stories260K.gguf", "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d"};

struct reference_file {
  input_file input;
  const char* type;    // llama-quantize's file type name
  const char* sha256;  // of llama-quantize's output
};

// The SHA-256 of llama-quantize's outputs, recorded with llama.cpp of
// 2026-09-28 (ggml 0.25.1, commit de3ff81: the git bundle of npm
// node-llama-cpp@3.22.1, built as ../shared/docs/reference.md says, x86-64
// AVX-512) by
//   llama-quantize ../shared/IN.gguf OUT.gguf TYPE 2 && sha256sum OUT.gguf
// with no importance matrix and no other option (2 threads; the bytes do
// not depend on them). Rows whose file needs a type cortex cannot write yet
// (Q5_0: Q5_0 files and the Q4_K fallback on rows of 64) are skipped until
// its quantizer exists, and then hold it to these bytes.
const reference_file k_reference[] = {
    {k_tiny_llama, "Q4_0", "bbc59f11e7ff209235a73294f0322e91f4d33259cae6a26997048253a01c2c49"},
    {k_tiny_llama, "Q4_1", "aecee355e563cb3602711543b4b8ad9d71b7939d75c9150e13a4e4e2196dd6b0"},
    {k_tiny_llama, "Q5_0", "6d8d58fd626eb39922bb9dd1d95333aa2a08b78c81c6a1411a82e9892b84493d"},
    {k_tiny_llama, "Q5_1", "ffbf65a51c25dc3073ccbcece8d6820641d6520e0f17a5ad813d9cded822edfe"},
    {k_tiny_llama, "Q8_0", "8644935b89c1b1f5d9cf80b941b184d3d82819f4586787c2506cbc87b5270e4c"},
    {k_tiny_llama, "Q2_K", "5f363a0b96e7331116522c1aa359e3cc04a7101b8fa9acb5364b62ffcbf1e0e6"},
    {k_tiny_llama, "Q3_K_S", "513670706bfe2e4d3b6fdd88106d37fc480a8c9b4441bc436bfd98e30d5c2dc1"},
    {k_tiny_llama, "Q3_K_M", "9477afbc150ed34e71da60e8fee716b6b01c777edcec4240dec5d0bb88d88df8"},
    {k_tiny_llama, "Q3_K_L", "21a964cb3533d3ed83b58e79ed8213241fd925b197c970ffb25f02055c4abfc4"},
    {k_tiny_llama, "Q4_K_S", "76659dd5d8b536b753cd5c6a5018f76dd1a453b8def68631f613a7957052df68"},
    {k_tiny_llama, "Q4_K_M", "bd42c4fbf95a19d00bca5c29e49cbfa838f5275bf0de440f78b7973535ec0a60"},
    {k_tiny_llama, "Q5_K_S", "6c880ac201f8c6df8e2687db98a905e2388fe62c37f051e7de399c09680b63dd"},
    {k_tiny_llama, "Q5_K_M", "2c17e4ef7fec9446095411a65fd135ec953ebf1f3b37474c64991315b4df189e"},
    {k_tiny_llama, "Q6_K", "31ccb55d6ae8f9d19142b4d461eea4595271563667cb5b5bda7e48d8e21478de"},
    {k_tiny_llama, "IQ4_NL", "ab56cb76aecb42db1af5e4740c5bcdf3e84244e73f29b53b9ecce12445851a4e"},
    {k_tiny_llama, "IQ4_XS", "94f6cfa7792a323da2e2297d13cdeadf9743c02ffa2d601aabd0752ddb62121a"},
    {k_tiny_llama, "MXFP4_MOE", "b922fa341b67cb96bb1b3a37c4e0814cc175d59f555850d501418a4ba7d5dc4f"},
    {k_tiny_llama, "F16", "4e5c4927143209a66645548349ddb16d5ed57ac556b67b724b4961e9f7b08667"},
    {k_tiny_llama, "BF16", "1b84f0ea824574c6e31cd5b425a4f93c2fd91f784bdd39c41f7c9ad949957237"},
    {k_tiny_llama, "F32", "ca75af6f6c0c3e7cf231160a27fda659bfb90d959541afb56a0569c43fb930d6"},
    {k_tiny_qwen2, "Q4_K_M", "f74bbda32bdc14308b3e8a1c7b7ee3a865923ebffaeea0838e34042551ae53a8"},
    {k_tiny_qwen2, "Q8_0", "87af1cfe822f3300209f538ce66f51e5b9ff3d7dde754d7429cc0c81e95bb544"},
    {k_tiny_qwen2, "Q2_K", "de76b5c708b2481c2be1f38fce80db52bb4d190b8fe4737420dd090e2a0c17fe"},
    {k_arch_llama, "Q2_K", "fbce5e833bdc55d1c9fc7ff66ceef67e707b3f77d747ba411589e2f22939fcc3"},
    {k_arch_llama, "Q3_K_L", "0a4d1c95fc16bc6c0ceabd7abf043abd5b94cae81935469fdcd26d23c82f367a"},
    {k_arch_llama, "Q5_K_M", "5aed20f81df19053392be018af0732dcf81a6d6a8be735ae76fab7adaec69ae9"},
    {k_arch_llama, "Q6_K", "bec4ff969ca7ffac27bace12a15e39a49b551e8b5950fb99d2e7d1e6e7a09c9b"},
    {k_arch_llama, "IQ4_XS", "40050351fd6495419353a48c1856405e5d88b2d8603aac6a5ede9a87c5adb379"},
    {k_arch_llama, "IQ2_XXS", "a369c9cb9b005ad029fad6a83d98fa20476764bf9c07b5ea7492a55254bf567c"},
    {k_arch_llama, "Q4_K_M", "a58a0543a734fd87c48c673e40194ee3f4bef5a74711fac46c80553424ac65b8"},
    {k_arch_qwen3moe, "MXFP4_MOE", "3d79b786c49f96b612f6b0db2f8b54192e3e8978e92a3cd79e4bb64cdec18b6c"},
    {k_arch_qwen3moe, "Q5_K_S", "e65401a0db5f0f6823275eba3eb038d24e69263028e3d837778b4378c8006af1"},
    {k_arch_phi3, "Q5_K_M", "3366961033ef49ab9e957f7ea4a70873a96a4cee9932885c1d7bc30c4a429432"},
    {k_arch_gemma3, "Q6_K", "a034eb0ab5021807d27c16b5d14792c0ce6dddd0529445746cf29c8fb20c434f"},
    {k_arch_qwen35, "Q8_0", "a753497e83b74350dd581042ebba33d68b606b9be69de23b98bbd5a103526cbd"},
    {k_arch_gpt_oss, "MXFP4_MOE", "7aa58fa59fffed06daae58582c07265e202e067952f8a43c674e280bfc954762"},
    {k_stories260k, "Q8_0", "ff8701a45da28293b7af11a695ab33575b692e9b109a2eae6238c906c31415da"},
    // qllama-bf16: rows of 256 and 512, so IQ3_S (weights x^2) without a fallback.
    {k_qllama, "IQ3_S", "65147395772d107423b78a94ad39eb2a62b84fdd0d5183d0c54460bfecbc7ee6"},
    {k_qllama, "IQ3_M", "50f56266dd46242db744f09ef1997fff234682ee34fd315a0e359dd5be0d4190"},
    {k_stories260k, "Q4_K_M", "7f61512f1889080c73b2afd3ac7fdfe55a368e83570b20e5019829adfa734a2a"},
};

class quantize_matches_llama_quantize : public ::testing::TestWithParam<reference_file> {};

TEST_P(quantize_matches_llama_quantize, byte_for_byte) {
  const reference_file& r = GetParam();
  const std::string in = testing::shared_file(r.input.path);  // the story model: the repository's
  if (!testing::file_exists(in)) CORTEX_NEEDS_REFERENCE_DATA();
  ASSERT_EQ(sha256_file(in), r.input.sha256) << in << " is not the file the hashes were recorded from";
  const auto ft = parse_file_type(r.type);
  ASSERT_TRUE(ft);
  auto src = gguf::file::open(in);
  ASSERT_TRUE(src) << src.error().message;
  auto p = plan_file(**src, *ft);
  ASSERT_TRUE(p) << p.error().message;
  if (auto ok = check_plan(*p); !ok) {
    // A tensor type we cannot write yet (a quantizer is missing): the
    // refusal must name it; the hash waits for the quantizer.
    ASSERT_NE(ok.message.find("no quantizer"), std::string::npos) << ok.message;
    GTEST_SKIP() << r.type << " of " << r.input.path << ": " << ok.message;
  }
  temp_dir dir;
  const std::string out = dir.file("out.gguf");
  run_options opt;
  opt.n_threads = 2;
  auto st = quantize_file(in, out, *ft, opt);
  ASSERT_TRUE(st) << st.message;
  EXPECT_EQ(sha256_file(out), r.sha256) << r.type << " of " << r.input.path;
}

std::string case_name(const ::testing::TestParamInfo<reference_file>& info) {
  std::string s = std::filesystem::path(info.param.input.path).stem().string() + "_" + info.param.type;
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

INSTANTIATE_TEST_SUITE_P(reference, quantize_matches_llama_quantize, ::testing::ValuesIn(k_reference), case_name);

TEST(quantize_file, metadata_ends_with_quantization_version_and_file_type) {
  CORTEX_NEEDS_REFERENCE_DATA();
  temp_dir dir;
  const std::string out = dir.file("q8.gguf");
  ASSERT_TRUE(quantize_file(testing::model_path("tiny-llama-f32.gguf"), out, file_type::q8_0, {}));
  auto f = gguf::file::open(out);
  ASSERT_TRUE(f) << f.error().message;
  const auto& kv = (*f)->metadata();
  ASSERT_GE(kv.size(), 2u);
  EXPECT_EQ(kv[kv.size() - 2].first, "general.quantization_version");
  EXPECT_EQ(kv[kv.size() - 2].second.u, 2u);
  EXPECT_EQ(kv.back().first, "general.file_type");
  EXPECT_EQ(kv.back().second.type, gguf::value_type::u32);
  EXPECT_EQ(kv.back().second.u, 7u) << "LLAMA_FTYPE_MOSTLY_Q8_0";
  for (size_t i = 0; i + 2 < kv.size(); ++i) EXPECT_NE(kv[i].first, "general.file_type") << "moved, not duplicated";
}

TEST(quantize_file, threads_do_not_change_the_bytes) {
  CORTEX_NEEDS_REFERENCE_DATA();
  temp_dir dir;
  run_options one, three;
  one.n_threads = 1;
  three.n_threads = 3;
  const std::string in = testing::model_path("tiny-llama-f32.gguf");
  ASSERT_TRUE(quantize_file(in, dir.file("a.gguf"), file_type::q4_k_m, one));
  ASSERT_TRUE(quantize_file(in, dir.file("b.gguf"), file_type::q4_k_m, three));
  EXPECT_EQ(sha256_file(dir.file("a.gguf")), sha256_file(dir.file("b.gguf")));
}

bool exists(const std::string& p) { return std::filesystem::exists(p); }

// A file type whose base type cortex cannot write yet.
std::optional<file_type> unwritable_file_type() {
  for (file_type ft : {file_type::tq1_0, file_type::tq2_0, file_type::q1_0, file_type::q2_0, file_type::iq3_s}) {
    if (!quantize_supported(default_type(ft))) return ft;
  }
  return std::nullopt;
}

TEST(quantize_file, a_missing_quantizer_is_named_before_anything_is_written) {
  CORTEX_NEEDS_REFERENCE_DATA();
  const auto ft = unwritable_file_type();
  if (!ft) GTEST_SKIP() << "every candidate type has a quantizer now";
  temp_dir dir;
  const std::string out = dir.file("tq.gguf");
  auto st = quantize_file(testing::model_path("tiny-llama-f32.gguf"), out, *ft, {});
  ASSERT_FALSE(st);
  EXPECT_NE(st.message.find(type_name(default_type(*ft))), std::string::npos) << st.message;
  EXPECT_NE(st.message.find("blk."), std::string::npos) << "names a tensor: " << st.message;
  EXPECT_FALSE(exists(out));
  EXPECT_FALSE(exists(out + ".tmp"));
}

TEST(quantize_file, q2_k_s_needs_an_importance_matrix) {
  CORTEX_NEEDS_REFERENCE_DATA();
  temp_dir dir;
  auto st = quantize_file(testing::model_path("tiny-llama-f32.gguf"), dir.file("q2ks.gguf"), file_type::q2_k_s, {});
  ASSERT_FALSE(st);
  EXPECT_NE(st.message.find("importance matrix"), std::string::npos) << st.message;
}

TEST(quantize_file, refuses_to_requantize_and_to_overwrite_its_input) {
  CORTEX_NEEDS_REFERENCE_DATA();
  temp_dir dir;
  // tiny-llama-q8_0 holds Q8_0 matrices: Q4_0 would requantize them.
  auto st = quantize_file(testing::model_path("tiny-llama-q8_0.gguf"), dir.file("x.gguf"), file_type::q4_0, {});
  ASSERT_FALSE(st);
  EXPECT_NE(st.message.find("requantiz"), std::string::npos) << st.message;
  // The same file as input and output.
  const std::string copy = dir.file("in.gguf");
  std::filesystem::copy_file(testing::model_path("tiny-llama-f32.gguf"), copy);
  const std::string before = sha256_file(copy);
  auto same = quantize_file(copy, copy, file_type::q8_0, {});
  ASSERT_FALSE(same);
  EXPECT_EQ(sha256_file(copy), before);
}

TEST(quantize_file, an_output_larger_than_the_free_space_is_refused) {
  temp_dir dir;
  EXPECT_TRUE(check_room(dir.file("x.gguf"), 1024));
  auto st = check_room(dir.file("x.gguf"), uint64_t{1} << 62);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message.find("free"), std::string::npos) << st.message;
}

TEST(quantize_file, an_output_folder_that_does_not_exist_is_an_error) {
  temp_dir dir;
  auto st = quantize_file(testing::model_path("tiny-llama-f32.gguf"), dir.file("no/such/dir/x.gguf"), file_type::q8_0, {});
  EXPECT_FALSE(st);
}

TEST(quantize_file, a_refusal_leaves_an_existing_output_untouched) {
  const auto ft = unwritable_file_type();
  if (!ft) GTEST_SKIP() << "every candidate type has a quantizer now";
  temp_dir dir;
  const std::string out = dir.file("out.gguf");
  std::FILE* f = std::fopen(out.c_str(), "wb");
  std::fputs("previous", f);
  std::fclose(f);
  ASSERT_FALSE(quantize_file(testing::model_path("tiny-llama-f32.gguf"), out, *ft, {}));
  EXPECT_EQ(std::filesystem::file_size(out), 8u);
}

}  // namespace
}  // namespace cortex::quantize
