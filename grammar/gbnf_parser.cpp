// GBNF text -> grammar::rules (syntax in grammar.hpp). Groups and
// repetitions become rules of their own, named after their parent with a
// `~n` suffix (a character names cannot contain, so no clash).
#include <cstring>
#include <string>
#include <unordered_map>

#include "grammar/grammar.hpp"

namespace cortex {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

class gbnf_parser {
 public:
  explicit gbnf_parser(std::string_view src) : src_(src) {}

  expected<grammar::rules> run() {
    while (true) {
      skip_space(true);
      if (at_end()) break;
      const std::string name = parse_name();
      if (name.empty()) return error("expected a rule name");
      skip_space(false);
      if (src_.substr(i_, 3) != "::=") return error("expected '::=' after rule name '" + name + "'");
      i_ += 3;
      const uint32_t id = rule_id(name);
      if (defined_[id]) return error("rule '" + name + "' is defined twice");
      defined_[id] = true;
      if (!parse_alternates(id, false)) return err_;
    }
    if (!ids_.count("root")) return fail(errc::invalid_param, "grammar: no 'root' rule (it is where matching starts)");
    for (size_t r = 0; r < out_.names.size(); ++r) {
      if (!defined_[r]) return fail(errc::invalid_param, "grammar: rule '" + out_.names[r] + "' is used but never defined");
    }
    return std::move(out_);
  }

 private:
  bool at_end() const { return i_ >= src_.size(); }
  char peek() const { return at_end() ? '\0' : src_[i_]; }

  status error(const std::string& what) {
    int line = 1, col = 1;
    for (size_t k = 0; k < i_ && k < src_.size(); ++k) {
      if (src_[k] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    err_ = fail(errc::invalid_param, "grammar: line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + what);
    return err_;
  }

  bool bail(const std::string& what) {
    error(what);
    return false;
  }

  uint32_t rule_id(const std::string& name) {
    auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    const auto id = static_cast<uint32_t>(out_.names.size());
    ids_.emplace(name, id);
    out_.names.push_back(name);
    out_.body.emplace_back();
    defined_.push_back(false);
    return id;
  }
  uint32_t new_rule(uint32_t parent) {
    std::string name;
    do name = out_.names[parent] + "~" + std::to_string(++n_synthetic_);
    while (ids_.count(name));
    const uint32_t id = rule_id(name);
    defined_[id] = true;
    return id;
  }

  std::string parse_name() {
    const size_t b = i_;
    while (!at_end() && is_name_char(src_[i_])) ++i_;
    return std::string(src_.substr(b, i_ - b));
  }

  // Whether a `name ::=` starts at j (after blanks).
  bool rule_starts_at(size_t j) const {
    const size_t b = j;
    while (j < src_.size() && is_name_char(src_[j])) ++j;
    if (j == b) return false;
    while (j < src_.size() && (src_[j] == ' ' || src_[j] == '\t')) ++j;
    return src_.substr(j, 3) == "::=";
  }

  // Skips blanks and comments; newlines too when `newlines` (inside
  // parentheses, between rules), else only when the rule visibly goes on
  // (the next non-blank line does not start a new rule).
  void skip_space(bool newlines) {
    while (!at_end()) {
      const char c = src_[i_];
      if (c == ' ' || c == '\t' || c == '\r') {
        ++i_;
      } else if (c == '#') {
        while (!at_end() && src_[i_] != '\n') ++i_;
      } else if (c == '\n') {
        if (!newlines) {
          size_t j = i_;
          while (j < src_.size()) {
            const char d = src_[j];
            if (d == ' ' || d == '\t' || d == '\r' || d == '\n') {
              ++j;
            } else if (d == '#') {
              while (j < src_.size() && src_[j] != '\n') ++j;
            } else {
              break;
            }
          }
          if (j >= src_.size() || rule_starts_at(j)) return;
        }
        ++i_;
      } else {
        return;
      }
    }
  }

  bool grow(size_t n) {
    n_elements_ += n;
    if (n_elements_ > grammar::max_elements) {
      error("the grammar is too large (over " + std::to_string(grammar::max_elements) + " elements after expanding repetitions)");
      return false;
    }
    return true;
  }

  // One code point of a literal or class, with escapes; 0xFFFFFFFF on error.
  uint32_t parse_char() {
    if (at_end()) return fail_char("unexpected end of grammar");
    const auto b = static_cast<unsigned char>(src_[i_]);
    if (b == '\\') {
      ++i_;
      if (at_end()) return fail_char("unfinished escape");
      const char e = src_[i_++];
      switch (e) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case '\\': case '"': case '\'': case '[': case ']': case '-': case '^': case '/': return static_cast<uint32_t>(e);
        case 'x': return parse_hex(2);
        case 'u': return parse_hex(4);
        case 'U': return parse_hex(8);
        default: --i_; return fail_char(std::string("unknown escape '\\") + e + "'");
      }
    }
    int n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    if (n == 0 || i_ + static_cast<size_t>(n) > src_.size()) return fail_char("invalid UTF-8 in the grammar");
    uint32_t c = n == 1 ? b : b & (0x7Fu >> n);
    for (int k = 1; k < n; ++k) {
      const auto d = static_cast<unsigned char>(src_[i_ + static_cast<size_t>(k)]);
      if ((d & 0xC0) != 0x80) return fail_char("invalid UTF-8 in the grammar");
      c = (c << 6) | (d & 0x3F);
    }
    i_ += static_cast<size_t>(n);
    return c;
  }
  uint32_t parse_hex(int digits) {
    uint32_t v = 0;
    for (int k = 0; k < digits; ++k) {
      const char h = peek();
      uint32_t d;
      if (h >= '0' && h <= '9') d = static_cast<uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f') d = static_cast<uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') d = static_cast<uint32_t>(h - 'A' + 10);
      else return fail_char("expected " + std::to_string(digits) + " hex digits in an escape");
      v = v * 16 + d;
      ++i_;
    }
    if (v > 0x10FFFF) return fail_char("escape beyond U+10FFFF");
    return v;
  }
  uint32_t fail_char(const std::string& what) {
    error(what);
    return bad_char;
  }

  bool parse_alternates(uint32_t rule, bool nested) {
    std::vector<gelem> body;
    if (!parse_sequence(rule, body, nested)) return false;
    while (peek() == '|') {
      ++i_;
      body.push_back({gelem_type::alt, 0});
      skip_space(true);
      if (!parse_sequence(rule, body, nested)) return false;
    }
    body.push_back({gelem_type::end, 0});
    if (!grow(body.size())) return false;
    out_.body[rule] = std::move(body);
    return true;
  }

  bool parse_sequence(uint32_t rule, std::vector<gelem>& out, bool nested) {
    size_t last_start = out.size();  // where the last symbol began
    bool have_symbol = false;
    while (true) {
      skip_space(nested);
      if (at_end()) return true;
      const char c = src_[i_];
      if (c == '|' || c == ')' || (c == '\n' && !nested)) return true;
      if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (!have_symbol) return bail(std::string("'") + c + "' repeats nothing");
        if (!parse_repetition(rule, out, last_start)) return false;
        have_symbol = false;  // x** is an error, as in llama.cpp
        continue;
      }
      last_start = out.size();
      have_symbol = true;
      if (c == '"') {
        ++i_;
        while (peek() != '"') {
          if (at_end()) return bail("unterminated string literal");
          const uint32_t ch = parse_char();
          if (ch == bad_char) return false;
          out.push_back({gelem_type::chr, ch});
        }
        ++i_;
        if (out.size() == last_start) have_symbol = false;  // "" matches nothing: nothing to repeat
      } else if (c == '[') {
        ++i_;
        gelem_type first = gelem_type::chr;
        if (peek() == '^') {
          ++i_;
          first = gelem_type::chr_not;
        }
        bool any = false;
        while (peek() != ']') {
          if (at_end()) return bail("unterminated character class");
          const uint32_t lo = parse_char();
          if (lo == bad_char) return false;
          out.push_back({any ? gelem_type::chr_alt : first, lo});
          any = true;
          if (peek() == '-' && i_ + 1 < src_.size() && src_[i_ + 1] != ']') {
            ++i_;
            const uint32_t hi = parse_char();
            if (hi == bad_char) return false;
            if (hi < lo) return bail("character range with its upper end below its lower end");
            out.push_back({gelem_type::rng_upper, hi});
          }
        }
        if (!any) return bail("empty character class");
        ++i_;
      } else if (c == '.') {
        ++i_;
        out.push_back({gelem_type::chr_any, 0});
      } else if (c == '(') {
        if (++depth_ > max_nesting) return bail("groups nested deeper than " + std::to_string(max_nesting) + " levels");
        ++i_;
        const uint32_t sub = new_rule(rule);
        skip_space(true);
        if (!parse_alternates(sub, true)) return false;
        skip_space(true);
        if (peek() != ')') return bail("expected ')'");
        ++i_;
        --depth_;
        out.push_back({gelem_type::rule_ref, sub});
      } else if (is_name_char(c)) {
        const size_t b = i_;
        const std::string name = parse_name();
        if (!nested) {  // a `name ::=` here means the previous rule ended without a newline
          size_t j = i_;
          while (j < src_.size() && (src_[j] == ' ' || src_[j] == '\t')) ++j;
          if (src_.substr(j, 3) == "::=") {
            i_ = b;
            return bail("expected a newline before rule '" + name + "'");
          }
        }
        out.push_back({gelem_type::rule_ref, rule_id(name)});
      } else {
        return bail(std::string("unexpected character '") + c + "'");
      }
      if (!grow(out.size() - last_start)) return false;
    }
  }

  bool parse_count(uint32_t& v) {
    if (!(peek() >= '0' && peek() <= '9')) return bail("expected a number in '{m,n}'");
    uint64_t x = 0;
    while (peek() >= '0' && peek() <= '9') {
      x = x * 10 + static_cast<uint64_t>(src_[i_++] - '0');
      if (x > grammar::max_repeat) return bail("repetition count above " + std::to_string(grammar::max_repeat));
    }
    v = static_cast<uint32_t>(x);
    return true;
  }

  // Rewrites the symbol out[last_start..] repeated by the operator at i_:
  // m copies, then the optional rest as rules (R ::= x R | "" when
  // unbounded; nested R_k ::= x R_{k-1} | "" when bounded).
  bool parse_repetition(uint32_t rule, std::vector<gelem>& out, size_t last_start) {
    uint32_t lo = 0, hi = 0;
    bool unbounded = false;
    const char op = src_[i_++];
    if (op == '*') {
      unbounded = true;
    } else if (op == '+') {
      lo = 1;
      unbounded = true;
    } else if (op == '?') {
      hi = 1;
    } else {
      skip_space(true);
      if (!parse_count(lo)) return false;
      skip_space(true);
      if (peek() == ',') {
        ++i_;
        skip_space(true);
        if (peek() == '}') {
          unbounded = true;
        } else if (!parse_count(hi)) {
          return false;
        }
      } else {
        hi = lo;
      }
      skip_space(true);
      if (peek() != '}') return bail("expected '}'");
      ++i_;
      if (!unbounded && hi < lo) return bail("repetition {m,n} with n < m");
    }
    const std::vector<gelem> item(out.begin() + static_cast<std::ptrdiff_t>(last_start), out.end());
    out.resize(last_start);
    const size_t n_copies = lo + (unbounded ? 1 : hi - lo);
    if (!grow(item.size() * n_copies + 3 * (n_copies + 1))) return false;
    for (uint32_t k = 0; k < lo; ++k) out.insert(out.end(), item.begin(), item.end());
    if (unbounded) {
      const uint32_t r = new_rule(rule);
      std::vector<gelem> body = item;
      body.push_back({gelem_type::rule_ref, r});
      body.push_back({gelem_type::alt, 0});
      body.push_back({gelem_type::end, 0});
      out_.body[r] = std::move(body);
      out.push_back({gelem_type::rule_ref, r});
    } else if (hi > lo) {
      uint32_t prev = 0;
      for (uint32_t k = 0; k < hi - lo; ++k) {
        const uint32_t r = new_rule(rule);
        std::vector<gelem> body = item;
        if (k > 0) body.push_back({gelem_type::rule_ref, prev});
        body.push_back({gelem_type::alt, 0});
        body.push_back({gelem_type::end, 0});
        out_.body[r] = std::move(body);
        prev = r;
      }
      out.push_back({gelem_type::rule_ref, prev});
    }
    return true;
  }

  static constexpr uint32_t bad_char = 0xFFFFFFFFu;
  static constexpr int max_nesting = 256;  // the parser recurses per group
  int depth_ = 0;
  std::string_view src_;
  size_t i_ = 0;
  grammar::rules out_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<bool> defined_;
  uint32_t n_synthetic_ = 0;
  size_t n_elements_ = 0;
  status err_;
};

}  // namespace

expected<grammar::rules> parse_gbnf(std::string_view text) { return gbnf_parser(text).run(); }

}  // namespace cortex
