#include "grammar/gbnf_compose.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace cortex {

std::string gbnf_prefix_rules(std::string_view g, std::string_view prefix) {
  std::string out;
  out.reserve(g.size() * 5 / 4);
  const auto is_name = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; };
  size_t i = 0;
  while (i < g.size()) {
    const char c = g[i];
    if (c == '"' || c == '[') {  // a literal or a class, copied with its escapes
      const char close = c == '"' ? '"' : ']';
      size_t j = i + 1;
      while (j < g.size() && g[j] != close) j += g[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, g.size());
      out.append(g.substr(i, j - i));
      i = j;
    } else if (c == '#') {
      const size_t j = std::min(g.find('\n', i), g.size());
      out.append(g.substr(i, j - i));
      i = j;
    } else if (c == '{') {  // a repetition count
      const size_t j = std::min(g.find('}', i) + 1, g.size());
      out.append(g.substr(i, j - i));
      i = j;
    } else if (is_name(c)) {
      size_t j = i;
      while (j < g.size() && is_name(g[j])) ++j;
      out.append(prefix);
      out.append(g.substr(i, j - i));
      i = j;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

namespace {

std::vector<uint32_t> code_points(std::string_view s) {
  std::vector<uint32_t> cps;
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const int n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    uint32_t cp = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
    for (int k = 1; k < n && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    cps.push_back(cp);
    i += n;
  }
  return cps;
}

std::string escaped(uint32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "\\U%08X", cp);
  return buf;
}

}  // namespace

std::string gbnf_text_until(std::string_view marker, const std::string& prefix, const std::string& next, bool allow_end) {
  const std::vector<uint32_t> m = code_points(marker);
  const size_t n = m.size();
  // KMP: fail[i] = length of the longest proper border of m[0, i).
  std::vector<size_t> fail(n + 1, 0);
  for (size_t i = 1, k = 0; i < n; ++i) {
    while (k > 0 && m[i] != m[k]) k = fail[k];
    if (m[i] == m[k]) ++k;
    fail[i + 1] = k;
  }
  std::vector<uint32_t> alphabet(m);
  std::sort(alphabet.begin(), alphabet.end());
  alphabet.erase(std::unique(alphabet.begin(), alphabet.end()), alphabet.end());
  std::string others = "[^";
  for (uint32_t c : alphabet) others += escaped(c);
  others += "]";

  std::string out;
  for (size_t state = 0; state < n; ++state) {
    std::string body = allow_end ? "\"\"" : "";
    const auto alt = [&](const std::string& a) { body += (body.empty() ? "" : " | ") + a; };
    alt(others + " " + prefix + "0");
    for (uint32_t c : alphabet) {
      size_t k = state;
      while (k > 0 && m[k] != c) k = fail[k];
      if (m[k] == c) ++k;
      const std::string cls = "[" + escaped(c) + "]";
      alt(k == n ? cls + " " + prefix + "done" : cls + " " + prefix + std::to_string(k));
    }
    out += prefix + std::to_string(state) + " ::= " + body + "\n";
  }
  out += prefix + "done ::= " + next + "\n";
  return out;
}

}  // namespace cortex
