// The vocabulary of a GGUF file's tokenizer: token texts, scores, types,
// BPE merges, special ids and the add-BOS/EOS defaults, read from the
// `tokenizer.ggml.*` metadata with llama.cpp's conventions (the reference
// our golden data comes from).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/expected.hpp"
#include "gguf/gguf.hpp"
#include "text/pre_tokenizer.hpp"
#include "text/string_map.hpp"

namespace cortex {

enum class vocab_kind {
  spm,  // "llama": SentencePiece pieces with '▁' for space, scores, <0xXX> bytes
  bpe,  // "gpt2": byte-level BPE with ranked merges and a pre-tokenizer;
        // "gemma4": BPE over SentencePiece-style pieces (pre-tokenizer "gemma4")
  wpm,  // "bert": WordPiece; word-initial pieces start with '▁', continuation
        // pieces ("##x" in the original vocabulary) are stored bare
};

// Token attributes (bit flags). GGUF token_type 1..6 map to normal,
// unknown, control, user_defined, unused, byte; lstrip/rstrip are set by
// model-specific rules (they strip white space next to a special token).
enum token_attr : uint32_t {
  attr_undefined = 0,
  attr_unknown = 1u << 0,
  attr_unused = 1u << 1,
  attr_normal = 1u << 2,
  attr_control = 1u << 3,
  attr_user_defined = 1u << 4,
  attr_byte = 1u << 5,
  attr_lstrip = 1u << 6,
  attr_rstrip = 1u << 7,
};

struct vocab {
  // Reads and validates the tokenizer metadata. Errors name the key.
  static expected<vocab> from_gguf(const gguf::file& f);

  vocab_kind kind = vocab_kind::spm;
  std::string model_name;  // tokenizer.ggml.model
  std::string pre_name;    // tokenizer.ggml.pre ("" when absent; "gemma4" for model gemma4)
  pre_tokenizer_info pre;  // bpe only

  std::vector<std::string> texts;  // [n_tokens] token text as stored
  std::vector<float> scores;       // [n_tokens] (0 when the file has none)
  std::vector<uint32_t> attrs;     // [n_tokens] token_attr bits

  // -1 when absent.
  int32_t bos_id = -1, eos_id = -1, unk_id = -1, pad_id = -1, eot_id = -1, eom_id = -1;
  // Fill-in-the-middle: prefix, suffix, middle, pad, repository, file separator.
  int32_t fim_pre_id = -1, fim_suf_id = -1, fim_mid_id = -1, fim_pad_id = -1, fim_rep_id = -1, fim_sep_id = -1;
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;  // spm: a space is put before text that starts a fragment
  bool clean_spaces = false;      // detokenize removes " ," " 's" style artifacts
  bool add_sep = false;           // a pair (query, document) is joined with sep_id (wpm default; tokenizer.ggml.add_sep_token)
  // wpm: BERT's normaliser (tokenizer.ggml.normalizer.*). Both default to
  // true; strip_accents defaults to lowercase when only that is given.
  bool lowercase = true;
  bool strip_accents = true;
  // wpm: [SEP], appended after the text by encode(add_special); -1 when absent.
  int32_t sep_id = -1;
  // Longest token text in bytes (wpm's greedy match looks no further).
  int32_t max_token_len = 0;

  std::vector<int32_t> eog_ids;  // sorted: ids that end generation
  // Tokens matched verbatim in input text before tokenizing (control,
  // unknown and user-defined), longest text first.
  std::vector<int32_t> special_ids;

  int32_t n_tokens() const { return static_cast<int32_t>(texts.size()); }
  bool has_attr(int32_t id, uint32_t a) const { return (attrs[static_cast<size_t>(id)] & a) != 0; }
  // Id of the token whose text is exactly `text`, or -1.
  int32_t find(std::string_view text) const;
  // Rank of the merge "left right" (lower merges first), or -1.
  int32_t merge_rank(std::string_view left, std::string_view right) const;
  // spm: the token for a raw byte (<0xXX>, else the one-byte text, else
  // unk; -1 if none). bpe: the token for the byte's alphabet character, or
  // with pre.byte_encode = false the <0xXX> token (-1 if none).
  int32_t byte_token(uint8_t byte) const { return byte_tokens_[byte]; }

 private:
  string_map token_to_id_;
  string_map merge_ranks_;  // key "left right"
  int32_t byte_tokens_[256] = {};
};

}  // namespace cortex
