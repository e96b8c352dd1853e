#include "grammar/json_schema_parts.hpp"

#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

#include "text/unicode.hpp"

namespace cortex {
namespace schema_parts {
namespace {

std::string hex_escape(uint32_t c) {
  char buf[16];
  if (c < 0x100) {
    std::snprintf(buf, sizeof buf, "\\x%02X", c);
  } else if (c < 0x10000) {
    std::snprintf(buf, sizeof buf, "\\u%04X", c);
  } else {
    std::snprintf(buf, sizeof buf, "\\U%08X", c);
  }
  return buf;
}

// A code point inside a GBNF character class.
std::string class_char(uint32_t c) {
  const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == ' ';
  return plain ? std::string(1, static_cast<char>(c)) : hex_escape(c);
}

// A character as it appears inside a JSON string (escaped where needed).
std::string json_char(uint32_t c) {
  if (c == '"') return gbnf_literal("\\\"");
  if (c == '\\') return gbnf_literal("\\\\");
  if (c == '\n') return gbnf_literal("\\n");
  if (c == '\t') return gbnf_literal("\\t");
  if (c == '\r') return gbnf_literal("\\r");
  if (c < 0x20) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", c);
    return gbnf_literal(buf);
  }
  return gbnf_literal(unicode::cpt_to_utf8(c));
}

using ranges = std::vector<std::pair<uint32_t, uint32_t>>;

// Characters JSON strings must escape: kept out of classes (a class then
// generates a subset of what it matches, which still matches).
const ranges& json_escaped() {
  static const ranges k = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};
  return k;
}

class regex_converter {
 public:
  explicit regex_converter(std::string_view p) : p_(p) {}

  expected<std::string> run() {
    if (peek() == '^') ++i_;
    std::string out = alternation();
    if (!err_.empty()) return fail(errc::invalid_param, err_);
    if (i_ < p_.size()) return fail(errc::invalid_param, "pattern: unbalanced ')' at offset " + std::to_string(i_));
    return out;
  }

 private:
  char peek() const { return i_ < p_.size() ? p_[i_] : '\0'; }
  bool at_end() const { return i_ >= p_.size(); }
  void error(const std::string& what) {
    if (err_.empty()) err_ = "pattern: " + what + " (at offset " + std::to_string(i_) + ") is not supported";
  }

  uint32_t next_char() {
    const auto b = static_cast<unsigned char>(p_[i_]);
    const int n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : 4;
    uint32_t c = n == 1 ? b : b & (0x7Fu >> n);
    for (int k = 1; k < n && i_ + static_cast<size_t>(k) < p_.size(); ++k) {
      c = (c << 6) | (static_cast<unsigned char>(p_[i_ + static_cast<size_t>(k)]) & 0x3Fu);
    }
    i_ += static_cast<size_t>(n);
    return c;
  }

  std::string alternation() {
    std::vector<std::string> alts{sequence()};
    while (peek() == '|') {
      ++i_;
      alts.push_back(sequence());
    }
    if (alts.size() == 1) return alts[0];
    std::string s = "(";
    for (size_t k = 0; k < alts.size(); ++k) s += (k ? " | " : "") + alts[k];
    return s + ")";
  }

  std::string sequence() {
    std::string s;
    while (!at_end() && peek() != '|' && peek() != ')' && err_.empty()) {
      if (peek() == '$' && i_ + 1 == p_.size()) {
        ++i_;
        break;
      }
      std::string a = atom();
      if (!err_.empty()) break;
      std::string q = quantifier();
      if (a.empty() && !q.empty()) error("a quantifier on nothing");
      if (!a.empty()) s += (s.empty() ? "" : " ") + (q.empty() ? a : "(" + a + ")" + q);
    }
    return s.empty() ? "\"\"" : s;
  }

  std::string quantifier() {
    std::string q;
    const char c = peek();
    if (c == '*' || c == '+' || c == '?') {
      ++i_;
      q = std::string(1, c);
    } else if (c == '{') {
      const size_t close = p_.find('}', i_);
      if (close == std::string_view::npos) {
        error("'{' without '}'");
        return q;
      }
      q = std::string(p_.substr(i_, close - i_ + 1));
      // {m}, {m,} or {m,n}, each count at most 10000 (the grammar's cap)
      const std::string inner = q.substr(1, q.size() - 2);
      const size_t comma = inner.find(',');
      const std::string m = inner.substr(0, comma), n = comma == std::string::npos ? "" : inner.substr(comma + 1);
      const auto is_count = [](const std::string& x) {
        return !x.empty() && x.size() <= 5 && x.find_first_not_of("0123456789") == std::string::npos && std::stoi(x) <= 10000;
      };
      if (!is_count(m) || (!n.empty() && !is_count(n)) || (!n.empty() && std::stoi(n) < std::stoi(m))) {
        error("repetition '" + q + "' (counts are {m}, {m,} or {m,n} up to 10000)");
      }
      i_ = close + 1;
    }
    if (!q.empty() && (peek() == '?' || peek() == '+')) ++i_;  // lazy / possessive: same language
    return q;
  }

  // \d \w \s and their negations; false when `e` is none of them.
  static bool shorthand(char e, ranges& r, bool& negated) {
    static const ranges digit = {{'0', '9'}}, word = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}},
                        space = {{'\t', '\r'}, {' ', ' '}};
    negated = e == 'D' || e == 'W' || e == 'S';
    const char lower = static_cast<char>(negated ? e - 'A' + 'a' : e);
    const ranges* src = lower == 'd' ? &digit : lower == 'w' ? &word : lower == 's' ? &space : nullptr;
    if (src == nullptr) return false;
    r.insert(r.end(), src->begin(), src->end());
    return true;
  }

  uint32_t escaped_char(char e) {
    switch (e) {
      case 'n': return '\n';
      case 't': return '\t';
      case 'r': return '\r';
      case 'f': return '\f';
      case 'v': return '\v';
      default: break;
    }
    if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9')) {
      error(std::string("escape '\\") + e + "'");
      return 0;
    }
    return static_cast<unsigned char>(e);
  }

  std::string atom() {
    const char c = peek();
    if (c == '(') {
      ++i_;
      if (peek() == '?') {
        if (p_.substr(i_, 2) != "?:") {
          error("group '(?...)' (lookaround, named or flagged groups)");
          return "";
        }
        i_ += 2;
      }
      std::string inner = alternation();
      if (peek() != ')') {
        error("'(' without ')'");
        return "";
      }
      ++i_;
      return "(" + inner + ")";
    }
    if (c == '[') return char_class();
    if (c == '.') {
      ++i_;
      return emit_class({{'\n', '\n'}}, true);
    }
    if (c == '^' || c == '$') {
      error(std::string("anchor '") + c + "' inside the pattern");
      return "";
    }
    if (c == '*' || c == '+' || c == '?' || c == '{') {
      error(std::string("quantifier '") + c + "' with nothing before it");
      return "";
    }
    if (c == '\\') {
      ++i_;
      if (at_end()) {
        error("a trailing '\\'");
        return "";
      }
      const char e = p_[i_++];
      ranges r;
      bool negated;
      if (shorthand(e, r, negated)) return emit_class(r, negated);
      const uint32_t ch = escaped_char(e);
      return err_.empty() ? json_char(ch) : "";
    }
    return json_char(next_char());
  }

  std::string char_class() {
    ++i_;  // '['
    bool negated = false;
    if (peek() == '^') {
      negated = true;
      ++i_;
    }
    ranges r;
    bool first = true;
    while (!at_end() && (peek() != ']' || first)) {
      first = false;
      uint32_t lo;
      if (peek() == '\\') {
        ++i_;
        if (at_end()) break;
        const char e = p_[i_++];
        bool sub_negated;
        ranges sub;
        if (shorthand(e, sub, sub_negated)) {
          if (sub_negated) {
            error(std::string("'\\") + e + "' inside a class");
            return "";
          }
          r.insert(r.end(), sub.begin(), sub.end());
          continue;
        }
        lo = escaped_char(e);
      } else {
        lo = next_char();
      }
      uint32_t hi = lo;
      if (peek() == '-' && i_ + 1 < p_.size() && p_[i_ + 1] != ']') {
        ++i_;
        if (peek() == '\\') {
          ++i_;
          hi = at_end() ? lo : escaped_char(p_[i_++]);
        } else {
          hi = next_char();
        }
        if (hi < lo) error("a class range with its upper end below its lower end");
      }
      r.emplace_back(lo, hi);
    }
    if (peek() != ']') {
      error("'[' without ']'");
      return "";
    }
    ++i_;
    return emit_class(r, negated);
  }

  std::string emit_class(ranges r, bool negated) {
    if (negated) {
      r.insert(r.end(), json_escaped().begin(), json_escaped().end());
    } else {  // positive: cut out what JSON would have to escape
      ranges kept;
      for (auto [lo, hi] : r) {
        for (const auto& [xl, xh] : json_escaped()) {
          if (lo > hi) break;
          if (xh < lo || xl > hi) continue;
          if (xl > lo) kept.emplace_back(lo, xl - 1);
          lo = xh + 1;
        }
        if (lo <= hi) kept.emplace_back(lo, hi);
      }
      if (kept.empty()) {
        error("a class of only characters JSON escapes");
        return "";
      }
      r = std::move(kept);
    }
    std::string s = negated ? "[^" : "[";
    for (const auto& [lo, hi] : r) s += class_char(lo) + (hi != lo ? "-" + class_char(hi) : "");
    return s + "]";
  }

  std::string_view p_;
  size_t i_ = 0;
  std::string err_;
};

std::string digits_of(uint64_t v) { return std::to_string(v); }
uint64_t pow10(int n) {
  uint64_t p = 1;
  while (n-- > 0) p *= 10;
  return p;
}

std::string alternatives(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::string s = "(";
  for (size_t k = 0; k < alts.size(); ++k) s += (k ? " | " : "") + alts[k];
  return s + ")";
}

// Digit strings of one length between x and y (x <= y).
std::string same_length(const std::string& x, const std::string& y) {
  if (x == y) return gbnf_literal(x);
  const size_t rest = x.size() - 1;
  if (rest == 0) return std::string("[") + x[0] + "-" + y[0] + "]";
  if (x[0] == y[0]) return gbnf_literal(x.substr(0, 1)) + " " + same_length(x.substr(1), y.substr(1));
  const bool x_zeros = x.find_first_not_of('0', 1) == std::string::npos;
  const bool y_nines = y.find_first_not_of('9', 1) == std::string::npos;
  const char start = x_zeros ? x[0] : static_cast<char>(x[0] + 1);
  const char end = y_nines ? y[0] : static_cast<char>(y[0] - 1);
  std::vector<std::string> alts;
  if (!x_zeros) alts.push_back(gbnf_literal(x.substr(0, 1)) + " " + same_length(x.substr(1), std::string(rest, '9')));
  if (start <= end) alts.push_back(std::string("[") + start + "-" + end + "] [0-9]{" + std::to_string(rest) + "}");
  if (!y_nines) alts.push_back(gbnf_literal(y.substr(0, 1)) + " " + same_length(std::string(rest, '0'), y.substr(1)));
  return alternatives(alts);
}

constexpr int max_digits = 16;
constexpr double max_bound = 1e15;

// Non-negative decimals x with a (<, when a_strict) x (<, when b_strict) b;
// b < 0: unbounded. Integers i exactly; other values as i "." f with a
// non-zero last digit, so i < value < i + 1.
std::string magnitude(double a, bool a_strict, double b, bool b_strict, bool integer) {
  std::vector<std::string> alts;
  const bool unbounded = b < 0;
  const double i_lo = a_strict ? std::floor(a) + 1 : std::ceil(a);
  const double i_hi = unbounded ? 0 : (b_strict ? std::ceil(b) - 1 : std::floor(b));
  if (unbounded || i_lo <= i_hi) {
    alts.push_back(integer_range(static_cast<uint64_t>(i_lo), unbounded ? -1 : static_cast<int64_t>(i_hi)));
  }
  if (!integer) {
    const double f_lo = std::ceil(a);
    const double f_hi = unbounded ? 0 : std::floor(b) - 1;
    if (unbounded || f_lo <= f_hi) {
      alts.push_back(integer_range(static_cast<uint64_t>(f_lo), unbounded ? -1 : static_cast<int64_t>(f_hi)) +
                     " \".\" [0-9]{0,15} [1-9]");
    } else if (alts.empty() && (a < b || (!a_strict && !b_strict && a == b))) {
      char buf[40];  // no whole number inside: the midpoint
      std::snprintf(buf, sizeof buf, "%.15g", (a + b) / 2);
      alts.push_back(gbnf_literal(buf));
    }
  }
  return alts.empty() ? std::string() : alternatives(alts);
}

}  // namespace

std::string gbnf_literal(std::string_view text) {
  std::string s = "\"";
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"') {
      s += "\\\"";
    } else if (c == '\\') {
      s += "\\\\";
    } else if (c == '\n') {
      s += "\\n";
    } else if (c < 0x20) {
      s += hex_escape(c);
    } else {
      s += ch;
    }
  }
  return s + "\"";
}

expected<std::string> pattern_to_gbnf(std::string_view pattern) { return regex_converter(pattern).run(); }

std::string integer_range(uint64_t lo, int64_t hi) {
  std::vector<std::string> alts;
  const std::string lo_s = digits_of(lo);
  const int lo_len = static_cast<int>(lo_s.size());
  if (hi < 0) {
    alts.push_back(same_length(lo_s, std::string(lo_s.size(), '9')));
    if (lo_len < max_digits) alts.push_back("[1-9] [0-9]{" + std::to_string(lo_len) + "," + std::to_string(max_digits - 1) + "}");
    return alternatives(alts);
  }
  const auto h = static_cast<uint64_t>(hi);
  const int hi_len = static_cast<int>(digits_of(h).size());
  for (int len = lo_len; len <= hi_len; ++len) {
    const uint64_t a = std::max(lo, len == 1 ? 0 : pow10(len - 1));
    const uint64_t b = std::min(h, pow10(len) - 1);
    if (a <= b) alts.push_back(same_length(digits_of(a), digits_of(b)));
  }
  return alternatives(alts);
}

expected<std::string> number_range(bound lo, bound hi, bool integer) {
  for (const bound* b : {&lo, &hi}) {
    if (b->given && !(std::fabs(b->value) <= max_bound)) {
      return fail(errc::invalid_param, "a numeric bound beyond +-1e15 is not supported");
    }
  }
  std::vector<std::string> alts;
  // Zero and above.
  if (!(hi.given && (hi.value < 0 || (hi.value == 0 && hi.strict)))) {
    const bool lo_here = lo.given && lo.value >= 0;
    std::string m = magnitude(lo_here ? lo.value : 0, lo_here && lo.strict, hi.given ? hi.value : -1, hi.strict, integer);
    if (!m.empty()) alts.push_back(m);
  }
  // Below zero: "-" and a magnitude above zero.
  if (!(lo.given && lo.value >= 0)) {
    const bool hi_here = hi.given && hi.value < 0;
    std::string m = magnitude(hi_here ? -hi.value : 0, hi_here ? hi.strict : true, lo.given ? -lo.value : -1, lo.strict, integer);
    if (!m.empty()) alts.push_back("\"-\" " + m);
  }
  return alts.empty() ? std::string() : alternatives(alts);
}

}  // namespace schema_parts
}  // namespace cortex
