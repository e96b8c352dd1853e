// Pieces of the JSON Schema converter (json_schema.cpp) that stand alone:
// GBNF literals, regular expressions (`pattern`) and numeric ranges as GBNF
// expressions. Internal to grammar/.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/expected.hpp"

namespace cortex {
namespace schema_parts {

// `text` as a GBNF string literal ("..." with escapes).
std::string gbnf_literal(std::string_view text);

// The GBNF expression of the JSON-string contents (without the quotes)
// that fully match `pattern`, characters JSON-escaped where JSON needs it.
// Errors name the unsupported feature.
expected<std::string> pattern_to_gbnf(std::string_view pattern);

// Decimal integers (no sign, no leading zeros) in [lo, hi]; hi = -1 means
// no upper bound (up to 16 digits). REQUIRES: lo <= hi when hi >= 0.
std::string integer_range(uint64_t lo, int64_t hi);

// A bound of a numeric range; `strict` for exclusiveMinimum/Maximum.
struct bound {
  bool given = false;
  double value = 0;
  bool strict = false;
};

// Numbers (JSON syntax, no exponent) in the range, as one GBNF expression;
// integers only when `integer`. Empty when the range holds nothing the
// grammar can write; an error when a bound is beyond +-1e15.
expected<std::string> number_range(bound lo, bound hi, bool integer);

}  // namespace schema_parts
}  // namespace cortex
