// Tokenizer contracts beyond the golden cases: special tokens, the
// incremental detokenizer, pre-tokenizer regexes without vocab files
// (expected words derived by hand from the regexes), and load errors.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf.hpp"
#include "gguf/gguf_writer.hpp"
#include "text/pre_tokenizer.hpp"
#include "text/tokenizer.hpp"
#include "tests/text/detokenizer_stream.hpp"
#include "tests/support/golden.hpp"

namespace cortex {
namespace {

const std::string k_vocab_dir = cortex::testing::shared_dir() + "/golden/tokenizer/vocab/";

struct loaded {
  std::unique_ptr<gguf::file> file;
  std::unique_ptr<tokenizer> tok;
};
loaded load(const std::string& name) {
  loaded l;
  auto f = gguf::file::open(k_vocab_dir + "ggml-vocab-" + name + ".gguf");
  EXPECT_TRUE(f) << f.error().message;
  if (!f) return l;
  l.file = std::move(*f);
  auto t = tokenizer::from_gguf(*l.file);
  EXPECT_TRUE(t) << t.error().message;
  if (t) l.tok = std::move(*t);
  return l;
}

TEST(Tokenizer, SpmSpecialTokens) {
  CORTEX_NEEDS_REFERENCE_DATA();
  auto l = load("llama-spm");
  ASSERT_TRUE(l.tok);
  const tokenizer& t = *l.tok;
  EXPECT_EQ(t.n_vocab(), 32000);
  EXPECT_EQ(t.bos_id(), 1);
  EXPECT_EQ(t.eos_id(), 2);
  EXPECT_TRUE(t.add_bos());
  EXPECT_TRUE(t.is_eog(2));
  EXPECT_FALSE(t.is_eog(1));
  const auto plain = t.encode("Hello", false);
  ASSERT_FALSE(plain.empty());
  auto with_bos = t.encode("Hello", true);
  ASSERT_EQ(with_bos.size(), plain.size() + 1);
  EXPECT_EQ(with_bos[0], 1);
  // "<s>" is text unless parse_special; text after a special token gets the space prefix.
  EXPECT_EQ(t.encode("<s>Hello", false, true), with_bos);
  EXPECT_NE(t.encode("<s>Hello", false, false)[0], 1);
  // The first token loses its leading space, unless a BOS (rendered empty) precedes it.
  EXPECT_EQ(t.decode(plain), "Hello");
  EXPECT_EQ(t.decode(with_bos), " Hello");
  EXPECT_EQ(t.token_to_piece(t.vocabulary().find("<0x41>")), "A");
  EXPECT_EQ(t.encode("", true), std::vector<int32_t>{1});
  EXPECT_TRUE(t.encode("", false).empty());
}

TEST(Tokenizer, BpeDefaultsFollowTheFile) {
  CORTEX_NEEDS_REFERENCE_DATA();
  auto gpt2 = load("gpt-2");
  ASSERT_TRUE(gpt2.tok);
  EXPECT_FALSE(gpt2.tok->add_bos());  // file is silent: gpt2-style default is no BOS
  EXPECT_TRUE(gpt2.tok->is_eog(50256));
  EXPECT_EQ(gpt2.tok->encode("Hello", true), gpt2.tok->encode("Hello", false));
  EXPECT_EQ(gpt2.tok->token_to_piece(gpt2.tok->vocabulary().find("\xc4\xa0the")), " the");  // "Ġthe"

  auto ds = load("deepseek-llm");
  ASSERT_TRUE(ds.tok);
  EXPECT_TRUE(ds.tok->add_bos());  // tokenizer.ggml.add_bos_token = true
  EXPECT_EQ(ds.tok->bos_id(), 100000);
  EXPECT_TRUE(ds.tok->is_eog(100001));
  EXPECT_EQ(ds.tok->encode("Hi", true)[0], 100000);

  auto phi = load("phi-3");
  ASSERT_TRUE(phi.tok);
  EXPECT_TRUE(phi.tok->is_eog(32000));  // <|endoftext|> (eos)
  EXPECT_TRUE(phi.tok->is_eog(32007));  // <|end|>
}

TEST(Tokenizer, IncrementalHoldsBackSplitCharacters) {
  CORTEX_NEEDS_REFERENCE_DATA();
  auto l = load("llama-spm");
  ASSERT_TRUE(l.tok);
  const vocab& v = l.tok->vocabulary();
  incremental_detokenizer d(*l.tok);
  // U+D55C is ED 95 9C: three byte-fallback tokens.
  EXPECT_EQ(d.push(v.find("<0xED>")), "");
  EXPECT_EQ(d.push(v.find("<0x95>")), "");
  EXPECT_EQ(d.push(v.find("<0x9C>")), "\xed\x95\x9c");
  // A broken sequence becomes one U+FFFD as soon as it is known to be broken.
  EXPECT_EQ(d.push(v.find("<0xE6>")), "");
  EXPECT_EQ(d.push(v.find("<0x97>")), "");
  EXPECT_EQ(d.push(v.find("\xe2\x96\x81" "a")), "\xef\xbf\xbd a");
  // A dangling lead byte at the end is flushed as U+FFFD.
  EXPECT_EQ(d.push(v.find("<0xF0>")), "");
  EXPECT_EQ(d.flush(), "\xef\xbf\xbd");
}

TEST(Tokenizer, IncrementalContinuationKeepsLeadingSpace) {
  CORTEX_NEEDS_REFERENCE_DATA();
  auto l = load("llama-spm");
  ASSERT_TRUE(l.tok);
  const auto ids = l.tok->encode("Hello world", false);
  std::string pieces;
  for (int32_t id : ids) pieces += l.tok->token_to_piece(id);
  ASSERT_EQ(pieces, " Hello world");
  incremental_detokenizer d(*l.tok, /*continues_text=*/true);
  std::string out;
  for (int32_t id : ids) out += d.push(id);
  EXPECT_EQ(out + d.flush(), " Hello world");
  EXPECT_EQ(stream(*l.tok, ids), "Hello world");
}

TEST(Tokenizer, IncrementalVerbatimSkipsSpaceCleaning) {
  CORTEX_NEEDS_REFERENCE_DATA();
  // gpt-2 cleans " ," to ","; verbatim (grammar-constrained output) keeps
  // exactly the pieces a grammar matched.
  auto l = load("gpt-2");
  ASSERT_TRUE(l.tok);
  ASSERT_TRUE(l.tok->vocabulary().clean_spaces);
  const auto ids = l.tok->encode("{\"a\": \"x , y\" , \"b\": 1}", false);
  incremental_detokenizer cleaned(*l.tok, true), verbatim(*l.tok, true, true);
  std::string out_cleaned, out_verbatim;
  for (int32_t id : ids) {
    out_cleaned += cleaned.push(id);
    out_verbatim += verbatim.push(id);
  }
  EXPECT_EQ(out_verbatim + verbatim.flush(), "{\"a\": \"x , y\" , \"b\": 1}");
  EXPECT_EQ(out_cleaned + cleaned.flush(), "{\"a\": \"x, y\", \"b\": 1}");
}

TEST(Tokenizer, IncrementalSpaceCleaningRandomStreams) {
  CORTEX_NEEDS_REFERENCE_DATA();
  // gpt-2 cleans " ," " 's" ...; streaming must agree with whole-text decode.
  auto l = load("gpt-2");
  ASSERT_TRUE(l.tok);
  const tokenizer& t = *l.tok;
  std::vector<std::vector<int32_t>> pool;
  for (const char* s : {" ", "  ", "'", " '", "s", "m", "re", "ve", "t", "d", "ll", ",", ".", "?", "!", "a",
                        " word", "\xe6\x97\xa5", "\xc3\xa9", "\n"}) {
    pool.push_back(t.encode(s, false));
    ASSERT_FALSE(pool.back().empty()) << s;
  }
  std::mt19937 rng(1234);
  std::uniform_int_distribution<size_t> pick(0, pool.size() - 1), len(1, 24);
  int streams_with_cleaning = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<int32_t> ids;
    const size_t n = len(rng);
    for (size_t i = 0; i < n; ++i) {
      const auto& p = pool[pick(rng)];
      ids.insert(ids.end(), p.begin(), p.end());
    }
    const std::string whole = t.decode(ids);
    std::string raw;
    for (int32_t id : ids) raw += t.token_to_piece(id);
    if (raw != whole) ++streams_with_cleaning;
    ASSERT_EQ(stream(t, ids), whole) << "iteration " << iter;
  }
  EXPECT_GT(streams_with_cleaning, 1000);  // the cleaning rules were exercised
}

std::vector<std::string> words(pre_tokenizer_kind k, const std::string& text) { return pre_tokenize(k, text); }

TEST(PreTokenizer, Llama3AndQwen2Regexes) {
  using v = std::vector<std::string>;
  const std::string text = "Hello 123456 world's\n\n";
  EXPECT_EQ(words(pre_tokenizer_kind::llama3, text), (v{"Hello", " ", "123", "456", " world", "'s", "\n\n"}));
  EXPECT_EQ(words(pre_tokenizer_kind::qwen2, text),
            (v{"Hello", " ", "1", "2", "3", "4", "5", "6", " world", "'s", "\n\n"}));
  // (?i:'re) vs GPT-2's case-sensitive 're
  EXPECT_EQ(words(pre_tokenizer_kind::llama3, "WE'RE"), (v{"WE", "'RE"}));
  EXPECT_EQ(words(pre_tokenizer_kind::gpt2, "WE'RE"), (v{"WE", "'", "RE"}));
  // [^\r\n\p{L}\p{N}]?\p{L}+ takes any one non-letter prefix; ' ?[^\s\p{L}\p{N}]+[\r\n]*' keeps newlines
  EXPECT_EQ(words(pre_tokenizer_kind::llama3, "(x) ...\n  y"), (v{"(x", ")", " ...\n", " ", " y"}));
  // \s+(?!\S) leaves the last space for the next word; trailing white space stays whole
  EXPECT_EQ(words(pre_tokenizer_kind::qwen2, "a   b  "), (v{"a", "  ", " b", "  "}));
  EXPECT_EQ(words(pre_tokenizer_kind::llama3, "\xc3\xa9t\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87"),
            (v{"\xc3\xa9t\xc3\xa9", " \xe4\xb8\xad\xe6\x96\x87"}));
  EXPECT_TRUE(words(pre_tokenizer_kind::llama3, "").empty());
}

TEST(PreTokenizer, Qwen35LetterRunsTakeCombiningMarks) {
  using v = std::vector<std::string>;
  const std::string acute = "\xcc\x81";  // U+0301 COMBINING ACUTE ACCENT (Mn)
  // [\p{L}\p{M}]+ keeps "cafe" + U+0301 whole; Qwen2's \p{L}+ leaves the mark
  // to the symbol alternative.
  EXPECT_EQ(words(pre_tokenizer_kind::qwen35, "cafe" + acute + " "), (v{"cafe" + acute, " "}));
  EXPECT_EQ(words(pre_tokenizer_kind::qwen2, "cafe" + acute + " "), (v{"cafe", acute, " "}));
  // The optional non-letter prefix may precede a mark: " ́x" and "!́" are one word each.
  EXPECT_EQ(words(pre_tokenizer_kind::qwen35, " " + acute + "x!" + acute), (v{" " + acute + "x", "!" + acute}));
  // Otherwise Qwen2's rules: single digits, case-insensitive contractions.
  EXPECT_EQ(words(pre_tokenizer_kind::qwen35, "a12 WE'RE"), (v{"a", "1", "2", " WE", "'RE"}));
}

TEST(PreTokenizer, DeepseekCoderStages) {
  using v = std::vector<std::string>;
  // [\r\n], then \s?\p{L}+, then \s?\p{P}+ ('=' is a symbol, ';' punctuation), then single digits.
  EXPECT_EQ(words(pre_tokenizer_kind::deepseek_coder, "int x = 10;\n"),
            (v{"int", " x", " = ", "1", "0", ";", "\n"}));
  // [一-龥ࠀ-一가-퟿]+ also groups the symbols in that range (U+2605 BLACK STAR).
  EXPECT_EQ(words(pre_tokenizer_kind::deepseek_coder, "\xe2\x98\x85\xe2\x98\x85+"),
            (v{"\xe2\x98\x85\xe2\x98\x85", "+"}));
}

TEST(PreTokenizer, LineRunsSplitOnlyAtNewlines) {
  using v = std::vector<std::string>;
  EXPECT_EQ(words(pre_tokenizer_kind::line_runs, "a b, 12\n\nc\r\n"), (v{"a b, 12", "\n\n", "c\r", "\n"}));
}

TEST(PreTokenizer, NamesMapToRegexFamilies) {
  EXPECT_EQ(pre_tokenizer_from_name("llama-bpe")->kind, pre_tokenizer_kind::llama3);
  EXPECT_TRUE(pre_tokenizer_from_name("llama-bpe")->ignore_merges);
  EXPECT_EQ(pre_tokenizer_from_name("qwen2")->kind, pre_tokenizer_kind::qwen2);
  EXPECT_FALSE(pre_tokenizer_from_name("qwen2")->clean_spaces);
  EXPECT_EQ(pre_tokenizer_from_name("qwen35")->kind, pre_tokenizer_kind::qwen35);
  EXPECT_FALSE(pre_tokenizer_from_name("qwen35")->clean_spaces);
  EXPECT_EQ(pre_tokenizer_from_name("deepseek-coder")->kind, pre_tokenizer_kind::deepseek_coder);
  EXPECT_FALSE(pre_tokenizer_from_name("deepseek-coder")->clean_spaces);
  EXPECT_TRUE(pre_tokenizer_from_name("command-r").has_value());
  EXPECT_TRUE(pre_tokenizer_from_name("refact").has_value());
  EXPECT_TRUE(pre_tokenizer_from_name("mpt").has_value());
  EXPECT_EQ(pre_tokenizer_from_name("modern-bert")->kind, pre_tokenizer_kind::gpt2);  // llama.cpp splits ModernBERT's as GPT-2's
  const auto gemma4 = pre_tokenizer_from_name("gemma4");
  EXPECT_EQ(gemma4->kind, pre_tokenizer_kind::line_runs);
  EXPECT_TRUE(gemma4->escape_whitespaces);
  EXPECT_FALSE(gemma4->byte_encode);
  EXPECT_TRUE(gemma4->clean_spaces);
  EXPECT_FALSE(pre_tokenizer_from_name("no-such-pre").has_value());
}

// Builds a tiny GGUF with the given tokenizer keys and returns the error.
std::string load_error(const std::function<void(gguf::writer&)>& fill) {
  gguf::writer w;
  fill(w);
  const std::vector<uint8_t> bytes = w.build();
  auto f = gguf::file::parse(bytes.data(), bytes.size(), "mem");
  if (!f) return "gguf: " + f.error().message;
  auto t = tokenizer::from_gguf(**f);
  return t ? std::string() : t.error().message;
}

TEST(Tokenizer, LoadErrorsNameTheKey) {
  const std::vector<std::string> toks = {"<unk>", "<s>", "</s>", "a", "b", "ab"};
  EXPECT_NE(load_error([](gguf::writer&) {}).find("tokenizer.ggml.model"), std::string::npos);
  EXPECT_NE(load_error([&](gguf::writer& w) { w.set_string("tokenizer.ggml.model", "t5"); }).find("t5"),
            std::string::npos);
  EXPECT_NE(load_error([&](gguf::writer& w) { w.set_string("tokenizer.ggml.model", "llama"); })
                .find("tokenizer.ggml.tokens"),
            std::string::npos);
  EXPECT_NE(load_error([&](gguf::writer& w) {
              w.set_string("tokenizer.ggml.model", "llama");
              w.set_string_array("tokenizer.ggml.tokens", toks);
              w.set_f32_array("tokenizer.ggml.scores", {0, 0});
            }).find("tokenizer.ggml.scores"),
            std::string::npos);
  // add_bos_token needs a BOS token; gpt2's default BOS (11) is outside these 6 tokens.
  EXPECT_NE(load_error([&](gguf::writer& w) {
              w.set_string("tokenizer.ggml.model", "gpt2");
              w.set_string_array("tokenizer.ggml.tokens", toks);
              w.set_string_array("tokenizer.ggml.merges", {"a b"});
              w.set_bool("tokenizer.ggml.add_bos_token", true);
            }).find("add_bos_token"),
            std::string::npos);
  EXPECT_NE(load_error([&](gguf::writer& w) {
              w.set_string("tokenizer.ggml.model", "gpt2");
              w.set_string_array("tokenizer.ggml.tokens", toks);
            }).find("tokenizer.ggml.merges"),
            std::string::npos);
  EXPECT_NE(load_error([&](gguf::writer& w) {
              w.set_string("tokenizer.ggml.model", "gemma4");
              w.set_string_array("tokenizer.ggml.tokens", toks);
            }).find("tokenizer.ggml.merges"),
            std::string::npos);
  // Gemma 4 always adds BOS, and has no default BOS id to fall back on.
  EXPECT_NE(load_error([&](gguf::writer& w) {
              w.set_string("tokenizer.ggml.model", "gemma4");
              w.set_string_array("tokenizer.ggml.tokens", toks);
              w.set_string_array("tokenizer.ggml.merges", {"a b"});
              w.set_bool("tokenizer.ggml.add_bos_token", false);
            }).find("BOS"),
            std::string::npos);
  EXPECT_NE(load_error([&](gguf::writer& w) {
              w.set_string("tokenizer.ggml.model", "gpt2");
              w.set_string("tokenizer.ggml.pre", "martian");
              w.set_string_array("tokenizer.ggml.tokens", toks);
              w.set_string_array("tokenizer.ggml.merges", {"a b"});
            }).find("martian"),
            std::string::npos);
  // A minimal SPM vocabulary loads; a stored id outside the vocabulary
  // (0xFFFFFFFF means "none" in real files) keeps the default.
  EXPECT_EQ(load_error([&](gguf::writer& w) {
              w.set_string("tokenizer.ggml.model", "llama");
              w.set_string_array("tokenizer.ggml.tokens", toks);
              w.set_u32("tokenizer.ggml.padding_token_id", 0xFFFFFFFFu);
              w.set_u32("tokenizer.ggml.bos_token_id", 99);
            }),
            "");
}

}  // namespace
}  // namespace cortex
