// The grammar mask by brute force, for property tests of the trie walk and
// of the samplers that use it: a token is allowed iff it ends generation and
// the grammar is complete, or it has bytes and feeding them one by one keeps
// the input a viable prefix. O(vocabulary * token length).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "grammar/grammar_matcher.hpp"
#include "grammar/token_mask.hpp"

namespace cortex::testing {

inline bool brute_force_allows(grammar_matcher& m, const vocab_trie& t, const grammar_matcher::state& s, int32_t id) {
  if (t.is_eog(id)) return grammar_matcher::is_complete(s);
  const std::string& b = t.token_bytes(id);
  grammar_matcher::state x = s;
  return !b.empty() && m.advance(x, b);
}

// Bit id of word id / 64 set iff brute_force_allows.
inline std::vector<uint64_t> brute_force_mask(grammar_matcher& m, const vocab_trie& t, const grammar_matcher::state& s) {
  std::vector<uint64_t> mask((static_cast<size_t>(t.n_vocab()) + 63) / 64, 0);
  for (int32_t id = 0; id < t.n_vocab(); ++id) {
    if (brute_force_allows(m, t, s, id)) mask[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
  }
  return mask;
}

}  // namespace cortex::testing
