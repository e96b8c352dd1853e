// text/string_map.hpp against std::unordered_map on random keys (fixed seed).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <unordered_map>

#include "text/string_map.hpp"

namespace cortex {
namespace {

TEST(StringMap, InsertKeepsTheFirstValue) {
  string_map m;
  EXPECT_EQ(m.find("a"), -1);
  EXPECT_EQ(m.insert("a b", 7), -1);
  EXPECT_EQ(m.insert("a b", 9), 7);
  EXPECT_EQ(m.size(), 1u);
  EXPECT_EQ(m.find("a b"), 7);
  EXPECT_EQ(m.find("a", ' ', "b"), 7);
  EXPECT_EQ(m.find("a", '_', "b"), -1);
  EXPECT_EQ(m.find("a ", ' ', "b"), -1);
  EXPECT_EQ(m.find("a b", ' ', ""), -1);
  EXPECT_EQ(m.insert("", 3), -1);
  EXPECT_EQ(m.find(""), 3);
}

TEST(StringMap, AgreesWithUnorderedMap) {
  std::mt19937 rng(42);
  std::unordered_map<std::string, int32_t> want;
  string_map m;
  m.reserve(1000, 8000);  // too small on purpose: growth must rehash
  const auto random_key = [&] {
    std::string k(1 + rng() % 12, ' ');
    for (char& c : k) c = static_cast<char>("ab \xe2\x96\x81\n"[rng() % 7]);
    return k;
  };
  for (int32_t i = 0; i < 20000; ++i) {
    const std::string k = random_key();
    const auto [it, added] = want.emplace(k, i);
    EXPECT_EQ(m.insert(k, i), added ? -1 : it->second);
  }
  EXPECT_EQ(m.size(), want.size());
  for (int i = 0; i < 20000; ++i) {
    const std::string k = random_key();
    const auto it = want.find(k);
    ASSERT_EQ(m.find(k), it == want.end() ? -1 : it->second) << k;
    const size_t cut = k.find(' ');
    if (cut != std::string::npos) {
      ASSERT_EQ(m.find(std::string_view(k).substr(0, cut), ' ', std::string_view(k).substr(cut + 1)), m.find(k));
    }
  }
}

}  // namespace
}  // namespace cortex
