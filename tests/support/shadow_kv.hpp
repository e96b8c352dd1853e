// A shadow of the K/V arena for scheduler tests that play the executor:
// each slot holds the token whose K/V a step wrote there, so a test can
// check what an entry reads (the positions before pos0 must hold its
// sequence's tokens, whoever wrote them: itself, a cached block, a step
// before a preemption) and answer from what the slots hold.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "actors/scheduler/sequence.hpp"
#include "messages/engine.hpp"

namespace cortex::testing {

class shadow_kv {
 public:
  shadow_kv(int32_t n_blocks, int32_t block_size) : bs_(block_size), slots_(static_cast<size_t>(n_blocks * block_size), -1) {}

  // Checks e's table covers its positions and its earlier positions hold
  // s's tokens, then writes e's tokens into their slots.
  void read_and_write(const step_entry& e, const sequence& s) {
    EXPECT_GE(static_cast<int32_t>(e.block_table.size()) * bs_, e.pos0 + e.n_tokens());
    for (int32_t p = 0; p < e.pos0; ++p) {
      EXPECT_EQ(slot(e, p), s.tokens[static_cast<size_t>(p)]) << "seq " << e.rid << " reads a wrong K/V at " << p;
    }
    for (int32_t i = 0; i < e.n_tokens(); ++i) slot(e, e.pos0 + i) = e.tokens[static_cast<size_t>(i)];
  }
  // The token in e's slot of position p (0 before position 0).
  int32_t at(const step_entry& e, int32_t p) { return p < 0 ? 0 : slot(e, p); }

 private:
  int32_t& slot(const step_entry& e, int32_t p) {
    return slots_[static_cast<size_t>(e.block_table[static_cast<size_t>(p / bs_)] * bs_ + p % bs_)];
  }
  int32_t bs_;
  std::vector<int32_t> slots_;
};

}  // namespace cortex::testing
