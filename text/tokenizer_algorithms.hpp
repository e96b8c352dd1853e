// The two segmentation algorithms behind tokenizer::encode, on one
// fragment of text that holds no special token. Internal to text/.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "text/vocab.hpp"

namespace cortex {

// SentencePiece (llama.cpp's "SPM"): `text` already has spaces escaped as
// '▁'. Repeatedly merges the adjacent pair whose concatenation is the
// highest-scoring token (leftmost on ties); pieces that are not tokens
// fall back to byte tokens. Appends to `out`.
void spm_encode(const vocab& v, std::string_view text, std::vector<int32_t>& out);

// BPE: pre-tokenizes, maps bytes to the GPT-2 alphabet (unless
// v.pre.byte_encode is false: Gemma 4 merges raw UTF-8 whose spaces the
// caller escaped as '▁'), then merges by rank (lowest first, leftmost on
// ties) within each word.
void bpe_encode(const vocab& v, std::string_view text, std::vector<int32_t>& out);

// WordPiece (llama.cpp's "WPM", BERT): normalises (lowercase and accent
// stripping as the vocabulary says; control characters dropped), splits
// into words at white space and around every punctuation character, ASCII
// symbol and CJK ideograph, then spells each word '▁' + word greedily with
// the longest token at each byte position. A word that cannot be spelt
// completely becomes one unk token. Appends to `out`.
void wpm_encode(const vocab& v, std::string_view text, std::vector<int32_t>& out);

}  // namespace cortex
