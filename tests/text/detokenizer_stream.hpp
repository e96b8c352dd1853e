// Test helper: streams ids through incremental_detokenizer, checking that
// every chunk is valid UTF-8 (strict: no overlongs, surrogates, > U+10FFFF).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "text/tokenizer.hpp"

namespace cortex {

// Strict UTF-8 check (no overlongs, surrogates or values past U+10FFFF).
inline bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto b0 = static_cast<uint8_t>(s[i]);
    size_t n = 0;
    uint32_t cpt = 0;
    if (b0 < 0x80) { n = 1; cpt = b0; }
    else if ((b0 & 0xE0) == 0xC0) { n = 2; cpt = b0 & 0x1F; }
    else if ((b0 & 0xF0) == 0xE0) { n = 3; cpt = b0 & 0x0F; }
    else if ((b0 & 0xF8) == 0xF0) { n = 4; cpt = b0 & 0x07; }
    else return false;
    if (i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      const auto b = static_cast<uint8_t>(s[i + k]);
      if ((b & 0xC0) != 0x80) return false;
      cpt = (cpt << 6) | (b & 0x3F);
    }
    static const uint32_t min_cpt[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cpt < min_cpt[n] || cpt > 0x10FFFF || (cpt >= 0xD800 && cpt <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

// Streams `ids`; checks every chunk is valid UTF-8; returns the whole text.
inline std::string stream(const tokenizer& t, const std::vector<int32_t>& ids) {
  incremental_detokenizer d(t);
  std::string all;
  for (int32_t id : ids) {
    const std::string chunk = d.push(id);
    EXPECT_TRUE(valid_utf8(chunk)) << "chunk after id " << id;
    all += chunk;
  }
  const std::string tail = d.flush();
  EXPECT_TRUE(valid_utf8(tail));
  return all + tail;
}

}  // namespace cortex
