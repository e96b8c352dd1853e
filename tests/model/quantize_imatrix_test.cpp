// `cortex quantize --imatrix` against llama-quantize --imatrix: models of
// ../shared quantized with the importance matrices in tests/data/imatrix
// must give byte for byte the file llama-quantize wrote (compared by
// SHA-256); the matrix must matter; a matrix that does not fit the model is
// refused before anything is written.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <ostream>
#include <string>

#include "kernels/quant.hpp"
#include "gguf/gguf.hpp"
#include "gguf/gguf_writer.hpp"
#include "model/quantize_file.hpp"
#include "tests/support/golden.hpp"
#include "tests/support/sha256.hpp"
#include "tests/support/temp_dir.hpp"

namespace cortex::quantize {
namespace {

using testing::sha256_file;
using testing::temp_dir;

std::string imatrix_dir() { return std::string(CORTEX_SOURCE_DIR) + "/tests/data/imatrix"; }

// llama-quantize records the matrix's path as it was given
// (quantize.imatrix.file); it was given by its bare name from its own
// folder, so these tests run there and name it the same way.
class in_imatrix_dir {
 public:
  in_imatrix_dir() : old_(std::filesystem::current_path()) { std::filesystem::current_path(imatrix_dir()); }
  ~in_imatrix_dir() { std::filesystem::current_path(old_); }

 private:
  std::filesystem::path old_;
};

struct input_file {
  const char* path;  // under ../shared
  const char* sha256;
};

// qllama: llama d256 L2 H8/2 ff512, BF16 (rows of 256 and 512: every type
// without a fallback). qwen3moe: rows of 64 (the fallbacks Q5_0 / Q5_1 /
// Q8_0 / Q4_0 / IQ4_NL) and 3-D experts, so per-expert weights.
constexpr input_file k_qllama{"golden/arch/qllama-bf16.gguf", "5faea705c89a70ecdc608f8c398e27ca073bea37c86d772f48782f00a2f06ee0"};
constexpr input_file k_qwen3moe{"golden/arch/qwen3moe-f32.gguf", "f1ca5db0268169f598e0c23ba39085cefcb67ca9487d59a6fc68d844e29b2201"};

struct reference_file {
  input_file input;
  const char* imatrix;  // in tests/data/imatrix
  const char* type;     // llama-quantize's file type name
  bool pure;
  const char* sha256;   // of llama-quantize's output
};

// Recorded with llama.cpp of 2026-09-28 (commit de3ff81, built as
// ../shared/docs/reference.md says, x86-64), in tests/data/imatrix, by
//   llama-quantize [--pure] --imatrix IMATRIX ../shared/IN.gguf OUT.gguf TYPE 2
// The matrices were made there by llama-imatrix of the same build (see
// tests/data/imatrix/README.md). A row whose type needs a quantizer cortex
// does not have is skipped until it exists, and then holds it to these
// bytes (none is skipped now).
const reference_file k_reference[] = {
    {k_qllama, "qllama-imatrix.gguf", "Q4_0", false, "a867090c5f88c4e60e119d1c3aeab733608bd9e16b62c785b4fa8beb8f6d5287"},
    {k_qllama, "qllama-imatrix.gguf", "Q4_1", false, "34fe3b77dbefe61458f7c053e1deda80f9b5204b859b226df1bc4bd6f50d900b"},
    {k_qllama, "qllama-imatrix.gguf", "Q5_0", false, "919761be64ad46760a07edb33e6e3d1411091a6f3e80eb85576b586af630fc26"},
    {k_qllama, "qllama-imatrix.gguf", "Q5_1", false, "6a751923284d2f3dabd4067061121bdec979fce979d394534263c6be23460497"},
    {k_qllama, "qllama-imatrix.gguf", "Q8_0", false, "274249ff35d7bb071e811026df7810c9657528f54d37cc15a98f78e21b49f800"},
    {k_qllama, "qllama-imatrix.gguf", "Q2_K", false, "0104d38dad196018a19b534e10651f08ecd9e3f255c0f7fecbbb2fbdea1e69f8"},
    {k_qllama, "qllama-imatrix.gguf", "Q2_K_S", false, "61a281934996bb403a951ffccf8945ccc19d0a9e05160026498d9db6c87b2523"},
    {k_qllama, "qllama-imatrix.gguf", "Q3_K_S", false, "d96baf9a50acf6b4a8a0d35926d6a2b6a332fb11296150d729591e19d582806f"},
    {k_qllama, "qllama-imatrix.gguf", "Q3_K_M", false, "ba2f42a1eed484985a7fbd83626c499eb2ef5fa4e778f5583c55bcfb5ff7fa16"},
    {k_qllama, "qllama-imatrix.gguf", "Q3_K_L", false, "98703a007ec5872abf17376bc57e96375e78056f3c933daa3d4dcae695177d11"},
    {k_qllama, "qllama-imatrix.gguf", "Q4_K_S", false, "921174591cbc5f7a66c05b3da261edfeb301a1297e75798da151b26389c4d350"},
    {k_qllama, "qllama-imatrix.gguf", "Q4_K_M", false, "5dcbcf1ed5f8ea5f43ac8649fe9b0de88fa39577c443770e6ec23366ac3d7fc1"},
    {k_qllama, "qllama-imatrix.gguf", "Q5_K_S", false, "1d4fdb1bd3e20c273c440168bbf4a992ce7562c234a08818eee41b26e0f3c121"},
    {k_qllama, "qllama-imatrix.gguf", "Q5_K_M", false, "a97ffb45d99a5b45b95076f1bf68af0a82f8b22efe07822470b5599b5fb0f9af"},
    {k_qllama, "qllama-imatrix.gguf", "Q6_K", false, "f4fccfa919d54b355172176f12626e87f09e22b00d10c33fe15cc1a55b90068c"},
    {k_qllama, "qllama-imatrix.gguf", "IQ4_NL", false, "b4cad7580e5fd8e51c53a606c068a07ddcbad32b72d48657e176db27ece8023e"},
    {k_qllama, "qllama-imatrix.gguf", "IQ4_XS", false, "99ab284ab753f7f5dcf35fa881bd41c9e2988542137102bd42d96f516c8cbb41"},
    {k_qllama, "qllama-imatrix.gguf", "IQ2_XXS", false, "de1bdd6deaacb101d205ce75e400a6811a0c8c40a2cd64396077ab087191253f"},
    {k_qllama, "qllama-imatrix.gguf", "IQ2_XS", false, "39da367ac9ac05747dde6b953bd0eddd2a05f53e9924df4b3c45e9da314b1a91"},
    {k_qllama, "qllama-imatrix.gguf", "IQ2_S", false, "13eef3e6b30c0c1988253ffb53ed8880f0fb075c0c40d62bcc7c35cecdb6bdc8"},
    {k_qllama, "qllama-imatrix.gguf", "IQ2_M", false, "6f0854e0253a474482ac8ebdc724868c8c4444a28609f0e09ea90c008b598699"},
    {k_qllama, "qllama-imatrix.gguf", "IQ3_XXS", false, "ff38cea9a4644fbb14cdb256ef3a555314406de17665b790b2a6b5c758d8af82"},
    {k_qllama, "qllama-imatrix.gguf", "IQ3_XS", false, "f01ae52eeb297e94fd7c65465a734bc0ae8e54db5dfd5963662c96d0021f3857"},
    {k_qllama, "qllama-imatrix.gguf", "IQ3_S", false, "39b494ac4eee70ad2bc485df94863e2a44e10f49985c8b240a86e4c88f0b1dad"},
    {k_qllama, "qllama-imatrix.gguf", "IQ3_M", false, "5bde3a28f668c14f437b5183c8a05a9c921746158b0647b71217d05f6e97bd57"},
    {k_qllama, "qllama-imatrix.gguf", "IQ1_S", false, "6c0d2e57da76a1e324ccba56b01b84dbf7c7136592f4cbd08d3a6c92e024cf3e"},
    {k_qllama, "qllama-imatrix.gguf", "IQ1_M", false, "ef7d2eb18f357120f84a9a5e672d7caa20534746e74854338d9da2b5236d8a07"},
    {k_qllama, "qllama-imatrix.gguf", "Q4_0", true, "401ab70ed8e5a2777816102d5b1635ae59815a8a3b18cb7fba705ea04806ad5c"},
    {k_qllama, "qllama-imatrix.gguf", "Q4_1", true, "0fd523e0c7981177eedc5c627f8c1758483d4fd5a724e32576ee634d605e384a"},
    {k_qllama, "qllama-imatrix.gguf", "Q5_0", true, "6e8dde2709e530691ff1fb97566560ee655cc1831076cdc2687d833d10ba205c"},
    {k_qllama, "qllama-imatrix.gguf", "Q5_1", true, "b2cd955fba24ccaae87135462021ac84cae787c21f4442db17958a8d4380415b"},
    {k_qllama, "qllama-imatrix.gguf", "Q2_K", true, "38ae069ee8e41efd0b01acbf3816d46c3ce9d99287e6313e136106d2ebaf0dfd"},
    {k_qllama, "qllama-imatrix.gguf", "Q3_K_M", true, "eb52213526eafb348cf4e4faec4c8dbfc9b1cb592b7575bf695384945ec766cf"},
    {k_qllama, "qllama-imatrix.gguf", "Q4_K_M", true, "5c9bff23677a29a91817eab2b7e8288ed651a4de8754468f58592ee26141ac1b"},
    {k_qllama, "qllama-imatrix.gguf", "Q5_K_M", true, "72f40499126382b3da89872e56f26bed90042f8a82eb9a58ad8886bab044cb47"},
    {k_qllama, "qllama-imatrix.gguf", "IQ4_NL", true, "94611066ba318f8909d4b0d2ebffa9e974dcdd823ae369c79160cff3fea5a277"},
    {k_qllama, "qllama-imatrix.gguf", "IQ4_XS", true, "577c7feed52d9fba8bcfbef09a945460714871060a709dce51922fa37c8d4713"},
    // Another matrix (other text, 2 chunks), and the legacy format.
    {k_qllama, "qllama-imatrix-b.gguf", "Q4_K_M", false, "b5b6e4b6d108b3823624f725ee6d6db842ad7a3264b1cdcd72bfceb428b86d98"},
    {k_qllama, "qllama-imatrix-b.gguf", "IQ4_XS", false, "e20744fa2a4c333d1e1c597cbbd03ce616f9259feb8abe6f49f497aedde7caed"},
    {k_qllama, "qllama-imatrix-b.gguf", "Q3_K_S", false, "e5f491067d6d2e7570fa26729f8c25fd368ab8e955cb9aa3a12b4cb0cc944bf0"},
    {k_qllama, "qllama-imatrix.dat", "Q4_K_M", false, "a2b13c03e2b8bfaedf86045e74d64daa6f0c550d9704279c86c94a0d0890c6aa"},
    {k_qllama, "qllama-imatrix.dat", "Q5_0", false, "12fdb1d4d7caf1ae3eae852fe97eccc0f6987c44aeee33f258d3bfe4ba98f4c0"},
    // Experts: per-expert weights through the fallback types.
    {k_qwen3moe, "qwen3moe-imatrix.gguf", "Q4_0", false, "909be0f4eab18c827370fbdfa8a8bb02de2190abb772a546938b0dc3bfee7a75"},
    {k_qwen3moe, "qwen3moe-imatrix.gguf", "Q4_K_M", false, "0b78d7af810bd11bd87a0fc6978e4e0a28974122e8247acf75bf3e2ad6d72f5a"},
    {k_qwen3moe, "qwen3moe-imatrix.gguf", "Q5_K_S", false, "df8fe12f32da649cd7f0cb65863f34ecfa8d962b16b9bf4152b03368f0415dc4"},
    {k_qwen3moe, "qwen3moe-imatrix.gguf", "Q2_K", false, "30aea3ab50dc8aa9858ce82eb5e311f82326c12d56513620d1537dba2582ff23"},
    {k_qwen3moe, "qwen3moe-imatrix.gguf", "IQ4_XS", false, "9c4a2f080034fd70f29a8965aa49bd13b1aa4f9e3887e74e1aff8dd4832f7641"},
    {k_qwen3moe, "qwen3moe-imatrix.gguf", "Q6_K", false, "a163cc7ab6657a86e055ac18dab000d67d15cd8f1fde1b4de28b3acc83ccea60"},
};

// For gtest's messages (it would print the struct's bytes).
void PrintTo(const reference_file& r, std::ostream* os) {
  *os << r.input.path << " " << r.type << (r.pure ? " --pure" : "") << " --imatrix " << r.imatrix;
}

std::string input_path(const input_file& f) { return testing::shared_dir() + "/" + f.path; }

class quantize_imatrix_matches_llama_quantize : public ::testing::TestWithParam<reference_file> {};

TEST_P(quantize_imatrix_matches_llama_quantize, byte_for_byte) {
  CORTEX_NEEDS_REFERENCE_DATA();
  const reference_file& r = GetParam();
  const std::string in = input_path(r.input);
  ASSERT_EQ(sha256_file(in), r.input.sha256) << in << " is not the file the hashes were recorded from";
  const auto ft = parse_file_type(r.type);
  ASSERT_TRUE(ft);
  run_options opt;
  opt.n_threads = 2;
  opt.rules.pure = r.pure;
  opt.imatrix_path = r.imatrix;
  temp_dir dir;
  const std::string out = dir.file("out.gguf");
  status st;
  {
    in_imatrix_dir here;
    st = quantize_file(in, out, *ft, opt);
  }
  if (!st && st.message.find("no quantizer") != std::string::npos) {
    // A tensor type cortex cannot write yet: the hash waits for its quantizer.
    GTEST_SKIP() << r.type << " of " << r.input.path << ": " << st.message;
  }
  ASSERT_TRUE(st) << st.message;
  EXPECT_EQ(sha256_file(out), r.sha256) << r.type << (r.pure ? " --pure" : "") << " of " << r.input.path << " with " << r.imatrix;
}

std::string case_name(const ::testing::TestParamInfo<reference_file>& info) {
  const reference_file& r = info.param;
  std::string s = std::filesystem::path(r.input.path).stem().string() + "_" + r.imatrix + "_" + r.type + (r.pure ? "_pure" : "");
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

INSTANTIATE_TEST_SUITE_P(reference, quantize_imatrix_matches_llama_quantize, ::testing::ValuesIn(k_reference), case_name);

// Quantizes qllama to `type` with the matrix at `imatrix` ("" for none);
// returns the output's SHA-256 ("" on failure, with the message in *error).
std::string quantized_hash(const std::string& imatrix, file_type type, std::string* error = nullptr) {
  temp_dir dir;
  run_options opt;
  opt.imatrix_path = imatrix;
  auto st = quantize_file(input_path(k_qllama), dir.file("out.gguf"), type, opt);
  if (!st) {
    if (error) *error = st.message;
    return "";
  }
  return sha256_file(dir.file("out.gguf"));
}

TEST(quantize_imatrix, the_matrix_changes_the_bytes) {
  CORTEX_NEEDS_REFERENCE_DATA();
  const std::string a = imatrix_dir() + "/qllama-imatrix.gguf", b = imatrix_dir() + "/qllama-imatrix-b.gguf";
  for (file_type ft : {file_type::q4_k_m, file_type::iq4_xs, file_type::q5_1, file_type::q2_k}) {
    SCOPED_TRACE(file_type_name(ft));
    const std::string none = quantized_hash("", ft), with_a = quantized_hash(a, ft), with_b = quantized_hash(b, ft);
    ASSERT_FALSE(none.empty());
    ASSERT_FALSE(with_a.empty());
    ASSERT_FALSE(with_b.empty());
    EXPECT_NE(none, with_a);
    EXPECT_NE(with_a, with_b);
  }
}

// llama-quantize refuses these file types without a matrix (their iq1 and
// iq2_xxs / iq2_xs tensors have no quantizer without weights); so does
// cortex, saying what to give.
TEST(quantize_imatrix, the_lowest_bit_types_are_refused_without_one) {
  CORTEX_NEEDS_REFERENCE_DATA();
  for (file_type ft : {file_type::iq1_s, file_type::iq1_m, file_type::iq2_xxs, file_type::iq2_xs}) {
    SCOPED_TRACE(file_type_name(ft));
    std::string error;
    EXPECT_EQ(quantized_hash("", ft, &error), "");
    EXPECT_NE(error.find("needs an importance matrix"), std::string::npos) << error;
    EXPECT_NE(error.find("--imatrix"), std::string::npos) << error;
  }
}

TEST(quantize_imatrix, metadata_records_the_matrix_after_the_file_type) {
  CORTEX_NEEDS_REFERENCE_DATA();
  temp_dir dir;
  run_options opt;
  opt.imatrix_path = imatrix_dir() + "/qllama-imatrix.gguf";
  ASSERT_TRUE(quantize_file(input_path(k_qllama), dir.file("q.gguf"), file_type::q4_k_m, opt));
  auto f = gguf::file::open(dir.file("q.gguf"));
  ASSERT_TRUE(f) << f.error().message;
  const auto& kv = (*f)->metadata();
  ASSERT_GE(kv.size(), 5u);
  EXPECT_EQ(kv[kv.size() - 5].first, "general.file_type");
  EXPECT_EQ(kv[kv.size() - 4].first, "quantize.imatrix.file");
  EXPECT_EQ(kv[kv.size() - 4].second.str, opt.imatrix_path);
  EXPECT_EQ(kv[kv.size() - 3].first, "quantize.imatrix.dataset");
  EXPECT_EQ(kv[kv.size() - 3].second.str, "calib.txt") << "llama-imatrix -f calib.txt";
  EXPECT_EQ(kv[kv.size() - 2].first, "quantize.imatrix.entries_count");
  EXPECT_EQ(kv[kv.size() - 2].second.u, 14u) << "7 matrices in each of 2 layers";
  EXPECT_EQ(kv.back().first, "quantize.imatrix.chunks_count");
  EXPECT_EQ(kv.back().second.u, 4u) << "llama-imatrix --chunks 4";
}

// A copy of qllama-imatrix.gguf with `drop` left out and `resize`'s sums
// cut to 128 columns (each "" for none), written to `path`.
void write_altered_imatrix(const std::string& path, const std::string& drop, const std::string& resize) {
  auto src = gguf::file::open(imatrix_dir() + "/qllama-imatrix.gguf");
  ASSERT_TRUE(src) << src.error().message;
  gguf::writer w;
  for (const auto& [key, v] : (*src)->metadata()) w.set_value(key, v);
  for (const auto& t : (*src)->tensors()) {
    if (!drop.empty() && t.name.rfind(drop + ".", 0) == 0) continue;
    std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
    size_t n_bytes = t.n_bytes;
    if (!resize.empty() && t.name == resize + ".in_sum2") {
      ne[0] = 128;
      n_bytes = 128 * sizeof(float);
    }
    w.add_tensor(t.name, t.type, ne, std::vector<uint8_t>(t.data, t.data + n_bytes));
  }
  ASSERT_TRUE(w.write(path));
}

TEST(quantize_imatrix, a_tensor_the_type_requires_it_for_must_have_an_entry) {
  CORTEX_NEEDS_REFERENCE_DATA();
  temp_dir dir;
  const std::string im = dir.file("partial.gguf");
  write_altered_imatrix(im, "blk.1.ffn_up.weight", "");
  std::string error;
  // Q2_K_S requires the matrix for its Q2_K tensors; the entry is gone.
  EXPECT_EQ(quantized_hash(im, file_type::q2_k_s, &error), "");
  EXPECT_NE(error.find("blk.1.ffn_up.weight"), std::string::npos) << error;
  EXPECT_NE(error.find("no data"), std::string::npos) << error;
  // Q4_K_M does not: that tensor is quantized without weights.
  EXPECT_NE(quantized_hash(im, file_type::q4_k_m), "");
}

TEST(quantize_imatrix, an_entry_of_the_wrong_size_is_refused_before_anything_is_written) {
  CORTEX_NEEDS_REFERENCE_DATA();
  temp_dir dir;
  const std::string im = dir.file("resized.gguf");
  write_altered_imatrix(im, "", "blk.0.attn_q.weight");
  run_options opt;
  opt.imatrix_path = im;
  const std::string out = dir.file("out.gguf");
  auto st = quantize_file(input_path(k_qllama), out, file_type::q4_k_m, opt);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message.find("blk.0.attn_q.weight"), std::string::npos) << st.message;
  EXPECT_NE(st.message.find("128"), std::string::npos) << st.message;
  EXPECT_NE(st.message.find("256"), std::string::npos) << st.message;
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(out + ".tmp"));
}

TEST(quantize_imatrix, a_matrix_of_another_model_is_refused) {
  CORTEX_NEEDS_REFERENCE_DATA();
  // qwen3moe's matrix has other shapes under the same tensor names.
  std::string error;
  EXPECT_EQ(quantized_hash(imatrix_dir() + "/qwen3moe-imatrix.gguf", file_type::q4_k_m, &error), "");
  EXPECT_NE(error.find("another model"), std::string::npos) << error;
}

TEST(quantize_imatrix, a_missing_file_is_an_error) {
  CORTEX_NEEDS_REFERENCE_DATA();
  std::string error;
  EXPECT_EQ(quantized_hash("/nonexistent/imatrix.gguf", file_type::q4_k_m, &error), "");
  EXPECT_NE(error.find("/nonexistent/imatrix.gguf"), std::string::npos) << error;
}

}  // namespace
}  // namespace cortex::quantize
