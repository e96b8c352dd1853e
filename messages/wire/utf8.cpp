#include "messages/wire/utf8.hpp"

#include <cstdint>

namespace cortex::wire {

bool is_valid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    const unsigned char lead = *p;
    if (lead < 0x80) {
      ++p;
      continue;
    }
    // Sequence length and the smallest code point it may encode (RFC 3629).
    int n_cont;
    uint32_t cp, lowest;
    if (lead >= 0xC2 && lead <= 0xDF) {
      n_cont = 1, cp = lead & 0x1Fu, lowest = 0x80;
    } else if ((lead & 0xF0) == 0xE0) {
      n_cont = 2, cp = lead & 0x0Fu, lowest = 0x800;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      n_cont = 3, cp = lead & 0x07u, lowest = 0x10000;
    } else {
      return false;  // continuation byte, C0/C1 overlong lead, or F5..FF
    }
    if (end - p <= n_cont) return false;
    for (int k = 1; k <= n_cont; ++k) {
      if ((p[k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[k] & 0x3Fu);
    }
    if (cp < lowest || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    p += n_cont + 1;
  }
  return true;
}

}  // namespace cortex::wire
