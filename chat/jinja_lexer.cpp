#include "chat/jinja_lexer.hpp"

#include <cctype>
#include <cstdlib>

#include "chat/jinja_value.hpp"
#include "text/unicode.hpp"

namespace cortex::chat {

namespace {

std::string normalize_newlines(const std::string& in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '\r') {
      out += '\n';
      if (i + 1 < in.size() && in[i + 1] == '\n') ++i;
    } else {
      out += in[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();  // keep_trailing_newline=False
  return out;
}

// Byte length of the Python-whitespace code point at s[i], or 0.
size_t space_at(const std::string& s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return is_python_space(c) ? 1 : 0;
  const size_t n = unicode::utf8_len(c);
  if (i + n > s.size()) return 0;
  const auto cpts = unicode::cpts_from_utf8(std::string_view(s).substr(i, n));
  return cpts.size() == 1 && is_python_space(cpts[0]) ? n : 0;
}

size_t skip_space(const std::string& s, size_t i) {
  while (i < s.size()) {
    const size_t n = space_at(s, i);
    if (!n) break;
    i += n;
  }
  return i;
}

std::string rstrip_space(const std::string& s) { return python_strip(s, nullptr, false, true); }

class lexer {
 public:
  explicit lexer(std::string src) : s_(std::move(src)) {}

  expected<std::vector<token>> run() {
    size_t pos = 0;
    while (pos < s_.size()) {
      const size_t tag = find_tag(pos);
      const bool at_end = tag == std::string::npos;
      std::string text = s_.substr(pos, at_end ? std::string::npos : tag - pos);
      if (at_end) {
        emit_text(std::move(text), pos);
        break;
      }
      const char kind = s_[tag + 1];  // '{', '%' or '#'
      const char mod = tag + 2 < s_.size() ? s_[tag + 2] : '\0';
      if (mod == '-') {
        text = rstrip_space(text);
      } else if (kind != '{' && mod != '+') {
        text = lstrip_line(text, pos);
      }
      emit_text(std::move(text), pos);
      line_ = line_at(tag);
      size_t after = tag + 2 + ((mod == '-' || mod == '+') ? 1 : 0);
      expected<size_t> end = kind == '#' ? lex_comment(after) : kind == '%' ? lex_tag(after, true) : lex_tag(after, false);
      if (!end) return end.error();
      pos = *end;
    }
    token eof;
    eof.line = line_at(s_.size());
    out_.push_back(eof);
    return std::move(out_);
  }

 private:
  int line_at(size_t pos) {
    while (line_pos_ < pos && line_pos_ < s_.size()) {
      if (s_[line_pos_] == '\n') ++line_count_;
      ++line_pos_;
    }
    return line_count_;
  }

  size_t find_tag(size_t from) const {
    for (size_t i = s_.find('{', from); i != std::string::npos; i = s_.find('{', i + 1)) {
      if (i + 1 < s_.size() && (s_[i + 1] == '{' || s_[i + 1] == '%' || s_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  // lstrip_blocks: white space between the line start and a block or comment tag goes.
  std::string lstrip_line(const std::string& text, size_t text_start) const {
    const size_t nl = text.rfind('\n');
    const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
    const bool line_starting = text_start == 0 || s_[text_start - 1] == '\n';
    if (l_pos == 0 && !line_starting) return text;
    if (l_pos == text.size()) return text;
    if (skip_space(text, l_pos) != text.size()) return text;
    return text.substr(0, l_pos);
  }

  void emit_text(std::string text, size_t pos) {
    if (text.empty()) return;
    token t;
    t.type = tok::text;
    t.line = line_at(pos);
    t.text = std::move(text);
    out_.push_back(std::move(t));
  }

  // After a closing tag: '-' eats all white space, a block tag eats one newline.
  size_t after_close(size_t p, char mod, bool is_block) const {
    if (mod == '-') return skip_space(s_, p);
    if (is_block && mod != '+' && p < s_.size() && s_[p] == '\n') return p + 1;
    return p;
  }

  expected<size_t> lex_comment(size_t p) {
    const size_t e = s_.find("#}", p);
    if (e == std::string::npos) return fail(errc::malformed, "line " + std::to_string(line_) + ": unclosed comment '{#'");
    const char mod = e > p && (s_[e - 1] == '-' || s_[e - 1] == '+') ? s_[e - 1] : '\0';
    return after_close(e + 2, mod, true);
  }

  expected<size_t> lex_tag(size_t p, bool is_block) {
    const size_t first = out_.size();
    token begin;
    begin.type = is_block ? tok::block_begin : tok::var_begin;
    begin.line = line_;
    out_.push_back(begin);
    int depth = 0;
    const char close = is_block ? '%' : '}';
    while (true) {
      while (p < s_.size() && std::isspace(static_cast<unsigned char>(s_[p]))) ++p;
      if (p >= s_.size())
        return fail(errc::malformed, "line " + std::to_string(begin.line) + ": unclosed '" + (is_block ? "{%" : "{{") + "' tag");
      if (depth == 0) {
        char mod = '\0';
        size_t q = p;
        if ((s_[q] == '-' || s_[q] == '+') && q + 2 < s_.size() + 0 && s_[q + 1] == close && s_[q + 2] == '}') {
          mod = s_[q];
          ++q;
        }
        if (q + 1 < s_.size() && s_[q] == close && s_[q + 1] == '}') {
          token end;
          end.type = is_block ? tok::block_end : tok::var_end;
          end.line = line_at(q);
          out_.push_back(end);
          if (is_block && out_.size() == first + 3 && out_[first + 1].type == tok::name && out_[first + 1].text == "raw")
            return lex_raw(q + 2, mod, first);
          return after_close(q + 2, mod, is_block);
        }
      }
      auto r = lex_token(p);
      if (!r) return r.error();
      const std::string& t = out_.back().text;
      if (out_.back().type == tok::op) {
        if (t == "(" || t == "[" || t == "{") ++depth;
        if ((t == ")" || t == "]" || t == "}") && depth > 0) --depth;
      }
      p = *r;
    }
  }

  // {% raw %}...{% endraw %}: the body is text, tags inside are not parsed.
  expected<size_t> lex_raw(size_t p, char mod, size_t first) {
    out_.resize(first);
    p = after_close(p, mod, true);
    for (size_t i = s_.find("{%", p); i != std::string::npos; i = s_.find("{%", i + 1)) {
      size_t q = i + 2;
      const char lmod = q < s_.size() && (s_[q] == '-' || s_[q] == '+') ? s_[q] : '\0';
      if (lmod) ++q;
      while (q < s_.size() && std::isspace(static_cast<unsigned char>(s_[q]))) ++q;
      if (s_.compare(q, 6, "endraw") != 0) continue;
      q += 6;
      while (q < s_.size() && std::isspace(static_cast<unsigned char>(s_[q]))) ++q;
      char rmod = '\0';
      if (q < s_.size() && (s_[q] == '-' || s_[q] == '+')) rmod = s_[q++];
      if (s_.compare(q, 2, "%}") != 0) continue;
      std::string body = s_.substr(p, i - p);
      if (lmod == '-') body = rstrip_space(body);
      else if (lmod != '+') body = lstrip_line(body, p);
      emit_text(std::move(body), p);
      return after_close(q + 2, rmod, true);
    }
    return fail(errc::malformed, "line " + std::to_string(line_) + ": unclosed '{% raw %}' (no '{% endraw %}')");
  }

  expected<size_t> lex_token(size_t p) {
    token t;
    t.line = line_at(p);
    const char c = s_[p];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t e = p;
      while (e < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[e])) || s_[e] == '_')) ++e;
      t.type = tok::name;
      t.text = s_.substr(p, e - p);
      out_.push_back(std::move(t));
      return e;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) return lex_number(p, std::move(t));
    if (c == '\'' || c == '"') return lex_string(p, std::move(t));
    static const char* const ops[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<",
                                      ">",  "=",  "(",  ")",  "[",  "]",  "{", "}", ",", ".", ":", "|"};
    for (const char* op : ops) {
      const size_t n = std::char_traits<char>::length(op);
      if (s_.compare(p, n, op) == 0) {
        t.type = tok::op;
        t.text = op;
        out_.push_back(std::move(t));
        return p + n;
      }
    }
    return fail(errc::malformed, "line " + std::to_string(t.line) + ": unexpected character '" + std::string(1, c) + "' in a tag");
  }

  expected<size_t> lex_number(size_t p, token t) {
    size_t e = p;
    std::string digits;
    auto take_digits = [&] {
      while (e < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[e])) || s_[e] == '_')) {
        if (s_[e] != '_') digits += s_[e];
        ++e;
      }
    };
    take_digits();
    bool is_float = false;
    if (e + 1 < s_.size() && s_[e] == '.' && std::isdigit(static_cast<unsigned char>(s_[e + 1]))) {
      is_float = true;
      digits += s_[e++];
      take_digits();
    }
    if (e < s_.size() && (s_[e] == 'e' || s_[e] == 'E')) {
      size_t q = e + 1;
      if (q < s_.size() && (s_[q] == '+' || s_[q] == '-')) ++q;
      if (q < s_.size() && std::isdigit(static_cast<unsigned char>(s_[q]))) {
        is_float = true;
        digits += s_.substr(e, q - e);
        e = q;
        take_digits();
      }
    }
    if (is_float) {
      t.type = tok::floating;
      t.fval = std::strtod(digits.c_str(), nullptr);
    } else {
      t.type = tok::integer;
      errno = 0;
      t.ival = std::strtoll(digits.c_str(), nullptr, 10);
      if (errno == ERANGE) return fail(errc::malformed, "line " + std::to_string(t.line) + ": integer literal too large");
    }
    t.text = s_.substr(p, e - p);
    out_.push_back(std::move(t));
    return e;
  }

  // Python string escapes; an unknown escape keeps its backslash, as Python does.
  expected<size_t> lex_string(size_t p, token t) {
    const char q = s_[p];
    std::string out;
    size_t i = p + 1;
    for (; i < s_.size() && s_[i] != q; ++i) {
      if (s_[i] != '\\' || i + 1 >= s_.size()) {
        out += s_[i];
        continue;
      }
      const char e = s_[++i];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'v': out += '\v'; break;
        case 'a': out += '\a'; break;
        case '0': out += '\0'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case '\n': break;  // line continuation
        case 'x':
        case 'u':
        case 'U': {
          const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (i + n >= s_.size()) return fail(errc::malformed, "line " + std::to_string(t.line) + ": truncated \\" + e + " escape");
          const std::string hex = s_.substr(i + 1, n);
          char* endp = nullptr;
          const unsigned long cp = std::strtoul(hex.c_str(), &endp, 16);
          if (*endp != '\0' || cp > 0x10FFFF)
            return fail(errc::malformed, "line " + std::to_string(t.line) + ": bad \\" + e + " escape in a string");
          unicode::append_utf8(out, static_cast<uint32_t>(cp));
          i += n;
          break;
        }
        default:
          out += '\\';
          out += e;
      }
    }
    if (i >= s_.size()) return fail(errc::malformed, "line " + std::to_string(t.line) + ": unclosed string literal");
    t.type = tok::string;
    t.text = std::move(out);
    out_.push_back(std::move(t));
    return i + 1;
  }

  std::string s_;
  std::vector<token> out_;
  int line_ = 1;
  size_t line_pos_ = 0;
  int line_count_ = 1;
};

}  // namespace

expected<std::vector<token>> lex_template(const std::string& source) { return lexer(normalize_newlines(source)).run(); }

}  // namespace cortex::chat
