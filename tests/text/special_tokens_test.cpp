// Special tokens found by their text (text/special_tokens.hpp) on tiny
// vocabularies built here, and Gemma 4's tokenizer contracts on its real
// vocabulary (expected ids read off the vocabulary file, not the code).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gguf/gguf.hpp"
#include "gguf/gguf_writer.hpp"
#include "text/tokenizer.hpp"
#include "tests/support/golden.hpp"

namespace cortex {
namespace {

// A byte-level BPE vocabulary "a", "b", then `extra` with the given GGUF
// token types (1 normal, 3 control, 4 user-defined).
std::unique_ptr<tokenizer> tiny_bpe(const std::vector<std::string>& extra, const std::vector<int32_t>& types) {
  std::vector<std::string> toks = {"a", "b"};
  toks.insert(toks.end(), extra.begin(), extra.end());
  std::vector<int32_t> all_types = {1, 1};
  all_types.insert(all_types.end(), types.begin(), types.end());
  gguf::writer w;
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", "gpt-2");
  w.set_string_array("tokenizer.ggml.tokens", toks);
  w.set_i32_array("tokenizer.ggml.token_type", all_types);
  w.set_string_array("tokenizer.ggml.merges", {"a b"});
  const std::vector<uint8_t> bytes = w.build();
  auto f = gguf::file::parse(bytes.data(), bytes.size(), "mem");
  EXPECT_TRUE(f) << f.error().message;
  if (!f) return nullptr;
  auto t = tokenizer::from_gguf(**f);
  EXPECT_TRUE(t) << t.error().message;
  return t ? std::move(*t) : nullptr;
}

TEST(SpecialTokens, FimTokensBecomeControlAndPaddingEndsGeneration) {
  // DeepSeek Coder's FIM tokens are user-defined in the file.
  const std::string begin = "<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>";
  auto t = tiny_bpe({begin, "<|fim_pad|>", "<|file_sep|>"}, {4, 4, 4});
  ASSERT_TRUE(t);
  const vocab& v = t->vocabulary();
  EXPECT_EQ(v.fim_pre_id, 2);
  EXPECT_EQ(v.fim_pad_id, 3);
  EXPECT_EQ(v.fim_sep_id, 4);
  EXPECT_TRUE(v.has_attr(2, attr_control));
  EXPECT_FALSE(t->is_eog(2));
  EXPECT_TRUE(t->is_eog(3));
  EXPECT_TRUE(t->is_eog(4));
  // A control token is plain text unless parse_special, and renders as nothing.
  EXPECT_NE(t->encode(begin, false, false), std::vector<int32_t>{2});
  EXPECT_EQ(t->encode(begin, false, true), std::vector<int32_t>{2});
  EXPECT_EQ(t->decode({0, 2, 1}), "ab");
}

TEST(SpecialTokens, EndIsNoTurnEndNextToReturnAndCall) {
  auto t = tiny_bpe({"<|end|>", "<|return|>", "<|call|>", "<|channel|>"}, {3, 3, 3, 3});
  ASSERT_TRUE(t);
  EXPECT_FALSE(t->is_eog(2));
  EXPECT_TRUE(t->is_eog(3));
  EXPECT_TRUE(t->is_eog(4));
  // "<|end|>" and gpt-oss's "<|channel|>" are rendered like user text.
  EXPECT_EQ(t->decode({2, 5}), "<|end|><|channel|>");
  EXPECT_EQ(t->encode("a<|channel|>", false, false), (std::vector<int32_t>{0, 5}));

  auto alone = tiny_bpe({"<|end|>", "<|return|>"}, {1, 1});
  ASSERT_TRUE(alone);
  EXPECT_TRUE(alone->is_eog(2));
  EXPECT_TRUE(alone->vocabulary().has_attr(2, attr_control));
  EXPECT_EQ(alone->decode({2}), "");
}

TEST(SpecialTokens, EndOfTurnIdFollowsTheListOrder) {
  auto t = tiny_bpe({"<|endoftext|>", "<|im_end|>"}, {3, 3});
  ASSERT_TRUE(t);
  EXPECT_EQ(t->vocabulary().eot_id, 3);  // <|im_end|> is listed before <|endoftext|>
  EXPECT_TRUE(t->is_eog(2));
  EXPECT_TRUE(t->is_eog(3));
}

// Ids read off ggml-vocab-gemma-4.gguf: <eos> 1, <bos> 2, <|tool_response> 50
// (user-defined in the file), <|channel> 100 (user-defined), <turn|> 106,
// "\n\n\n" 109, "</s>" 212 (normal), <0x00> 238, "▁world" 1902.
class Gemma4 : public ::testing::Test {
 protected:
  void SetUp() override {
    CORTEX_NEEDS_REFERENCE_DATA();
    auto f = gguf::file::open(cortex::testing::shared_dir() + "/golden/tokenizer/vocab/ggml-vocab-gemma-4.gguf");
    ASSERT_TRUE(f) << f.error().message;
    auto t = tokenizer::from_gguf(**f);
    ASSERT_TRUE(t) << t.error().message;
    tok_ = std::move(*t);
  }
  std::unique_ptr<tokenizer> tok_;
};

TEST_F(Gemma4, SpecialTokens) {
  const tokenizer& t = *tok_;
  EXPECT_EQ(t.n_vocab(), 262144);
  EXPECT_TRUE(t.add_bos());
  EXPECT_EQ(t.bos_id(), 2);
  EXPECT_EQ(t.encode("a", true).front(), 2);
  EXPECT_TRUE(t.is_eog(1));
  EXPECT_TRUE(t.is_eog(106));
  EXPECT_TRUE(t.is_eog(50));
  // <|tool_response> ends generation, so it is a control token: text unless parse_special.
  EXPECT_EQ(t.encode("<|tool_response>", false, true), std::vector<int32_t>{50});
  EXPECT_NE(t.encode("<|tool_response>", false, false), std::vector<int32_t>{50});
  EXPECT_EQ(t.decode({50}), "");
  // "</s>" stays an ordinary token.
  EXPECT_FALSE(t.is_eog(212));
  EXPECT_EQ(t.decode({212}), "</s>");
  // User-defined tokens are always split out.
  const auto ids = t.encode("x<|channel>y", false, false);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[1], 100);
}

TEST_F(Gemma4, SpacesAndBytes) {
  const tokenizer& t = *tok_;
  // '▁' is a space both ways, and the first token keeps it.
  EXPECT_EQ(t.decode({1902}), " world");
  EXPECT_EQ(t.encode(" world", false), std::vector<int32_t>{1902});
  // A newline run that is a token stays whole.
  EXPECT_EQ(t.encode("\n\n\n", false), std::vector<int32_t>{109});
  // U+10FFFD is no token: one <0xXX> token per UTF-8 byte (F4 8F BF BD).
  EXPECT_EQ(t.encode("\xf4\x8f\xbf\xbd", false), (std::vector<int32_t>{238 + 0xF4, 238 + 0x8F, 238 + 0xBF, 238 + 0xBD}));
  EXPECT_EQ(t.decode({238 + 0xF4, 238 + 0x8F, 238 + 0xBF, 238 + 0xBD}), "\xf4\x8f\xbf\xbd");
}

}  // namespace
}  // namespace cortex
