// Building larger GBNF grammars out of smaller ones (chat/'s tool-call
// grammars: several JSON-schema grammars in one family's call syntax, free
// text up to a trigger, a reasoning block before an answer).
#pragma once

#include <string>
#include <string_view>

namespace cortex {

// `gbnf` with every rule name (definitions and references) prefixed, so
// that several grammars (each with its own `root`, `ws`, ...) can live in
// one text: `root` becomes `<prefix>root`.
std::string gbnf_prefix_rules(std::string_view gbnf, std::string_view prefix);

// Rules `<prefix>0`, `<prefix>1`, ... that generate any text (valid UTF-8)
// that does not contain `marker`, then, once `marker` is written, continue
// with `next` (a GBNF expression). With `allow_end` the text may also end
// before the marker. Start at the rule `<prefix>0`. REQUIRES: marker not
// empty, valid UTF-8.
std::string gbnf_text_until(std::string_view marker, const std::string& prefix, const std::string& next, bool allow_end);

}  // namespace cortex
