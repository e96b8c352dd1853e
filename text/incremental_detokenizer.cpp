// incremental_detokenizer (declared in text/tokenizer.hpp).
//
// Pieces are appended to raw_; the longest prefix whose space cleaning can
// no longer change is cleaned and moved to pending_; pending_ is returned
// up to its last complete UTF-8 character.
#include <string>

#include "text/tokenizer.hpp"
#include "text/unicode.hpp"

namespace cortex {
namespace {

// A space whose cleaning outcome and influence on its neighbours are fixed
// by the characters before `end`: followed by an ordinary character, or by
// a second space that is not followed by an apostrophe. Cleaning rules only
// look at a space and at most five characters after it (" ' 're" chains
// through pass 2's removals), so other spaces keep the text unsettled.
bool inert_space(const std::string& raw, size_t p, size_t end) {
  if (p + 1 >= end) return false;
  const char c1 = raw[p + 1];
  if (c1 != ' ' && c1 != '\'') return true;
  if (c1 == '\'') return false;
  return p + 2 < end && raw[p + 2] != '\'';
}

// Largest k <= raw.size() such that cleaning raw[0, k) and raw[k, ...)
// separately equals cleaning the whole.
size_t settled_prefix(const std::string& raw) {
  for (size_t k = raw.size(); k > 0; --k) {
    bool ok = true;
    for (size_t p = (k >= 5 ? k - 5 : 0); p < k && ok; ++p) {
      if (raw[p] == ' ' && !inert_space(raw, p, k)) ok = false;
    }
    if (ok) return k;
  }
  return 0;
}

// Length of the well-formed UTF-8 character at s[pos]: > 0 when complete,
// 0 when more bytes are needed (only if !at_end), and -(n) when the n bytes
// there are an ill-formed maximal subpart (to become one U+FFFD).
long utf8_char_at(const std::string& s, size_t pos, bool at_end) {
  const auto b0 = static_cast<uint8_t>(s[pos]);
  if (b0 < 0x80) return 1;
  size_t need = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return -1;
  }
  for (size_t i = 1; i <= need; ++i) {
    if (pos + i >= s.size()) return at_end ? -static_cast<long>(i) : 0;
    const auto b = static_cast<uint8_t>(s[pos + i]);
    const bool ok = (i == 1) ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) return -static_cast<long>(i);
  }
  return static_cast<long>(need + 1);
}

}  // namespace

incremental_detokenizer::incremental_detokenizer(const tokenizer& t, bool continues_text, bool verbatim)
    : tok_(t), continues_text_(continues_text), verbatim_(verbatim) {}

std::string incremental_detokenizer::push(int32_t id) {
  std::string_view piece = tok_.rendered_piece(id);
  if (first_ && !continues_text_ && tok_.vocabulary().add_space_prefix && !piece.empty() && piece.front() == ' ') {
    piece.remove_prefix(1);
  }
  first_ = false;
  raw_.append(piece);
  const bool clean = tok_.vocabulary().clean_spaces && !verbatim_;
  const size_t k = clean ? settled_prefix(raw_) : raw_.size();
  if (k > 0) {
    std::string settled = raw_.substr(0, k);
    raw_.erase(0, k);
    if (clean) tok_.clean_spaces(settled);
    pending_ += settled;
  }
  return take_valid(false);
}

std::string incremental_detokenizer::flush() {
  if (!verbatim_) tok_.clean_spaces(raw_);
  pending_ += raw_;
  raw_.clear();
  std::string out = take_valid(true);
  first_ = true;
  return out;
}

std::string incremental_detokenizer::take_valid(bool at_end) {
  std::string out;
  size_t pos = 0;
  while (pos < pending_.size()) {
    const long n = utf8_char_at(pending_, pos, at_end);
    if (n == 0) break;  // incomplete: wait for more bytes
    if (n > 0) {
      out.append(pending_, pos, static_cast<size_t>(n));
      pos += static_cast<size_t>(n);
    } else {
      unicode::append_utf8(out, 0xFFFD);
      pos += static_cast<size_t>(-n);
    }
  }
  pending_.erase(0, pos);
  return out;
}

}  // namespace cortex
