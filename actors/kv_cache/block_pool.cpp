#include "actors/kv_cache/block_pool.hpp"

#include <cstring>
#include <sstream>

namespace cortex {

namespace {

// 64x64 -> 128-bit multiply folded to 64 bits (wyhash's "mum").
inline uint64_t mum(uint64_t a, uint64_t b) {
  const unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

constexpr uint64_t k_secret0 = 0xa0761d6478bd642full;
constexpr uint64_t k_secret1 = 0xe7037ed1a0b428dbull;
constexpr uint64_t k_secret2 = 0x8ebc6af09c88c6e3ull;

// The prefix cache's key of a block of `group` under `hash`: the hash
// itself for group 0 (a model with one group keys blocks as it always did).
uint64_t cache_key(uint64_t hash, int32_t group) {
  return group == 0 ? hash : mum(hash ^ k_secret2, static_cast<uint64_t>(group) ^ k_secret1);
}

}  // namespace

uint64_t kv_block_hash(uint64_t hash_parent, const int32_t* tokens, int32_t n_tokens) {
  uint64_t h = mum(hash_parent ^ k_secret0, static_cast<uint64_t>(n_tokens) ^ k_secret1);
  int32_t i = 0;
  for (; i + 1 < n_tokens; i += 2) {
    const uint64_t w = static_cast<uint64_t>(static_cast<uint32_t>(tokens[i])) |
                       (static_cast<uint64_t>(static_cast<uint32_t>(tokens[i + 1])) << 32);
    h = mum(h ^ k_secret1, w ^ k_secret2);
  }
  if (i < n_tokens) {
    h = mum(h ^ k_secret2, static_cast<uint64_t>(static_cast<uint32_t>(tokens[i])) ^ k_secret0);
  }
  return mum(h ^ k_secret0, hash_parent ^ k_secret2);
}

block_pool::block_pool(int32_t n_blocks, int32_t block_size, int32_t n_groups)
    : n_blocks_(n_blocks),
      block_size_(block_size),
      meta_(static_cast<size_t>(n_blocks)),
      tokens_(static_cast<size_t>(n_blocks) * block_size, 0),
      n_used_in_(static_cast<size_t>(n_groups), 0) {
  free_list_.reserve(static_cast<size_t>(n_blocks));
  // Block 0 is handed out first: easier to read in tests and traces.
  for (int32_t b = n_blocks - 1; b >= 0; --b) {
    free_list_.push_back(b);
    meta_[b].in_free = true;
  }
  cached_.reserve(static_cast<size_t>(n_blocks));
}

int32_t block_pool::allocate(int32_t group) {
  int32_t b = -1;
  if (!free_list_.empty()) {
    b = free_list_.back();
    free_list_.pop_back();
    meta_[b].in_free = false;
  } else if (lru_head_ >= 0) {
    b = lru_head_;
    lru_remove(b);
    uncache(b);
    ++n_evictions_;
  } else {
    return -1;
  }
  meta_[b].ref_count = 1;
  meta_[b].group = group;
  ++n_used_in_[static_cast<size_t>(group)];
  return b;
}

std::vector<int32_t> block_pool::peek_evictions(int32_t n_new) const {
  std::vector<int32_t> out;
  int32_t n_evict = n_new - n_free();
  for (int32_t b = lru_head_; b >= 0 && n_evict > 0; b = meta_[b].lru_next, --n_evict) {
    out.push_back(b);
  }
  return out;
}

void block_pool::ref(int32_t block) {
  block_meta& m = meta_[block];
  if (m.in_lru) lru_remove(block);
  if (m.ref_count++ == 0) ++n_used_in_[static_cast<size_t>(m.group)];
}

void block_pool::unref(int32_t block) {
  block_meta& m = meta_[block];
  if (--m.ref_count > 0) return;
  --n_used_in_[static_cast<size_t>(m.group)];
  if (m.cached) {
    lru_push_back(block);
  } else {
    m.in_free = true;
    free_list_.push_back(block);
  }
}

int32_t block_pool::find_cached(uint64_t hash, const int32_t* tokens, int32_t group) const {
  const auto it = cached_.find(cache_key(hash, group));
  if (it == cached_.end()) return -1;
  const int32_t b = it->second;
  if (meta_[b].group != group || meta_[b].hash != hash) return -1;  // keys of two groups collided
  if (std::memcmp(tokens_of(b), tokens, sizeof(int32_t) * static_cast<size_t>(block_size_)) != 0) {
    return -1;  // a 64-bit collision: different tokens, not a hit
  }
  return b;
}

bool block_pool::cache_block(int32_t block, uint64_t hash, const int32_t* tokens) {
  block_meta& m = meta_[block];
  const uint64_t key = cache_key(hash, m.group);
  if (m.cached || cached_.count(key) != 0) return false;
  cached_.emplace(key, block);
  m.cached = true;
  m.hash = hash;
  std::memcpy(tokens_.data() + static_cast<size_t>(block) * block_size_, tokens,
              sizeof(int32_t) * static_cast<size_t>(block_size_));
  return true;
}

void block_pool::lru_push_back(int32_t block) {
  block_meta& m = meta_[block];
  m.in_lru = true;
  m.lru_prev = lru_tail_;
  m.lru_next = -1;
  if (lru_tail_ >= 0) {
    meta_[lru_tail_].lru_next = block;
  } else {
    lru_head_ = block;
  }
  lru_tail_ = block;
  ++n_lru_;
}

void block_pool::lru_remove(int32_t block) {
  block_meta& m = meta_[block];
  if (m.lru_prev >= 0) {
    meta_[m.lru_prev].lru_next = m.lru_next;
  } else {
    lru_head_ = m.lru_next;
  }
  if (m.lru_next >= 0) {
    meta_[m.lru_next].lru_prev = m.lru_prev;
  } else {
    lru_tail_ = m.lru_prev;
  }
  m.lru_prev = m.lru_next = -1;
  m.in_lru = false;
  --n_lru_;
}

void block_pool::uncache(int32_t block) {
  block_meta& m = meta_[block];
  cached_.erase(cache_key(m.hash, m.group));
  m.cached = false;
  m.hash = 0;
}

std::string block_pool::check_invariants() const {
  std::ostringstream err;
  int32_t n_free_seen = 0;
  int32_t n_lru_seen = 0;
  int32_t n_used_seen = 0;
  for (int32_t b = 0; b < n_blocks_; ++b) {
    const block_meta& m = meta_[b];
    const int states = int(m.in_free) + int(m.in_lru) + int(m.ref_count > 0);
    if (m.ref_count < 0) err << "block " << b << " has ref_count " << m.ref_count << "; ";
    if (states != 1) {
      err << "block " << b << " is in " << states << " states (free=" << m.in_free
          << " lru=" << m.in_lru << " ref=" << m.ref_count << "); ";
    }
    if (m.in_lru && !m.cached) err << "block " << b << " is on the LRU list but not cached; ";
    if (m.in_free && m.cached) err << "block " << b << " is free but cached; ";
    if (m.group < 0 || m.group >= n_groups()) err << "block " << b << " has group " << m.group << "; ";
    if (m.cached) {
      const auto it = cached_.find(cache_key(m.hash, m.group));
      if (it == cached_.end() || it->second != b) err << "cached block " << b << " missing from the map; ";
    }
    n_free_seen += m.in_free;
    n_lru_seen += m.in_lru;
    n_used_seen += m.ref_count > 0;
  }
  for (const auto& [key, b] : cached_) {
    if (b < 0 || b >= n_blocks_ || !meta_[b].cached || cache_key(meta_[b].hash, meta_[b].group) != key) {
      err << "map entry " << key << " -> " << b << " does not match the block; ";
    }
  }
  std::vector<int32_t> used_in(n_used_in_.size(), 0);
  for (int32_t b = 0; b < n_blocks_; ++b) {
    const int32_t g = meta_[b].group;
    if (meta_[b].ref_count > 0 && g >= 0 && g < n_groups()) ++used_in[static_cast<size_t>(g)];
  }
  if (used_in != n_used_in_) err << "blocks in use per group do not match their counts; ";
  if (n_free_seen != n_free()) err << "free list has " << n_free() << " entries, " << n_free_seen << " blocks flagged free; ";
  std::vector<char> on_free(static_cast<size_t>(n_blocks_), 0);
  for (int32_t b : free_list_) {
    if (b < 0 || b >= n_blocks_ || !meta_[b].in_free || on_free[b]) {
      err << "free list entry " << b << " is invalid or repeated; ";
      continue;
    }
    on_free[b] = 1;
  }
  int32_t walked = 0;
  int32_t prev = -1;
  for (int32_t b = lru_head_; b >= 0; b = meta_[b].lru_next) {
    if (!meta_[b].in_lru || meta_[b].lru_prev != prev || ++walked > n_blocks_) {
      err << "LRU list is broken at block " << b << "; ";
      break;
    }
    prev = b;
  }
  if (prev != lru_tail_ && walked <= n_blocks_) err << "LRU tail " << lru_tail_ << " is not the last block " << prev << "; ";
  if (walked != n_lru_ || n_lru_seen != n_lru_) {
    err << "LRU count " << n_lru_ << ", walked " << walked << ", flagged " << n_lru_seen << "; ";
  }
  if (n_free_seen + n_used_seen + n_lru_seen != n_blocks_) {
    err << "free " << n_free_seen << " + used " << n_used_seen << " + cached_idle " << n_lru_seen
        << " != " << n_blocks_ << "; ";
  }
  return err.str();
}

}  // namespace cortex
