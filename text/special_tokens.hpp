// llama.cpp's rules (as of de3ff81, 2026-09) that recognise special tokens
// by their text when the GGUF keys do not name them: the EOT, EOM and FIM
// ids, the set of end-of-generation tokens, and the attribute changes that
// come with them. Attributes matter beyond generation: a token that becomes
// a control token is no longer split out of plain text (parse_special =
// false) and detokenizes to nothing. One deliberate difference: "</s>" is
// not recognised by its text (see special_tokens.cpp). Internal to text/.
#pragma once

#include "text/vocab.hpp"

namespace cortex {

// REQUIRES: v.texts and v.attrs filled, the ids stored in the file already
// read (a set id is kept). Sets the missing eot/eom/fim ids, marks the
// recognised tokens as control tokens, fills v.eog_ids (sorted) and applies
// llama.cpp's per-family fixes: gpt-oss's channel tokens render as text,
// "<|end|>" does not end generation next to "<|return|>"/"<|call|>" (and
// next to "<|calls|>"/"<|flush|>"), and "</s>" neither ends generation nor
// is special in vocabularies with "<|tool_response>" (Gemma 4).
void detect_special_tokens(vocab& v);

}  // namespace cortex
