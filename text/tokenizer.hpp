// Text <-> token ids for GGUF vocabularies, matching llama.cpp (the source
// of our golden data): SentencePiece ("llama"), byte-level BPE ("gpt2")
// with the pre-tokenizers of text/pre_tokenizer.hpp, and Gemma 4's BPE over
// SentencePiece-style pieces ("gemma4"), and WordPiece ("bert").
//
// A tokenizer is immutable after construction; all const methods may be
// called from any number of threads at once. Nothing here throws.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/expected.hpp"
#include "gguf/gguf.hpp"
#include "text/vocab.hpp"

namespace cortex {

class tokenizer {
 public:
  // Errors name the missing or inconsistent tokenizer.ggml.* key.
  static expected<std::unique_ptr<tokenizer>> from_gguf(const gguf::file& f);
  explicit tokenizer(vocab v);

  // add_special: BOS/EOS as the vocabulary says (add_bos / add_eos).
  // parse_special: text of control tokens (e.g. "<s>") becomes the token;
  // user-defined tokens are always matched. Invalid UTF-8 is accepted (SPM
  // falls back to byte tokens, BPE reads invalid bytes as U+FFFD).
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special = false) const;

  // A text pair as llama-server frames a rerank prompt for a model without a
  // rerank template: BOS (add_bos), first, EOS (add_eos; SEP when there is
  // no EOS), SEP (add_sep), second, EOS (add_eos). For WordPiece:
  // [CLS] first [SEP] second. Special-token text is not parsed.
  std::vector<int32_t> encode_pair(std::string_view first, std::string_view second) const;

  // The bytes token `id` stands for: byte tokens give the raw byte, SPM and
  // Gemma 4 '▁' becomes ' ', byte-level BPE characters map back to bytes;
  // control and user-defined tokens give their text. Empty for ids out of
  // range.
  std::string token_to_piece(int32_t id) const;

  // llama.cpp's detokenize(remove_special = false, unparse_special = false):
  // pieces concatenated, control/unknown tokens render as nothing, SPM drops
  // one leading space of the first token, and vocabularies with clean_spaces
  // remove " ?", " !", " .", " ," and " 's"-style spaces. Ids out of range
  // render as nothing.
  std::string decode(const std::vector<int32_t>& ids) const;

  int32_t n_vocab() const { return vocab_.n_tokens(); }
  int32_t bos_id() const { return vocab_.bos_id; }
  int32_t eos_id() const { return vocab_.eos_id; }
  bool add_bos() const { return vocab_.add_bos; }
  // End of generation: eos, eot, eom and well-known end-of-turn tokens.
  bool is_eog(int32_t id) const;
  const cortex::vocab& vocabulary() const { return vocab_; }

  // Piece as decode() renders it (empty for control/unknown tokens).
  const std::string& rendered_piece(int32_t id) const;
  // Piece as llama.cpp's token_to_piece(special = true) renders it: a control
  // token's own text too (a chat format's markers: "<|channel|>",
  // "<|im_start|>"), except BOS; unknown tokens stay empty. What a grammar
  // matches, and what the session shows a parser or a grammar's output.
  const std::string& special_piece(int32_t id) const;
  // Applies the clean_spaces rules to `text` in place (no-op when the
  // vocabulary does not use them).
  void clean_spaces(std::string& text) const;

 private:
  cortex::vocab vocab_;
  std::vector<std::string> pieces_;  // [n_vocab] token_to_piece
};

// Streams detokenized text in whole UTF-8 characters. The concatenation of
// every push() and the final flush() equals tokenizer::decode of all ids
// when that decode is valid UTF-8; invalid sequences come out as U+FFFD.
// Every returned chunk is valid UTF-8. Holds a reference to the tokenizer,
// which must outlive it. Not thread-safe (one per stream).
//
// continues_text = true is for tokens that follow earlier text (generated
// tokens after a prompt): the first token keeps its leading space, so the
// output equals the concatenated token_to_piece bytes (after space
// cleaning), which is what llama.cpp prints while generating.
// verbatim = true skips the space cleaning: the output is exactly the
// rendered pieces, as a grammar (grammar/) matched them.
class incremental_detokenizer {
 public:
  explicit incremental_detokenizer(const tokenizer& t, bool continues_text = false, bool verbatim = false);
  // Returns newly completed text (possibly empty).
  std::string push(int32_t id);
  // Remaining text at the end; the detokenizer is then reset for reuse.
  std::string flush();

 private:
  std::string take_valid(bool at_end);

  const tokenizer& tok_;
  bool continues_text_;
  bool verbatim_;
  bool first_ = true;
  std::string raw_;      // rendered pieces not yet space-cleaned
  std::string pending_;  // cleaned bytes not yet returned (incomplete UTF-8)
};

}  // namespace cortex
