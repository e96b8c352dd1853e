// Tokenizers against llama.cpp's outputs (../golden/tokenizer): every case
// of <name>.public.json in both directions, and llama.cpp's own test
// vectors (llama.cpp-vectors/*.inp|.out, tokenized like test-tokenizer-0:
// add_special = false, parse_special = false, no added leading space).
// The first eight vocabularies were made with llama.cpp c392e50 (Feb 2025),
// the rest (added 2026-09) with de3ff81, among them bert-bge (WordPiece).
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf.hpp"
#include "text/tokenizer.hpp"
#include "tests/text/detokenizer_stream.hpp"
#include "tests/support/golden.hpp"

namespace cortex {
namespace {

const std::string k_dir = cortex::testing::shared_dir() + "/golden/tokenizer";

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

std::string show(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += std::to_string(id) + " ";
  return s;
}

class TokenizerGolden : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    CORTEX_NEEDS_REFERENCE_DATA();
    auto f = gguf::file::open(k_dir + "/vocab/ggml-vocab-" + GetParam() + ".gguf");
    ASSERT_TRUE(f) << f.error().message;
    file_ = std::move(*f);
    auto t = tokenizer::from_gguf(*file_);
    ASSERT_TRUE(t) << t.error().message;
    tok_ = std::move(*t);
  }
  nlohmann::json public_cases() const {
    const auto j = nlohmann::json::parse(testing::read_file(k_dir + "/" + GetParam() + ".public.json"));
    EXPECT_EQ(j["add_special"], false);
    EXPECT_EQ(j["parse_special"], false);
    return j["cases"];
  }

  std::unique_ptr<gguf::file> file_;
  std::unique_ptr<tokenizer> tok_;
};

TEST_P(TokenizerGolden, PublicCasesEncode) {
  const auto cases = public_cases();
  ASSERT_GT(cases.size(), 0u);
  size_t passed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string text = from_hex(cases[i]["text_hex"]);
    const auto want = cases[i]["ids"].get<std::vector<int32_t>>();
    const auto got = tok_->encode(text, false, false);
    if (got == want) {
      ++passed;
    } else {
      ADD_FAILURE() << GetParam() << " case " << i << " text '" << text << "'\n want " << show(want) << "\n got  "
                    << show(got);
    }
  }
  std::printf("[ %s ] public encode: %zu / %zu\n", GetParam().c_str(), passed, cases.size());
  EXPECT_EQ(passed, cases.size());
}

TEST_P(TokenizerGolden, PublicCasesDecode) {
  const auto cases = public_cases();
  ASSERT_GT(cases.size(), 0u);
  size_t passed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto ids = cases[i]["ids"].get<std::vector<int32_t>>();
    const std::string want = from_hex(cases[i]["detok_hex"]);
    const std::string got = tok_->decode(ids);
    if (got == want) {
      ++passed;
    } else {
      ADD_FAILURE() << GetParam() << " case " << i << "\n want '" << want << "'\n got  '" << got << "'";
    }
  }
  std::printf("[ %s ] public decode: %zu / %zu\n", GetParam().c_str(), passed, cases.size());
  EXPECT_EQ(passed, cases.size());
}

// Streaming the golden ids gives the golden text, in valid UTF-8 chunks
// (byte-fallback and byte-level tokens split characters), also as one stream.
TEST_P(TokenizerGolden, PublicCasesIncremental) {
  const auto cases = public_cases();
  ASSERT_GT(cases.size(), 0u);
  size_t passed = 0;
  std::vector<int32_t> all_ids;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto ids = cases[i]["ids"].get<std::vector<int32_t>>();
    all_ids.insert(all_ids.end(), ids.begin(), ids.end());
    const std::string want = from_hex(cases[i]["detok_hex"]);
    if (stream(*tok_, ids) == want) {
      ++passed;
    } else {
      ADD_FAILURE() << GetParam() << " case " << i;
    }
  }
  std::printf("[ %s ] public incremental: %zu / %zu\n", GetParam().c_str(), passed, cases.size());
  EXPECT_EQ(passed, cases.size());
  EXPECT_EQ(stream(*tok_, all_ids), tok_->decode(all_ids));
}

// test-tokenizer-0's reader: texts separated by "\n__ggml_vocab_test__\n"
// (a trailing separator ends the list), one line of ids per text.
TEST_P(TokenizerGolden, LlamaCppVectors) {
  const std::string base = k_dir + "/llama.cpp-vectors/ggml-vocab-" + GetParam() + ".gguf";
  const std::string raw = testing::read_file(base + ".inp");
  ASSERT_FALSE(raw.empty());
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t pos = 0; pos < raw.size();) {
    const size_t next = raw.find(sep, pos);
    if (next == std::string::npos) {
      texts.push_back(raw.substr(pos));
      break;
    }
    texts.push_back(raw.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::vector<std::vector<int32_t>> wants;
  std::istringstream out(testing::read_file(base + ".out"));
  for (std::string line; std::getline(out, line);) {
    std::istringstream ls(line);
    std::vector<int32_t> ids;
    for (int32_t id; ls >> id;) ids.push_back(id);
    wants.push_back(ids);
  }
  ASSERT_EQ(texts.size(), wants.size());
  size_t passed = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto got = tok_->encode(texts[i], false, false);
    if (got == wants[i]) {
      ++passed;
    } else {
      ADD_FAILURE() << GetParam() << " vector " << i << " text '" << texts[i] << "'\n want " << show(wants[i])
                    << "\n got  " << show(got);
    }
  }
  std::printf("[ %s ] llama.cpp vectors: %zu / %zu\n", GetParam().c_str(), passed, texts.size());
  EXPECT_EQ(passed, texts.size());
}

INSTANTIATE_TEST_SUITE_P(AllVocabs, TokenizerGolden,
                         ::testing::Values("llama-spm", "phi-3", "gpt-2", "starcoder", "falcon", "deepseek-llm",
                                           "llama3", "qwen3",  // llama.cpp c392e50
                                           "gemma-4", "qwen35", "command-r", "deepseek-coder", "mpt",
                                           "refact", "bert-bge"),  // llama.cpp de3ff81
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace cortex
