// A map from byte strings to int32 values for vocabularies: hundreds of
// thousands of short keys (token texts, "left right" BPE merges) inserted
// once at load and then only looked up.
//
// Keys are copied into one arena and the table holds (hash tag, entry)
// pairs with linear probing, so a load makes a few large allocations
// instead of one node per key (std::unordered_map made a 262k-token,
// 515k-merge Gemma 4 vocabulary take ~0.7 s to load). A lookup can take
// its key in two pieces joined by a separator, which finds a merge from
// its two halves without building the string.
//
// Not thread-safe while inserting; const methods may run concurrently.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace cortex {

class string_map {
 public:
  // Room for `n_keys` keys of `n_bytes` bytes in all without reallocating.
  void reserve(size_t n_keys, size_t n_bytes);

  // Adds key -> value (value >= 0) and returns -1, or, when the key is
  // already present, changes nothing and returns the value it has.
  int32_t insert(std::string_view key, int32_t value);

  // Value of `key`, or -1.
  int32_t find(std::string_view key) const { return find(key, '\0', {}, false); }
  // Value of the key left + sep + right, or -1.
  int32_t find(std::string_view left, char sep, std::string_view right) const { return find(left, sep, right, true); }

  size_t size() const { return values_.size(); }

 private:
  int32_t find(std::string_view left, char sep, std::string_view right, bool joined) const;
  int32_t lookup(uint64_t hash, std::string_view left, char sep, std::string_view right, bool joined) const;
  std::string_view key(uint32_t entry) const;
  void rehash(size_t n_slots);
  size_t free_slot(uint64_t hash) const;

  std::vector<char> bytes_;        // keys, back to back (under 4 GiB in all)
  std::vector<uint32_t> offsets_;  // [size() + 1] key i is bytes_[offsets_[i], offsets_[i + 1])
  std::vector<int32_t> values_;    // [size()]
  // [power of two, at most half full] 0 = empty, else (high 32 hash bits
  // << 32) | (entry + 1): a probe reads only this array until tags match.
  std::vector<uint64_t> slots_;
};

}  // namespace cortex
