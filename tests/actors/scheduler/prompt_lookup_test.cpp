// Prompt-lookup drafting: the most recent earlier match of the last n-gram,
// up to max_draft following tokens. Expected drafts worked out by hand.
#include "actors/scheduler/prompt_lookup.hpp"

#include <gtest/gtest.h>

namespace cortex {
namespace {

using v = std::vector<int32_t>;

TEST(PromptLookup, ProposesTheTokensAfterTheMostRecentMatch) {
  // Last 2-gram (1, 2) occurs at 0 (followed by 3, 4) and at 5 (followed by 9, 8).
  const v t = {1, 2, 3, 4, 0, 1, 2, 9, 8, 7, 1, 2};
  EXPECT_EQ(prompt_lookup_draft(t, {2, 3}), (v{9, 8, 7}));
  EXPECT_EQ(prompt_lookup_draft(t, {2, 8}), (v{9, 8, 7, 1, 2}));  // runs to the end of the history
  EXPECT_EQ(prompt_lookup_draft(t, {2, 1}), (v{9}));
}

TEST(PromptLookup, LongerNgramsMustMatchWhole) {
  const v t = {5, 1, 2, 3, 4, 6, 1, 2, 7, 5, 1, 2};
  EXPECT_EQ(prompt_lookup_draft(t, {2, 2}), (v{7, 5}));   // (1, 2) last at 6
  EXPECT_EQ(prompt_lookup_draft(t, {3, 2}), (v{3, 4}));   // (5, 1, 2) only at 0
  EXPECT_EQ(prompt_lookup_draft(t, {4, 2}), v{});         // (7, 5, 1, 2) nowhere earlier
}

TEST(PromptLookup, AMatchOverlappingTheTailCounts) {
  // A run of one token: the most recent earlier (4, 4, 4) starts at 1 and
  // is followed by the last token only.
  const v t = {4, 4, 4, 4, 4};
  EXPECT_EQ(prompt_lookup_draft(t, {3, 8}), (v{4}));
  EXPECT_EQ(prompt_lookup_draft(t, {1, 8}), (v{4}));
}

TEST(PromptLookup, NothingWhenOffShortOrUnmatched) {
  EXPECT_EQ(prompt_lookup_draft({1, 2, 1, 2}, {2, 0}), v{});
  EXPECT_EQ(prompt_lookup_draft({1, 2, 1, 2}, {0, 4}), v{});
  EXPECT_EQ(prompt_lookup_draft({1, 2}, {2, 4}), v{});
  EXPECT_EQ(prompt_lookup_draft({1, 2, 3, 4}, {1, 4}), v{});
  EXPECT_EQ(prompt_lookup_draft({}, {1, 4}), v{});
}

}  // namespace
}  // namespace cortex
