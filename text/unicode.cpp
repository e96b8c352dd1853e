#include "text/unicode.hpp"

#include <algorithm>
#include <array>

namespace cortex::unicode {

cpt_category category_of(uint32_t cpt) {
  if (cpt > 0x10FFFF) return cpt_category::undefined;
  const category_run* begin = category_runs;
  const category_run* end = category_runs + category_runs_size;
  // Last run whose first <= cpt.
  const category_run* it = std::upper_bound(
      begin, end, cpt, [](uint32_t c, const category_run& r) { return c < r.first; });
  return (it - 1)->category;
}

uint32_t to_lower(uint32_t cpt) {
  const case_pair* end = lowercase_pairs + lowercase_pairs_size;
  const case_pair* it =
      std::lower_bound(lowercase_pairs, end, cpt, [](const case_pair& p, uint32_t c) { return p.cpt < c; });
  return it != end && it->cpt == cpt ? it->lower : cpt;
}

uint32_t nfd_first(uint32_t cpt) {
  const nfd_range* end = nfd_ranges + nfd_ranges_size;
  // First range whose last >= cpt.
  const nfd_range* it = std::lower_bound(nfd_ranges, end, cpt, [](const nfd_range& r, uint32_t c) { return r.last < c; });
  return it != end && it->first <= cpt ? it->nfd : cpt;
}

bool is_whitespace(uint32_t cpt) {
  // PropList.txt White_Space (stable since Unicode 6.3).
  if (cpt < 0x80) return (cpt >= 0x09 && cpt <= 0x0D) || cpt == 0x20;
  switch (cpt) {
    case 0x0085: case 0x00A0: case 0x1680: case 0x2028: case 0x2029:
    case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cpt >= 0x2000 && cpt <= 0x200A;
  }
}

size_t utf8_len(uint8_t lead) {
  static constexpr uint8_t lookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return lookup[lead >> 4];
}

// Decodes one character at text[pos]; returns its length, or 0 when the
// bytes there are not a well-formed sequence. Like the reference tokenizer
// this checks lead/continuation bit patterns only (overlong forms pass).
static size_t decode_one(std::string_view text, size_t pos, uint32_t& cpt) {
  const auto b = [&](size_t i) { return static_cast<uint8_t>(text[pos + i]); };
  const size_t avail = text.size() - pos;
  const uint8_t b0 = b(0);
  const auto cont = [&](size_t i) { return i < avail && (b(i) & 0xC0) == 0x80; };
  if (b0 < 0x80) { cpt = b0; return 1; }
  if ((b0 & 0xE0) == 0xC0) {
    if (!cont(1)) return 0;
    cpt = ((b0 & 0x1Fu) << 6) | (b(1) & 0x3Fu);
    return 2;
  }
  if ((b0 & 0xF0) == 0xE0) {
    if (!cont(1) || !cont(2)) return 0;
    cpt = ((b0 & 0x0Fu) << 12) | ((b(1) & 0x3Fu) << 6) | (b(2) & 0x3Fu);
    return 3;
  }
  if ((b0 & 0xF8) == 0xF0) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    cpt = ((b0 & 0x07u) << 18) | ((b(1) & 0x3Fu) << 12) | ((b(2) & 0x3Fu) << 6) | (b(3) & 0x3Fu);
    return 4;
  }
  return 0;
}

std::vector<uint32_t> cpts_from_utf8(std::string_view text) {
  std::vector<uint32_t> out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    uint32_t cpt = 0;
    const size_t n = decode_one(text, pos, cpt);
    if (n == 0) {
      out.push_back(0xFFFD);
      pos += 1;
    } else {
      out.push_back(cpt);
      pos += n;
    }
  }
  return out;
}

void append_utf8(std::string& out, uint32_t cpt) {
  if (cpt <= 0x7F) {
    out.push_back(static_cast<char>(cpt));
  } else if (cpt <= 0x7FF) {
    out.push_back(static_cast<char>(0xC0 | (cpt >> 6)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else if (cpt <= 0xFFFF) {
    out.push_back(static_cast<char>(0xE0 | (cpt >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else if (cpt <= 0x10FFFF) {
    out.push_back(static_cast<char>(0xF0 | (cpt >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else {
    append_utf8(out, 0xFFFD);
  }
}

std::string cpt_to_utf8(uint32_t cpt) {
  std::string s;
  append_utf8(s, cpt);
  return s;
}

namespace {
struct bpe_alphabet {
  std::array<uint32_t, 256> to_cpt{};
  std::array<int16_t, 324> to_byte{};  // code points 0..323 cover the alphabet
  bpe_alphabet() {
    to_byte.fill(-1);
    const auto printable = [](int b) {
      return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      to_cpt[b] = printable(b) ? static_cast<uint32_t>(b) : next++;
      to_byte[to_cpt[b]] = static_cast<int16_t>(b);
    }
  }
};
const bpe_alphabet& alphabet() {
  static const bpe_alphabet a;
  return a;
}
}  // namespace

uint32_t byte_to_bpe_cpt(uint8_t byte) { return alphabet().to_cpt[byte]; }

int bpe_cpt_to_byte(uint32_t cpt) {
  return cpt < alphabet().to_byte.size() ? alphabet().to_byte[cpt] : -1;
}

}  // namespace cortex::unicode
