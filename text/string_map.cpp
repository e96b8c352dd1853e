#include "text/string_map.hpp"

#include <cstring>

namespace cortex {
namespace {

// FNV-1a over the bytes, then a murmur3 finalizer so that both the low bits
// (slot) and the high bits (tag) are well mixed.
struct hasher {
  uint64_t h = 0xcbf29ce484222325ull;
  void add(std::string_view s) {
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  }
  void add(char c) { h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull; }
  uint64_t done() const {
    uint64_t x = h;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
  }
};

uint64_t hash_of(std::string_view s) {
  hasher h;
  h.add(s);
  return h.done();
}

constexpr uint64_t k_tag_mask = 0xFFFFFFFF00000000ull;
uint32_t entry_of(uint64_t slot) { return static_cast<uint32_t>(slot) - 1; }

bool starts_with(const char* p, std::string_view s) { return s.empty() || std::memcmp(p, s.data(), s.size()) == 0; }

}  // namespace

std::string_view string_map::key(uint32_t entry) const {
  return {bytes_.data() + offsets_[entry], offsets_[entry + 1] - offsets_[entry]};
}

void string_map::reserve(size_t n_keys, size_t n_bytes) {
  if (offsets_.empty()) offsets_.push_back(0);
  offsets_.reserve(n_keys + 1);
  values_.reserve(n_keys);
  bytes_.reserve(n_bytes);
  size_t n_slots = 16;
  while (n_slots < 2 * n_keys) n_slots *= 2;
  if (n_slots > slots_.size()) rehash(n_slots);
}

size_t string_map::free_slot(uint64_t hash) const {
  const size_t mask = slots_.size() - 1;
  size_t s = hash & mask;
  while (slots_[s] != 0) s = (s + 1) & mask;
  return s;
}

void string_map::rehash(size_t n_slots) {
  slots_.assign(n_slots, 0);
  for (uint32_t e = 0; e < values_.size(); ++e) {
    const uint64_t hash = hash_of(key(e));
    slots_[free_slot(hash)] = (hash & k_tag_mask) | (e + 1);
  }
}

int32_t string_map::insert(std::string_view k, int32_t value) {
  if (offsets_.empty()) offsets_.push_back(0);
  if (2 * (values_.size() + 1) > slots_.size()) rehash(slots_.empty() ? 16 : 2 * slots_.size());
  const uint64_t hash = hash_of(k);
  if (const int32_t present = lookup(hash, k, '\0', {}, false); present >= 0) return present;
  const auto e = static_cast<uint32_t>(values_.size());
  bytes_.insert(bytes_.end(), k.begin(), k.end());
  offsets_.push_back(static_cast<uint32_t>(bytes_.size()));
  values_.push_back(value);
  slots_[free_slot(hash)] = (hash & k_tag_mask) | (e + 1);
  return -1;
}

int32_t string_map::find(std::string_view left, char sep, std::string_view right, bool joined) const {
  if (slots_.empty()) return -1;
  hasher h;
  h.add(left);
  if (joined) {
    h.add(sep);
    h.add(right);
  }
  return lookup(h.done(), left, sep, right, joined);
}

int32_t string_map::lookup(uint64_t hash, std::string_view left, char sep, std::string_view right,
                           bool joined) const {
  const uint64_t tag = hash & k_tag_mask;
  const size_t n = left.size() + (joined ? 1 + right.size() : 0);
  const size_t mask = slots_.size() - 1;
  for (size_t s = hash & mask; slots_[s] != 0; s = (s + 1) & mask) {
    if ((slots_[s] & k_tag_mask) != tag) continue;
    const uint32_t e = entry_of(slots_[s]);
    if (offsets_[e + 1] - offsets_[e] != n) continue;
    const char* p = bytes_.data() + offsets_[e];
    if (!starts_with(p, left)) continue;
    if (!joined || (p[left.size()] == sep && starts_with(p + left.size() + 1, right))) return values_[e];
  }
  return -1;
}

}  // namespace cortex
