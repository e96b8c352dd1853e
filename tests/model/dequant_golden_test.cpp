// Dequantizes every tensor of the reference GGUF files and compares with
// golden/dequant/<model>.json, produced by gguf-py's numpy dequantizer.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/ggml_type.hpp"
#include "kernels/quant.hpp"
#include "gguf/gguf.hpp"
#include "tests/support/golden.hpp"

namespace cortex {
namespace {

namespace fs = std::filesystem;

const std::string shared_dir = testing::shared_dir();
using testing::model_path;  // golden/models/ first, then models/
const std::vector<std::string> golden_models = {
    "stories260K-q8_0", "tiny-llama-f16", "tiny-llama-q4_0", "tiny-llama-q4_k_m", "tiny-llama-q8_0",
};

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

TEST(dequant_golden, every_golden_file_is_checked) {
  CORTEX_NEEDS_REFERENCE_DATA();
  std::set<std::string> on_disk;
  for (const auto& e : fs::directory_iterator(shared_dir + "/golden/dequant")) {
    if (e.path().extension() == ".json") on_disk.insert(e.path().stem().string());
  }
  EXPECT_EQ(on_disk, std::set<std::string>(golden_models.begin(), golden_models.end()));
}

class dequant_golden : public ::testing::TestWithParam<std::string> {};

TEST_P(dequant_golden, every_tensor_matches) {
  CORTEX_NEEDS_REFERENCE_DATA();
  std::ifstream in(shared_dir + "/golden/dequant/" + GetParam() + ".json");
  ASSERT_TRUE(in) << GetParam();
  const auto golden = nlohmann::json::parse(in);
  auto opened = gguf::file::open(model_path(golden.at("model").get<std::string>()));
  ASSERT_TRUE(opened) << opened.error().message;
  const gguf::file& f = **opened;
  const auto& tensors = golden.at("tensors");
  ASSERT_FALSE(tensors.empty());
  EXPECT_EQ(tensors.size(), f.tensors().size());

  for (const auto& ref : tensors) {
    const std::string name = ref.at("name");
    SCOPED_TRACE(GetParam() + ": " + name);
    const gguf::tensor_info* t = f.find_tensor(name);
    ASSERT_NE(t, nullptr);
    const auto traits = type_traits(t->type);
    ASSERT_NE(traits.name, nullptr);
    EXPECT_EQ(lower(ref.at("type")), lower(traits.name));
    const auto& ne = ref.at("ne");
    for (size_t d = 0; d < ne.size(); ++d) EXPECT_EQ(t->ne[d], ne[d].get<int64_t>()) << "dim " << d;
    ASSERT_TRUE(dequantize_supported(t->type));

    const int64_t n_cols = t->ne[0], n_rows = t->n_rows();
    const size_t stride = row_size(t->type, n_cols);
    ASSERT_EQ(stride * static_cast<size_t>(n_rows), t->n_bytes);
    std::vector<float> row(static_cast<size_t>(n_cols));
    double sum = 0, sum_sq = 0, sum_abs = 0;
    for (int64_t r = 0; r < n_rows; ++r) {
      dequantize_row(t->type, t->data + static_cast<size_t>(r) * stride, row.data(), n_cols);
      for (float v : row) {
        sum += v;
        sum_sq += static_cast<double>(v) * v;
        sum_abs += std::fabs(v);
      }
      // The listed values are float32 results printed as float64: exact.
      const size_t n_listed = static_cast<size_t>(std::min<int64_t>(32, n_cols));
      if (r == 0) {
        const auto& first = ref.at("row0_first32");
        ASSERT_EQ(first.size(), n_listed);
        for (size_t i = 0; i < n_listed; ++i) EXPECT_EQ(row[i], first[i].get<float>()) << "row 0 element " << i;
      }
      if (r == n_rows - 1) {
        const auto& last = ref.at("last_row_last32");
        ASSERT_EQ(last.size(), n_listed);
        const size_t off = row.size() - n_listed;
        for (size_t i = 0; i < n_listed; ++i) {
          EXPECT_EQ(row[off + i], last[i].get<float>()) << "last row element " << off + i;
        }
      }
    }
    // Same float32 values summed in float64 in another order: the difference
    // is bounded by n * 2^-53 * sum |v|, far below these tolerances.
    EXPECT_NEAR(sum, ref.at("sum").get<double>(), 1e-9 * sum_abs + 1e-12);
    EXPECT_NEAR(sum_sq, ref.at("sum_sq").get<double>(), 1e-9 * sum_sq + 1e-12);
  }
}

INSTANTIATE_TEST_SUITE_P(models, dequant_golden, ::testing::ValuesIn(golden_models),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (auto& c : s) if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

}  // namespace
}  // namespace cortex
