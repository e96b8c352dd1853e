// Incremental matching of bytes against a compiled grammar: a pushdown
// automaton whose configuration is a set of stacks, plus an unfinished UTF-8
// sequence. Stacks are interned as persistent lists (node = top element +
// parent node), so a state is a short sorted list of node ids: copying one
// is cheap, comparing and hashing it is cheap, and the expansion of a stack
// through rule references (which stacks with a character on top it stands
// for) is computed once per node and remembered.
//
// A byte string is accepted iff it is a prefix of some string of the
// grammar's language (a viable prefix) and is valid UTF-8 so far (no
// overlong forms, surrogates or code points past U+10FFFF; an unfinished
// sequence is viable iff some completion of it is).
//
// Expanding a stack recurses through rule references that can end empty;
// past max_expand_depth levels (a grammar nesting optional rules thousands
// deep) the rest is not followed: such strings are then refused, never
// wrongly admitted, and the stack stays bounded.
//
// Thread: not thread-safe (advancing interns nodes). One matcher per
// sequence; it shares the immutable grammar.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.hpp"

namespace cortex {

class grammar_matcher {
 public:
  struct state {
    std::vector<uint32_t> stacks;  // sorted stack nodes, each with a character on top; 0 = empty stack (done)
    uint32_t partial = 0;          // bits of an unfinished UTF-8 sequence
    uint8_t n_remaining = 0;       // its continuation bytes still to come (0: none pending)
    uint8_t n_total = 0;           // its length in bytes
    bool operator==(const state& o) const {
      return stacks == o.stacks && partial == o.partial && n_remaining == o.n_remaining && n_total == o.n_total;
    }
  };

  static constexpr int max_expand_depth = 2000;
  // A state may keep many parses open (an object of many optional
  // properties opens one per property), but a grammar whose parses
  // multiply with the output (x ::= "a" x "b" | "a" x "c" | "" doubles
  // them per "a") would make every step slower without bound. Callers
  // refuse a request whose state holds more than this many stacks
  // (intake: the initial state; the executor: after each token).
  static constexpr size_t max_open_stacks = 4096;

  explicit grammar_matcher(std::shared_ptr<const grammar> g);

  const state& initial() const { return initial_; }
  const grammar& rules() const { return *g_; }

  // `out` = `in` after one byte. Returns false when no string of the
  // language starts with the bytes so far (out is then unspecified).
  // `in` and `out` must be different objects.
  bool advance(const state& in, uint8_t byte, state& out);
  // `s` after `bytes`, in place; false (s unchanged) if not viable.
  bool advance(state& s, std::string_view bytes);
  // The input so far is a whole string of the language (end may come now).
  static bool is_complete(const state& s) {
    return s.n_remaining == 0 && !s.stacks.empty() && s.stacks.front() == 0;
  }
  // The key of a one-stack state (token_mask's cache): node + UTF-8 part.
  static uint64_t key(uint32_t node, const state& s) {
    return (static_cast<uint64_t>(node) << 32) | (static_cast<uint64_t>(s.partial) << 8) |
           (static_cast<uint64_t>(s.n_remaining) << 4) | s.n_total;
  }
  size_t n_nodes() const { return nodes_.size(); }

  // States as ids, with a memo of transitions, for walks that revisit the
  // same states many times (token_mask's trie walk: inside a JSON string
  // every character leads back to the same state). Ids are valid until
  // forget_states(), which the walker calls between walks when
  // n_states() grows past its bound.
  static constexpr uint32_t dead = 0xFFFFFFFFu;
  static constexpr uint32_t unknown = 0xFFFFFFFEu;
  uint32_t state_id(const state& s);
  // The id of the state after `byte`, or dead.
  uint32_t step(uint32_t id, uint8_t byte) {
    const auto& t = transitions_[id];
    const uint32_t r = t ? (*t)[byte] : unknown;
    return r != unknown ? r : compute_step(id, byte);
  }
  size_t n_states() const { return states_.size(); }
  void forget_states();

 private:
  struct node {
    uint32_t pos;     // element index in the grammar
    uint32_t parent;  // the rest of the stack (0: empty)
  };
  uint32_t intern(uint32_t pos, uint32_t parent);
  // The character-topped stacks (0: empty) that stack n stands for.
  const std::vector<uint32_t>& expand(uint32_t n);
  void expand_into(uint32_t n, std::vector<uint32_t>& out);
  // Stacks after the code point c, appended to out (unsorted).
  void step_char(const std::vector<uint32_t>& stacks, uint32_t c, std::vector<uint32_t>& out);
  bool is_end(uint32_t pos) const;
  uint32_t compute_step(uint32_t id, uint8_t byte);

  std::shared_ptr<const grammar> g_;
  std::vector<node> nodes_;                          // [0] = the empty stack
  std::unordered_map<uint64_t, uint32_t> interned_;  // (pos, parent) -> node
  std::vector<std::vector<uint32_t>> expansions_;    // [node], sorted; valid when expanded_[node]
  std::vector<bool> expanded_;
  int depth_ = 0;  // expand()'s recursion
  std::vector<state> states_;                          // [id]
  std::unordered_map<std::string, uint32_t> state_ids_;  // serialized state -> id
  // [id] -> next id per byte (unknown until computed), allocated when the
  // state is first stepped: the trie walk's inner loop is one load.
  std::vector<std::unique_ptr<std::array<uint32_t, 256>>> transitions_;
  state initial_;
  state scratch_;
};

}  // namespace cortex
