// WordPiece (llama.cpp's "WPM") on the bert-bge vocabulary: our own
// multilingual, accented, punctuation-heavy and odd-white-space cases, with
// ids from llama.cpp's llama-tokenize (tests/data/tokenizer/README.md), with
// and without [CLS]/[SEP]; and the vocabulary checks a bert file must pass.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gguf/gguf.hpp"
#include "text/tokenizer.hpp"
#include "tests/support/golden.hpp"
#include "tests/text/detokenizer_stream.hpp"

namespace cortex {
namespace {

const std::string k_vocab = testing::shared_dir() + "/golden/tokenizer/vocab/ggml-vocab-bert-bge.gguf";
const std::string k_cases = std::string(CORTEX_SOURCE_DIR) + "/tests/data/tokenizer/bert_bge_cases.json";

std::string show(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += std::to_string(id) + " ";
  return s;
}

class WordPiece : public ::testing::Test {
 protected:
  void SetUp() override {
    CORTEX_NEEDS_REFERENCE_DATA();
    auto f = gguf::file::open(k_vocab);
    ASSERT_TRUE(f) << f.error().message;
    file_ = std::move(*f);
    auto t = tokenizer::from_gguf(*file_);
    ASSERT_TRUE(t) << t.error().message;
    tok_ = std::move(*t);
  }
  std::unique_ptr<gguf::file> file_;
  std::unique_ptr<tokenizer> tok_;
};

TEST_F(WordPiece, OwnCasesMatchLlamaTokenize) {
  const auto doc = testing::load_json(k_cases);
  ASSERT_TRUE(doc.is_object()) << k_cases;
  const auto& cases = doc["cases"];
  ASSERT_GE(cases.size(), 30u);
  size_t passed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string text = testing::hex_to_bytes(cases[i]["text_hex"]);
    const auto want = cases[i]["ids"].get<std::vector<int32_t>>();
    const auto want_special = cases[i]["ids_special"].get<std::vector<int32_t>>();
    const auto want_parsed = cases[i]["ids_parse_special"].get<std::vector<int32_t>>();
    const auto got = tok_->encode(text, false, false);
    const auto got_special = tok_->encode(text, true, false);
    const auto got_parsed = tok_->encode(text, true, true);
    if (got == want && got_special == want_special && got_parsed == want_parsed) {
      ++passed;
    } else {
      ADD_FAILURE() << "case " << i << " '" << text << "'\n want " << show(want_special) << "\n got  "
                    << show(got_special) << "\n want (parse special) " << show(want_parsed) << "\n got  "
                    << show(got_parsed);
    }
  }
  EXPECT_EQ(passed, cases.size());
}

TEST_F(WordPiece, FramesWithClsAndSep) {
  const auto ids = tok_->encode("hello", true, false);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids.front(), 101);  // [CLS]
  EXPECT_EQ(ids.back(), 102);   // [SEP]
  EXPECT_EQ(tok_->encode("", true, false), (std::vector<int32_t>{101, 102}));
  EXPECT_TRUE(tok_->encode("", false, false).empty());
}

// [CLS] and [SEP] render as nothing, so framing does not change the text;
// a streamed decode equals the whole decode.
TEST_F(WordPiece, DecodeIgnoresFraming) {
  const std::string text = "Unbelievably, internationalization! Ça va?";
  const auto ids = tok_->encode(text, true, false);
  EXPECT_EQ(tok_->decode(ids), tok_->decode(tok_->encode(text, false, false)));
  EXPECT_EQ(stream(*tok_, ids), tok_->decode(ids));
}

// The file's special ids (tokenizer.ggml.seperator_token_id = 102) are split
// out of the text only when asked to parse special tokens.
TEST_F(WordPiece, ParseSpecial) {
  EXPECT_NE(tok_->encode("[SEP]", false, false), (std::vector<int32_t>{102}));
  EXPECT_EQ(tok_->encode("[SEP]", false, true), (std::vector<int32_t>{102}));
  std::vector<int32_t> want = tok_->encode("a", false, false);
  want.push_back(102);
  for (int32_t id : tok_->encode("b", false, false)) want.push_back(id);
  EXPECT_EQ(tok_->encode("a [SEP] b", false, true), want);
}

}  // namespace
}  // namespace cortex
