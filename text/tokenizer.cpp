#include "text/tokenizer.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "text/tokenizer_algorithms.hpp"
#include "text/unicode.hpp"

namespace cortex {
namespace {

// A piece of the input: raw text [begin, begin + size) or a special token.
struct fragment {
  int32_t token;  // -1 for raw text
  size_t begin;
  size_t size;
};

bool is_c_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// Splits out every occurrence of the special tokens, longest token first
// (llama.cpp's tokenizer_st_partition). Control and unknown tokens take part
// only with parse_special; user-defined tokens always do.
std::vector<fragment> partition(const vocab& v, std::string_view text, bool parse_special) {
  std::vector<fragment> frags;
  if (text.empty()) return frags;
  frags.push_back({-1, 0, text.size()});
  std::vector<fragment> next;
  for (int32_t id : v.special_ids) {
    if (!parse_special && v.has_attr(id, attr_control | attr_unknown)) continue;
    const std::string& tok = v.texts[static_cast<size_t>(id)];
    next.clear();
    bool split = false;
    for (const fragment& f : frags) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      size_t begin = f.begin, size = f.size;
      while (size > 0) {
        const size_t at = text.substr(begin, size).find(tok);
        if (at == std::string_view::npos) break;
        split = true;
        size_t left = at;
        if (v.has_attr(id, attr_lstrip)) {
          while (left > 0 && is_c_space(text[begin + left - 1])) --left;
        }
        if (left > 0) next.push_back({-1, begin, left});
        next.push_back({id, 0, 0});
        size_t rbegin = begin + at + tok.size();
        size_t rsize = size - at - tok.size();
        if (v.has_attr(id, attr_rstrip)) {
          while (rsize > 0 && is_c_space(text[rbegin])) ++rbegin, --rsize;
        }
        begin = rbegin;
        size = rsize;
      }
      if (size > 0) next.push_back({-1, begin, size});
    }
    if (split) frags.swap(next);
  }
  return frags;
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  for (size_t at; (at = s.find(from, pos)) != std::string::npos; pos = at + from.size()) {
    out.append(s, pos, at - pos).append(to);
  }
  out.append(s, pos, std::string::npos);
  s.swap(out);
}

constexpr std::string_view k_escaped_space = "\xe2\x96\x81";  // U+2581 '▁'

uint8_t byte_of_hex_token(const std::string& t) {
  // "<0xXX>"; anything else reads as 0 like strtol would.
  if (t.size() < 5) return 0;
  return static_cast<uint8_t>(std::strtol(t.substr(3, 2).c_str(), nullptr, 16));
}

std::string make_piece(const vocab& v, int32_t id) {
  const std::string& text = v.texts[static_cast<size_t>(id)];
  if (v.has_attr(id, attr_control | attr_unknown | attr_user_defined)) return text;
  if (v.has_attr(id, attr_normal)) {
    std::string piece = text;
    if (v.kind == vocab_kind::spm || v.kind == vocab_kind::wpm || v.pre.escape_whitespaces) {
      replace_all(piece, k_escaped_space, " ");
      return piece;
    }
    piece.clear();
    for (uint32_t cpt : unicode::cpts_from_utf8(text)) {
      const int b = unicode::bpe_cpt_to_byte(cpt);
      if (b >= 0) {
        piece.push_back(static_cast<char>(b));
      } else {  // not in the byte alphabet: marked like the reference does
        piece += "[UNK_BYTE_0x";
        for (unsigned char c : unicode::cpt_to_utf8(cpt)) {
          char hex[3];
          std::snprintf(hex, sizeof(hex), "%02x", c);
          piece += hex;
        }
        piece += text + "]";
      }
    }
    return piece;
  }
  if (v.has_attr(id, attr_byte)) return std::string(1, static_cast<char>(byte_of_hex_token(text)));
  return {};  // unused / undefined tokens render as nothing
}

}  // namespace

expected<std::unique_ptr<tokenizer>> tokenizer::from_gguf(const gguf::file& f) {
  auto v = vocab::from_gguf(f);
  if (!v) return v.error();
  return std::make_unique<tokenizer>(std::move(*v));
}

tokenizer::tokenizer(cortex::vocab v) : vocab_(std::move(v)) {
  const int32_t n = vocab_.n_tokens();
  pieces_.reserve(static_cast<size_t>(n));
  for (int32_t id = 0; id < n; ++id) pieces_.push_back(make_piece(vocab_, id));
}

std::vector<int32_t> tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  std::vector<int32_t> out;
  const std::vector<fragment> frags = partition(vocab_, text, parse_special);
  if (vocab_.kind == vocab_kind::wpm) {
    // [CLS] text [SEP], as BERT frames one sequence (vocab checked both exist).
    if (add_special) out.push_back(vocab_.bos_id);
    for (const fragment& f : frags) {
      if (f.token >= 0) {
        out.push_back(f.token);
      } else {
        wpm_encode(vocab_, text.substr(f.begin, f.size), out);
      }
    }
    if (add_special) out.push_back(vocab_.sep_id);
    return out;
  }
  if (add_special && vocab_.add_bos) out.push_back(vocab_.bos_id);
  if (vocab_.kind == vocab_kind::spm) {
    bool prev_special = true;  // text at the start or after a special token gets a space prefix
    for (const fragment& f : frags) {
      if (f.token >= 0) {
        out.push_back(f.token);
        prev_special = true;
        continue;
      }
      std::string piece;
      if (vocab_.add_space_prefix && prev_special) piece = " ";
      piece.append(text.substr(f.begin, f.size));
      replace_all(piece, " ", k_escaped_space);
      spm_encode(vocab_, piece, out);
      prev_special = false;
    }
  } else {
    for (const fragment& f : frags) {
      if (f.token >= 0) {
        out.push_back(f.token);
      } else if (vocab_.pre.escape_whitespaces) {
        std::string piece(text.substr(f.begin, f.size));
        replace_all(piece, " ", k_escaped_space);
        bpe_encode(vocab_, piece, out);
      } else {
        bpe_encode(vocab_, text.substr(f.begin, f.size), out);
      }
    }
  }
  if (add_special && vocab_.add_eos) out.push_back(vocab_.eos_id);
  return out;
}

std::vector<int32_t> tokenizer::encode_pair(std::string_view first, std::string_view second) const {
  const int32_t eos = vocab_.eos_id >= 0 ? vocab_.eos_id : vocab_.sep_id;
  std::vector<int32_t> out;
  if (vocab_.add_bos && vocab_.bos_id >= 0) out.push_back(vocab_.bos_id);
  const std::vector<int32_t> a = encode(first, false), b = encode(second, false);
  out.insert(out.end(), a.begin(), a.end());
  if (vocab_.add_eos && eos >= 0) out.push_back(eos);
  if (vocab_.add_sep && vocab_.sep_id >= 0) out.push_back(vocab_.sep_id);
  out.insert(out.end(), b.begin(), b.end());
  if (vocab_.add_eos && eos >= 0) out.push_back(eos);
  return out;
}

std::string tokenizer::token_to_piece(int32_t id) const {
  if (id < 0 || id >= n_vocab()) return {};
  return pieces_[static_cast<size_t>(id)];
}

const std::string& tokenizer::special_piece(int32_t id) const {
  static const std::string empty;
  if (id < 0 || id >= n_vocab() || id == bos_id() || vocab_.has_attr(id, attr_unknown)) return empty;
  return pieces_[static_cast<size_t>(id)];
}

const std::string& tokenizer::rendered_piece(int32_t id) const {
  static const std::string empty;
  if (id < 0 || id >= n_vocab()) return empty;
  return vocab_.has_attr(id, attr_control | attr_unknown) ? empty : pieces_[static_cast<size_t>(id)];
}

std::string tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string text;
  bool first = true;
  for (int32_t id : ids) {
    std::string_view piece = rendered_piece(id);
    // Like the reference: only the very first token may lose a leading space.
    if (first && vocab_.add_space_prefix && !piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
    first = false;
    text.append(piece);
  }
  clean_spaces(text);
  return text;
}

void tokenizer::clean_spaces(std::string& text) const {
  if (!vocab_.clean_spaces || text.empty()) return;
  // Three passes, each reading the previous pass's output.
  // 1: " ?", " !", " .", " ," lose the space.
  std::string a;
  a.reserve(text.size());
  a.push_back(text[0]);
  for (size_t i = 1; i < text.size(); ++i) {
    const char x = text[i];
    if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) a.pop_back();
    a.push_back(x);
  }
  // 2: " ' " becomes "'"; the dropped right space cannot start another match.
  std::string b;
  b.reserve(a.size());
  b.push_back(a[0]);
  for (size_t i = 1; i < a.size(); ++i) {
    const char x = a[i];
    if (x == '\'' && i + 1 < a.size() && a[i - 1] == ' ' && a[i + 1] == ' ') {
      b.pop_back();
      b.push_back(x);
      a[i + 1] = '\0';  // the reference blanks it; it is then skipped
      ++i;
      continue;
    }
    b.push_back(x);
  }
  // 3: " 's", " 'm", " 're", " 've" lose the space (" 't", " 'd", " 'll" keep it).
  std::string c;
  c.reserve(b.size());
  c.push_back(b[0]);
  for (size_t i = 1; i < b.size(); ++i) {
    const char x = b[i];
    if (b[i - 1] == ' ' && x == '\'' && i + 1 < b.size()) {
      const char x1 = b[i + 1];
      if (x1 == 's' || x1 == 'm') {
        c.pop_back();
      } else if (i + 2 < b.size()) {
        const char x2 = b[i + 2];
        if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) c.pop_back();
      }
    }
    c.push_back(x);
  }
  text.swap(c);
}

bool tokenizer::is_eog(int32_t id) const {
  return id >= 0 && std::binary_search(vocab_.eog_ids.begin(), vocab_.eog_ids.end(), id);
}

}  // namespace cortex
