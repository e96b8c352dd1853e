// The o200k pre-tokenizer (tokenizer.ggml.pre "gpt-4o": gpt-oss, Llama 4)
// against llama.cpp. The golden folder has no o200k vocabulary, so the test
// takes Qwen3's BPE vocabulary and merges (../shared/golden/tokenizer/vocab)
// with only the pre-tokenizer name changed: merges never cross a
// pre-tokenizer boundary, so every difference in the split shows in the ids.
// Expected ids: llama-tokenize of the reference llama.cpp on that same file
// (tests/data/tokenizer_gpt4o_pre.json says how), for the 300 texts of the
// qwen3 golden cases and 20 of cased words, contractions, paths and spaces.
#include <gtest/gtest.h>

#include <cstdio>
#include <unistd.h>

#include "gguf/gguf.hpp"
#include "gguf/gguf_writer.hpp"
#include "tests/support/golden.hpp"
#include "text/tokenizer.hpp"

namespace cortex {
namespace {

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

TEST(TokenizerGpt4o, MatchesLlamaCppOnTheSameVocabulary) {
  CORTEX_NEEDS_REFERENCE_DATA();
  auto src = gguf::file::open(testing::shared_dir() + "/golden/tokenizer/vocab/ggml-vocab-qwen3.gguf");
  ASSERT_TRUE(src) << src.error().message;
  gguf::writer w;
  for (const auto& [key, value] : (*src)->metadata()) w.set_value(key, value);
  w.set_string("tokenizer.ggml.pre", "gpt-4o");
  const std::string path = ::testing::TempDir() + "cortex_vocab_gpt4o_" + std::to_string(::getpid()) + ".gguf";
  ASSERT_TRUE(w.write(path));
  auto f = gguf::file::open(path);
  std::remove(path.c_str());
  ASSERT_TRUE(f) << f.error().message;
  auto tok = tokenizer::from_gguf(**f);
  ASSERT_TRUE(tok) << tok.error().message;
  const auto ref = testing::load_json(std::string(CORTEX_SOURCE_DIR) + "/tests/data/tokenizer_gpt4o_pre.json");
  ASSERT_FALSE(ref.is_discarded());
  int n = 0, bad = 0;
  for (const auto& c : ref["cases"]) {
    const std::string text = from_hex(c["text_hex"].get<std::string>());
    const auto want = c["ids"].get<std::vector<int32_t>>();
    const auto got = (*tok)->encode(text, /*add_special=*/false, /*parse_special=*/false);
    ++n;
    if (got != want) {
      ++bad;
      ADD_FAILURE() << "case " << n - 1 << " (" << c["text_hex"].get<std::string>().substr(0, 60) << "...) differs";
    }
  }
  EXPECT_EQ(n, 320);
  EXPECT_EQ(bad, 0);
}

}  // namespace
}  // namespace cortex
