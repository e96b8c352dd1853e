// The token mask (grammar/token_mask.hpp) against a brute-force
// check: for every token of the vocabulary, feed its bytes to the matcher
// one by one. Along random walks through each grammar (tokens drawn among
// the allowed ones, fixed seeds), the trie walk with its cache must allow
// exactly the tokens the brute force allows, on a real 32k vocabulary and
// on a synthetic one rich in partial UTF-8 pieces.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "gguf/gguf.hpp"
#include "grammar/token_mask.hpp"
#include "model/sampler.hpp"
#include "text/tokenizer.hpp"
#include "tests/support/grammar_brute_force.hpp"
#include "tests/support/golden.hpp"

namespace cortex {
namespace {

bool allowed(const std::vector<uint64_t>& mask, int32_t id) { return (mask[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1; }

const char* k_json_gbnf = R"(root ::= object
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( string ":" ws value ( "," ws string ":" ws value )* )? "}" ws
array ::= "[" ws ( value ( "," ws value )* )? "]" ws
string ::= "\"" ( [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\"" ws
number ::= "-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ws
ws ::= [ \n]{0,2}
)";

const std::vector<std::string>& grammars() {
  static const std::vector<std::string> k = {
      k_json_gbnf,
      R"(root ::= "name: " [A-Z] [a-z]{1,8} ", age: " [1-9] [0-9]? "\n")",
      R"(root ::= ( [à-ÿ] | [\U0001F600-\U0001F64F] | "€" )+ ".")",
      R"(root ::= [^a-z]* "z" | "ab" .)",
      R"(root ::= ("yes" | "no" | "maybe") ("," " "? ("yes" | "no"))*)",
  };
  return k;
}

// Random walks: at each step the masks must agree; then a random allowed
// token is taken (an end token restarts the walk).
void check_walks(const std::shared_ptr<const vocab_trie>& trie, int n_steps, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (const std::string& gbnf : grammars()) {
    auto g = grammar::compile(gbnf);
    ASSERT_TRUE(g) << g.error().message;
    grammar_matcher m(*g);
    token_masker masker(trie, m);
    grammar_matcher::state s = m.initial();
    std::vector<uint64_t> mask;
    for (int step = 0; step < n_steps; ++step) {
      const size_t n_allowed = masker.compute(s, mask);
      const std::vector<uint64_t> expected = testing::brute_force_mask(m, *trie, s);
      for (int32_t id = 0; id < trie->n_vocab(); ++id) {
        ASSERT_EQ(allowed(mask, id), allowed(expected, id))
            << "grammar " << gbnf << "\nstep " << step << ", token " << id << " '" << trie->token_bytes(id) << "'";
      }
      ASSERT_GT(n_allowed, 0u) << gbnf << " step " << step;
      std::vector<int32_t> ids;
      for (int32_t id = 0; id < trie->n_vocab(); ++id) {
        if (allowed(mask, id)) ids.push_back(id);
      }
      const int32_t pick = ids[rng() % ids.size()];
      if (trie->is_eog(pick)) {
        s = m.initial();
      } else {
        ASSERT_TRUE(m.advance(s, trie->token_bytes(pick)));
      }
    }
  }
}

TEST(GrammarMask, TrieEqualsBruteForceOnSpmVocabulary) {
  CORTEX_NEEDS_REFERENCE_DATA();
  auto f = gguf::file::open(cortex::testing::shared_dir() + "/golden/tokenizer/vocab/ggml-vocab-llama-spm.gguf");
  ASSERT_TRUE(f) << f.error().message;
  auto t = tokenizer::from_gguf(**f);
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_GE((*t)->n_vocab(), 32000);
  check_walks(vocab_trie::from_tokenizer(**t), 12, 42);
}

TEST(GrammarMask, TrieEqualsBruteForceOnPartialUtf8Vocabulary) {
  const std::vector<std::string> alphabet = {"a", "b", "z", "{", "}", "\"", ":", ",", " ", "1", "0", "-", ".",
                                             "\\", "n", "\n", "\xc3", "\xa9", "\xbf", "\xe2", "\x82", "\xac",
                                             "\xf0", "\x9f", "\x98", "\x80", "y", "e", "s"};
  std::mt19937_64 rng(7);
  std::vector<std::string> bytes = {"", ""};  // 0: end of generation, 1: a control token
  for (int b = 0; b < 256; ++b) bytes.emplace_back(1, static_cast<char>(b));
  for (int i = 0; i < 3000; ++i) {
    std::string s;
    const size_t len = 1 + rng() % 5;
    for (size_t k = 0; k < len; ++k) s += alphabet[rng() % alphabet.size()];
    bytes.push_back(s);
  }
  bytes.push_back("\xc3\xa9");  // whole characters of the UTF-8 grammar
  bytes.push_back("\xe2\x82\xac");
  check_walks(std::make_shared<const vocab_trie>(bytes, std::vector<int32_t>{0}), 60, 11);
}

TEST(GrammarMask, EndOnlyWhenCompleteAndCacheIsUsed) {
  auto g = grammar::compile(R"(root ::= "a"+)");
  ASSERT_TRUE(g);
  grammar_matcher m(*g);
  auto trie = std::make_shared<const vocab_trie>(std::vector<std::string>{"", "a", "aa", "b", ""}, std::vector<int32_t>{0});
  token_masker masker(trie, m);
  std::vector<uint64_t> mask;
  grammar_matcher::state s = m.initial();
  EXPECT_EQ(masker.compute(s, mask), 2u);  // a, aa; not the end (nothing yet), not b, not the control token 4
  EXPECT_FALSE(allowed(mask, 0));
  ASSERT_TRUE(m.advance(s, "a"));
  EXPECT_EQ(masker.compute(s, mask), 3u);  // a, aa and the end
  EXPECT_TRUE(allowed(mask, 0));
  EXPECT_FALSE(allowed(mask, 4));
  ASSERT_TRUE(m.advance(s, "aa"));
  masker.compute(s, mask);
  EXPECT_GE(masker.cache_hits(), 1u);  // the same stack as one token ago
}

// The masked sampler never draws a token the grammar forbids: random
// logits, greedy and sampled draws (with top-k / top-p / min-p), every
// drawn token checked byte by byte against the grammar.
TEST(GrammarMask, MaskedSamplerDrawsOnlyAllowedTokens) {
  CORTEX_NEEDS_REFERENCE_DATA();
  auto f = gguf::file::open(cortex::testing::shared_dir() + "/golden/tokenizer/vocab/ggml-vocab-llama-spm.gguf");
  ASSERT_TRUE(f) << f.error().message;
  auto t = tokenizer::from_gguf(**f);
  ASSERT_TRUE(t) << t.error().message;
  auto trie = vocab_trie::from_tokenizer(**t);
  const int n_vocab = trie->n_vocab();
  std::mt19937 rng(5);
  std::normal_distribution<float> noise(0.0f, 3.0f);
  std::vector<float> logits(static_cast<size_t>(n_vocab));
  for (const std::string& gbnf : grammars()) {
    auto g = grammar::compile(gbnf);
    ASSERT_TRUE(g);
    for (const float temperature : {0.0f, 0.8f, 1.5f}) {
      grammar_matcher m(*g);
      token_masker masker(trie, m);
      sampling_params p;
      p.temperature = temperature;
      p.seed = 99;
      p.top_k = temperature > 1.0f ? 40 : 0;
      p.top_p = temperature > 1.0f ? 0.9f : 1.0f;
      p.min_p = temperature == 0.8f ? 0.05f : 0.0f;
      sampler smp(p);
      grammar_matcher::state s = m.initial();
      std::vector<uint64_t> mask;
      for (int step = 0; step < 40; ++step) {
        for (float& l : logits) l = noise(rng);
        ASSERT_GT(masker.compute(s, mask), 0u);
        const int32_t id = smp.sample(logits.data(), n_vocab, {}, mask.data()).id;
        if (trie->is_eog(id)) {
          ASSERT_TRUE(grammar_matcher::is_complete(s)) << gbnf << ": end drawn before the grammar completes";
          break;
        }
        ASSERT_TRUE(m.advance(s, trie->token_bytes(id))) << gbnf << ": drew forbidden token " << id;
      }
    }
  }
}

}  // namespace
}  // namespace cortex

namespace cortex {
namespace {

// Control tokens are matched by their text, as llama.cpp's grammar does
// (token_to_piece with special = true): a grammar that writes a chat
// format's marker can use the model's own marker token. BOS, unknown and
// end-of-generation tokens stay out of the text.
TEST(GrammarMask, ControlTokensMatchByTheirText) {
  CORTEX_NEEDS_REFERENCE_DATA();
  auto f = gguf::file::open(cortex::testing::shared_dir() + "/golden/tokenizer/vocab/ggml-vocab-qwen3.gguf");
  ASSERT_TRUE(f) << f.error().message;
  auto t = tokenizer::from_gguf(**f);
  ASSERT_TRUE(t) << t.error().message;
  int32_t im_start = -1;
  for (int32_t id = 0; id < (*t)->n_vocab(); ++id) {
    if ((*t)->token_to_piece(id) == "<|im_start|>") im_start = id;
  }
  ASSERT_GE(im_start, 0);
  ASSERT_EQ((*t)->rendered_piece(im_start), "");  // a control token: decode() shows nothing
  auto trie = vocab_trie::from_tokenizer(**t);
  EXPECT_EQ(trie->token_bytes(im_start), "<|im_start|>");
  for (int32_t id : trie->eog_ids()) EXPECT_EQ(trie->token_bytes(id), "") << id;
  auto g = grammar::compile(R"(root ::= "<|im_start|>" "x")");
  ASSERT_TRUE(g);
  grammar_matcher m(*g);
  token_masker masker(trie, m);
  std::vector<uint64_t> mask;
  grammar_matcher::state s = m.initial();
  masker.compute(s, mask);
  EXPECT_TRUE(allowed(mask, im_start));

  auto spm = gguf::file::open(cortex::testing::shared_dir() + "/golden/tokenizer/vocab/ggml-vocab-llama-spm.gguf");
  ASSERT_TRUE(spm);
  auto ts = tokenizer::from_gguf(**spm);
  ASSERT_TRUE(ts);
  auto trie_spm = vocab_trie::from_tokenizer(**ts);
  EXPECT_EQ(trie_spm->token_bytes((*ts)->bos_id()), "");  // <s>
  EXPECT_EQ(trie_spm->token_bytes(0), "");                // <unk>
}

}  // namespace
}  // namespace cortex
