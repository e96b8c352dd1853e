// Pre-tokenizers of byte-level BPE vocabularies: split text into words
// before BPE merges, as the regexes named by `tokenizer.ggml.pre` do.
//
// Each regex is hand-coded over code points (no std::regex). A pre-tokenizer
// is a list of stages; every stage splits every current piece into its
// matches and the text between matches (nothing is dropped), like the
// reference tokenizer (llama.cpp unicode_regex_split).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cortex {

enum class pre_tokenizer_kind {
  default_bpe,     // "default": punctuation runs, GPT-2 regex, digit runs, 3-digit groups
  gpt2,            // GPT-2 regex
  llama3,          // Llama-3 regex (\p{N}{1,3}, case-insensitive contractions)
  qwen2,           // Llama-3 regex with single digits
  qwen35,          // Qwen2 regex whose letter runs also take combining marks (\p{M})
  gpt4o,           // o200k (gpt-oss, "gpt-4o"): cased-letter runs, \p{N}{1,3}, symbols with trailing \r\n/
  falcon,          // punctuation runs, GPT-2 regex, 3-digit groups
  starcoder,       // single digits, then GPT-2 regex
  deepseek_llm,    // DeepSeek LLM's six explicit-range regexes
  deepseek_coder,  // DeepSeek Coder: [\r\n], \s?\p{L}+, \s?\p{P}+, CJK runs, single digits
  line_runs,       // Gemma 4: runs of non-newlines and runs of newlines, nothing finer
};

// Properties a `tokenizer.ggml.pre` name implies (llama.cpp conventions).
struct pre_tokenizer_info {
  pre_tokenizer_kind kind = pre_tokenizer_kind::default_bpe;
  bool clean_spaces = true;    // detokenizer removes " ," " 's" ... artifacts
  bool ignore_merges = false;  // a word that is itself a token skips merging
  bool add_bos = false;        // default for add_bos when the file is silent
  // Gemma 4's SentencePiece-style BPE sets both: escape_whitespaces turns
  // ' ' into '▁' before splitting (and back when detokenizing); byte_encode
  // = false merges raw UTF-8 instead of the GPT-2 byte alphabet, with
  // <0xXX> tokens as the byte fallback.
  bool escape_whitespaces = false;
  bool byte_encode = true;
};

// nullopt for a name this tokenizer does not know.
std::optional<pre_tokenizer_info> pre_tokenizer_from_name(std::string_view name);

// Splits UTF-8 `text` into words (UTF-8, concatenating back to the input
// after invalid bytes are replaced by U+FFFD). Empty text gives no words.
std::vector<std::string> pre_tokenize(pre_tokenizer_kind kind, std::string_view text);

}  // namespace cortex
