// A compiled grammar for constrained decoding: GBNF text (llama.cpp's
// grammar syntax) parsed once per request into flat rule arrays that the
// matcher (grammar_matcher.hpp) walks as a pushdown automaton.
//
// Syntax accepted (GBNF-compatible):
//   name ::= alternatives         rule (names: [a-zA-Z0-9-_]+; `root` starts)
//   a b c                         sequence
//   a | b                         alternation
//   ( ... )                       group
//   "lit\n\"\x41\u00e9"           literal (escapes \n \r \t \\ \" \' \[ \]
//                                 \xHH \uHHHH \UHHHHHHHH)
//   [a-z0-9_] [^"\\]              character class, negated with ^
//   .                             any character
//   x* x+ x? x{m} x{m,} x{m,n}    repetition
//   # comment                     to the end of the line
// Newlines end a rule only where the next line starts a new `name ::=`;
// inside parentheses they are free.
//
// Errors (invalid_param) name the line and column and what was expected;
// undefined rules, a missing `root`, left recursion (which would make the
// matcher loop) and grammars past the size caps are errors too.
//
// Thread: immutable after compile(); share it freely (shared_ptr<const>).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/expected.hpp"

namespace cortex {

// One element of a rule. A rule is a list of alternatives, each a sequence
// of elements ended by `alt` (another alternative follows) or `end` (the
// rule's last one). A character class is a run: `chr`/`chr_not` (the first
// code point; `chr_not` negates the whole run), optional `rng_upper` (the
// previous element is a range's lower bound) and `chr_alt` (one more code
// point or range start); `chr_any` is `.`. A compiled grammar holds each
// run canonical: its ranges sorted and merged, each a pair (lower,
// rng_upper upper), so matching a class of any size is a binary search and
// the run's end is one lookup.
enum class gelem_type : uint8_t { end, alt, rule_ref, chr, chr_not, rng_upper, chr_alt, chr_any };

struct gelem {
  gelem_type type;
  uint32_t value;  // code point, or rule id for rule_ref
};

class grammar {
 public:
  // Caps on what one request may compile (elements after expanding
  // repetitions, and a repetition count), so a hostile grammar cannot
  // exhaust memory.
  static constexpr size_t max_elements = 1u << 20;
  static constexpr uint32_t max_repeat = 10000;

  static expected<std::shared_ptr<const grammar>> compile(std::string_view gbnf);

  // Flat elements of every rule; rule r starts at rule_start(r).
  const std::vector<gelem>& elements() const { return elems_; }
  uint32_t rule_start(uint32_t rule) const { return starts_[rule]; }
  uint32_t n_rules() const { return static_cast<uint32_t>(starts_.size()); }
  uint32_t root() const { return root_; }
  const std::string& rule_name(uint32_t rule) const { return names_[rule]; }

  // Whether the character-class run starting at `pos` (a chr, chr_not or
  // chr_any element) matches code point c.
  bool matches(uint32_t pos, uint32_t c) const;
  // Whether it matches some code point in [lo, hi].
  bool matches_some(uint32_t pos, uint32_t lo, uint32_t hi) const;
  // The element after the character-class run starting at `pos`.
  uint32_t after_char(uint32_t pos) const;

  // Internal representation, filled by the parser (gbnf_parser.cpp).
  struct rules {
    std::vector<std::vector<gelem>> body;  // [rule] alternatives, alt/end separated
    std::vector<std::string> names;        // [rule]
  };
  static expected<std::shared_ptr<const grammar>> from_rules(rules r);

 private:
  std::vector<gelem> elems_;
  std::vector<uint32_t> starts_;
  std::vector<uint32_t> class_end_;  // [pos of a chr/chr_not run] the element after it
  std::vector<std::string> names_;
  uint32_t root_ = 0;
};

// Parses GBNF text into rules (the syntax above). Used by grammar::compile.
expected<grammar::rules> parse_gbnf(std::string_view text);

}  // namespace cortex
