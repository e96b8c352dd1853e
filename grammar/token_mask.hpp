// Which tokens a grammar allows next: a trie of the vocabulary's byte
// strings (built once per vocabulary, shared by every request) walked from
// the matcher's state, with a per-request cache of masks per stack.
//
// A state's mask is the union over its stacks of each stack's mask (a byte
// string is viable from a set of stacks iff it is from one of them), so the
// cache is keyed by one stack node plus the unfinished UTF-8 bytes: the
// repeated states of a generation (inside a string, between fields) cost a
// cache lookup and an OR of the bitsets.
//
// End-of-generation tokens are allowed iff the grammar is complete; tokens
// with no bytes (control tokens) never are.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar_matcher.hpp"

namespace cortex {

class tokenizer;

// The vocabulary as a trie, nodes in depth-first preorder so a walk is a
// loop over arrays that skips a rejected node's subtree in one jump.
// Immutable after construction: share it between threads.
class vocab_trie {
 public:
  // token_bytes[id]: what token id adds to the output (empty: never allowed
  // under a grammar); eog_ids: tokens that end generation.
  vocab_trie(std::vector<std::string> token_bytes, std::vector<int32_t> eog_ids);
  // From a tokenizer: rendered pieces (what the session prints), eog ids.
  static std::shared_ptr<const vocab_trie> from_tokenizer(const tokenizer& t);

  int32_t n_vocab() const { return static_cast<int32_t>(bytes_.size()); }
  const std::string& token_bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }
  const std::vector<int32_t>& eog_ids() const { return eog_; }
  bool is_eog(int32_t id) const { return std::binary_search(eog_.begin(), eog_.end(), id); }

 private:
  friend class token_masker;
  std::vector<std::string> bytes_;   // [n_vocab]
  std::vector<int32_t> eog_;         // sorted
  // Nodes [0, n): node 0 is the root (the empty string).
  std::vector<uint8_t> byte_;        // the byte leading into the node
  std::vector<uint16_t> depth_;      // root 0
  std::vector<uint32_t> skip_;       // first node after the node's subtree
  std::vector<uint32_t> tok_begin_;  // tokens ending here: toks_[tok_begin_[i], tok_begin_[i + 1])
  std::vector<int32_t> toks_;
};

// One request's mask computer. Not thread-safe (it advances the matcher).
class token_masker {
 public:
  // Cache bound in bytes of masks (cleared whole when full).
  static constexpr size_t cache_bytes = 8u << 20;
  // Bound on the matcher's memo of states between walks (each may hold a
  // 1 KiB transition row).
  static constexpr size_t max_states = 4096;

  token_masker(std::shared_ptr<const vocab_trie> trie, grammar_matcher& m);

  // mask (n_vocab bits, bit id set = allowed) for state s. Returns the
  // number of allowed tokens.
  size_t compute(const grammar_matcher::state& s, std::vector<uint64_t>& mask);

  size_t n_words() const { return words_; }
  uint64_t cache_hits() const { return hits_; }
  uint64_t cache_misses() const { return misses_; }

 private:
  // The mask of the one-stack state {node} with s's unfinished UTF-8.
  const std::vector<uint64_t>& stack_mask(uint32_t node, const grammar_matcher::state& s);

  std::shared_ptr<const vocab_trie> trie_;
  grammar_matcher& m_;
  size_t words_;
  std::unordered_map<uint64_t, std::vector<uint64_t>> cache_;
  std::vector<uint32_t> levels_;  // walk: the matcher's state id per trie depth
  uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace cortex
