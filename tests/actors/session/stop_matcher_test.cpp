// stop_matcher: hold-back across pushes, release of non-matches, the
// "ends first, then longest" rule, UTF-8 boundaries, and chunking
// independence against a naive whole-text reference on random streams.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "actors/session/stop_matcher.hpp"

namespace cortex {
namespace {

struct fed {
  std::string text;  // everything released, flush included
  int32_t match = -1;
};

fed feed(stop_matcher& m, const std::vector<std::string>& pieces) {
  fed out;
  for (const auto& p : pieces) {
    auto r = m.push(p);
    out.text += r.text;
    if (r.match >= 0) out.match = r.match;
  }
  out.text += m.flush();
  return out;
}

// Naive reference over the whole text: among all occurrences of all stop
// strings, the one ending first, then the longest; the output is the text
// before it.
fed reference(const std::string& text, const std::vector<std::string>& stops) {
  fed out{text, -1};
  size_t best_end = std::string::npos, best_len = 0;
  for (size_t s = 0; s < stops.size(); ++s) {
    if (stops[s].empty()) continue;
    const size_t pos = text.find(stops[s]);
    if (pos == std::string::npos) continue;
    const size_t end = pos + stops[s].size();
    if (end < best_end || (end == best_end && stops[s].size() > best_len)) {
      best_end = end;
      best_len = stops[s].size();
      out.match = static_cast<int32_t>(s);
    }
  }
  if (out.match >= 0) out.text = text.substr(0, best_end - best_len);
  return out;
}

bool starts_at_char_boundary(const std::string& s) {
  return s.empty() || (static_cast<unsigned char>(s[0]) & 0xC0) != 0x80;
}

TEST(stop_matcher, without_stop_strings_everything_passes_through) {
  stop_matcher m(std::vector<std::string>{});
  EXPECT_TRUE(m.empty());
  EXPECT_EQ(m.push("Once upon").text, "Once upon");
  EXPECT_EQ(m.held(), "");
  EXPECT_EQ(m.flush(), "");
}

TEST(stop_matcher, empty_stop_strings_are_ignored) {
  stop_matcher m({"", "x"});
  ASSERT_EQ(m.stops().size(), 1u);
  EXPECT_EQ(m.push("abc").text, "abc");
}

TEST(stop_matcher, match_inside_one_push_drops_it_and_the_rest) {
  stop_matcher m({"END"});
  auto r = m.push("the END of it");
  EXPECT_EQ(r.text, "the ");
  EXPECT_EQ(r.match, 0);
  EXPECT_TRUE(m.matched());
  EXPECT_EQ(m.push("more").text, "");
  EXPECT_EQ(m.push("more").match, -1);
  EXPECT_EQ(m.flush(), "");
}

TEST(stop_matcher, stop_split_across_pushes_is_held_then_removed) {
  stop_matcher m({"Lily."});
  auto r1 = m.push("named Li");
  EXPECT_EQ(r1.text, "named ");
  EXPECT_EQ(m.held(), "Li");
  auto r2 = m.push("ly");
  EXPECT_EQ(r2.text, "");
  EXPECT_EQ(m.held(), "Lily");
  auto r3 = m.push(". She");
  EXPECT_EQ(r3.text, "");
  EXPECT_EQ(r3.match, 0);
  EXPECT_EQ(m.flush(), "");
}

TEST(stop_matcher, prefix_that_does_not_match_is_released) {
  stop_matcher m({"Lily!"});
  EXPECT_EQ(m.push("named Lily").text, "named ");
  EXPECT_EQ(m.held(), "Lily");
  auto r = m.push(". She");
  EXPECT_EQ(r.text, "Lily. She");
  EXPECT_EQ(r.match, -1);
  EXPECT_EQ(m.held(), "");
}

TEST(stop_matcher, held_text_is_released_at_flush) {
  stop_matcher m({"Lily!"});
  EXPECT_EQ(m.push("named Lil").text, "named ");
  EXPECT_EQ(m.flush(), "Lil");
  EXPECT_FALSE(m.matched());
  stop_matcher again({"Lily!", "dog"});
  const fed f = feed(again, {"named ", "Lily", ", the d", "o"});
  EXPECT_EQ(f.text, "named Lily, the do");
  EXPECT_EQ(f.match, -1);
}

TEST(stop_matcher, self_overlapping_stop_string) {
  stop_matcher m({"aab"});
  EXPECT_EQ(m.push("a").text, "");
  EXPECT_EQ(m.push("a").text, "");
  EXPECT_EQ(m.push("a").text, "a");  // "aaa": only the last "aa" can start "aab"
  EXPECT_EQ(m.held(), "aa");
  auto r = m.push("b");
  EXPECT_EQ(r.match, 0);
  EXPECT_EQ(r.text, "");
}

TEST(stop_matcher, the_stop_ending_first_wins_then_the_longest) {
  {
    stop_matcher m({"abcd", "bc"});
    auto r = m.push("xabcd");
    EXPECT_EQ(r.match, 1);
    EXPECT_EQ(r.text, "xa");
  }
  {
    stop_matcher m({"b", "ab"});
    auto r = m.push("xab");
    EXPECT_EQ(r.match, 1);
    EXPECT_EQ(r.text, "x");
  }
}

TEST(stop_matcher, multibyte_prefix_is_held_and_released_whole) {
  stop_matcher m({"\xC3\xA9!"});  // "é!"
  EXPECT_EQ(m.push("caf\xC3\xA9").text, "caf");
  EXPECT_EQ(m.held(), "\xC3\xA9");
  EXPECT_EQ(m.push(" ok").text, "\xC3\xA9 ok");
}

// A stop string sharing a multi-byte character's trailing bytes must not make
// the matcher hold (or release) half a character.
TEST(stop_matcher, hold_back_never_splits_a_character) {
  stop_matcher m({"\xA9x"});  // not valid UTF-8 (intake rejects it), but must not cut "é"
  auto r = m.push("caf\xC3\xA9");
  EXPECT_EQ(r.text, "caf");
  EXPECT_EQ(m.held(), "\xC3\xA9");
  EXPECT_EQ(m.push("y").text, "\xC3\xA9y");
}

// Random texts over a small alphabet (so that partial matches are frequent),
// random stop sets and random split points: the released text never depends
// on the split and equals the naive reference; every released piece and the
// held text start at a character boundary.
TEST(stop_matcher, random_streams_match_the_whole_text_reference) {
  std::mt19937 rng(1234);
  const std::vector<std::string> alphabet = {"a", "b", "c", " ", "\xC3\xA9", "\xE6\x97\xA5"};
  auto random_string = [&](int min_len, int max_len) {
    std::string s;
    const int n = std::uniform_int_distribution<int>(min_len, max_len)(rng);
    for (int i = 0; i < n; ++i) s += alphabet[rng() % alphabet.size()];
    return s;
  };
  int n_matched = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<std::string> stops;
    const int n_stops = 1 + static_cast<int>(rng() % 3);
    for (int s = 0; s < n_stops; ++s) stops.push_back(random_string(1, 4));
    const std::string text = random_string(0, 40);
    // Split at character boundaries (the detokenizer's promise).
    std::vector<std::string> pieces;
    std::string cur;
    for (size_t i = 0; i < text.size();) {
      size_t len = 1;
      const auto c = static_cast<unsigned char>(text[i]);
      if (c >= 0xE0) len = 3; else if (c >= 0xC0) len = 2;
      cur += text.substr(i, len);
      i += len;
      if (rng() % 3 == 0) pieces.push_back(std::move(cur)), cur.clear();
    }
    pieces.push_back(cur);

    stop_matcher m(stops);
    fed got;
    for (const auto& p : pieces) {
      auto r = m.push(p);
      ASSERT_TRUE(starts_at_char_boundary(r.text));
      ASSERT_TRUE(starts_at_char_boundary(m.held()));
      got.text += r.text;
      if (r.match >= 0) got.match = r.match;
    }
    got.text += m.flush();
    const fed want = reference(text, stops);
    ASSERT_EQ(got.text, want.text) << "iteration " << iter << " text '" << text << "'";
    ASSERT_EQ(got.match, want.match) << "iteration " << iter;
    n_matched += want.match >= 0;
  }
  EXPECT_GT(n_matched, 300);  // the random cases exercise matches, not only misses
}

}  // namespace
}  // namespace cortex
