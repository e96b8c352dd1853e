#include "actors/cluster/routing_policy.hpp"

#include <algorithm>

namespace cortex::cluster {

namespace {

constexpr uint64_t fnv_offset = 1469598103934665603ull;
constexpr uint64_t fnv_prime = 1099511628211ull;

// splitmix64's finalizer: a bijective mix, so distinct inputs give distinct, well-spread outputs.
uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t fnv_bytes(uint64_t h, const unsigned char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * fnv_prime;
  return h;
}

}  // namespace

bool parse_routing_mode(const std::string& s, routing_mode& out) {
  if (s == "affinity") out = routing_mode::affinity;
  else if (s == "least-loaded") out = routing_mode::least_loaded;
  else if (s == "round-robin") out = routing_mode::round_robin;
  else return false;
  return true;
}

const char* routing_mode_name(routing_mode m) {
  switch (m) {
    case routing_mode::affinity: return "affinity";
    case routing_mode::least_loaded: return "least-loaded";
    case routing_mode::round_robin: return "round-robin";
  }
  return "affinity";
}

uint64_t node_id_hash(const std::string& name) {
  return fnv_bytes(fnv_offset, reinterpret_cast<const unsigned char*>(name.data()), name.size());
}

std::optional<uint64_t> prefix_key_of_tokens(const std::vector<int32_t>& tokens, size_t block_size, size_t max_blocks) {
  const size_t n_blocks = std::min(tokens.size() / block_size, max_blocks);
  if (n_blocks == 0) return std::nullopt;
  uint64_t h = fnv_offset;
  for (size_t i = 0; i < n_blocks * block_size; ++i) {
    const auto t = static_cast<uint32_t>(tokens[i]);
    const unsigned char b[4] = {static_cast<unsigned char>(t), static_cast<unsigned char>(t >> 8),
                                static_cast<unsigned char>(t >> 16), static_cast<unsigned char>(t >> 24)};
    h = fnv_bytes(h, b, 4);
  }
  return mix64(h);
}

std::optional<uint64_t> prefix_key_of_bytes(const std::string& text, size_t block_bytes, size_t max_blocks) {
  const size_t n_blocks = std::min(text.size() / block_bytes, max_blocks);
  if (n_blocks == 0) return std::nullopt;
  // A different seed from the token chain: a text key never equals a token key by construction.
  return mix64(fnv_bytes(~fnv_offset, reinterpret_cast<const unsigned char*>(text.data()), n_blocks * block_bytes));
}

uint64_t routing_policy::score(uint64_t key, uint64_t node_hash) { return mix64(key ^ mix64(node_hash)); }

size_t routing_policy::least_loaded(const std::vector<node_load>& nodes, uint64_t tiebreak_key) const {
  size_t best = 0;
  for (size_t i = 1; i < nodes.size(); ++i) {
    const auto& a = nodes[i];
    const auto& b = nodes[best];
    const uint64_t load_a = uint64_t{a.waiting} + a.in_flight, load_b = uint64_t{b.waiting} + b.in_flight;
    if (load_a != load_b) {
      if (load_a < load_b) best = i;
    } else if (a.in_flight != b.in_flight) {
      if (a.in_flight < b.in_flight) best = i;
    } else if (score(tiebreak_key, a.id_hash) > score(tiebreak_key, b.id_hash)) {
      best = i;
    }
  }
  return best;
}

std::optional<size_t> routing_policy::pick(std::optional<uint64_t> key, const std::vector<node_load>& nodes) {
  last_followed_ = false;
  if (nodes.empty()) return std::nullopt;
  switch (mode_) {
    case routing_mode::round_robin: return static_cast<size_t>(rr_next_++ % nodes.size());
    case routing_mode::least_loaded: return least_loaded(nodes, key.value_or(0));
    case routing_mode::affinity: break;
  }
  const size_t least = least_loaded(nodes, key.value_or(0));
  if (!key) return least;
  size_t preferred = 0;
  for (size_t i = 1; i < nodes.size(); ++i) {
    if (score(*key, nodes[i].id_hash) > score(*key, nodes[preferred].id_hash)) preferred = i;
  }
  if (nodes[preferred].waiting > nodes[least].waiting + threshold_) return least;
  last_followed_ = true;
  return preferred;
}

}  // namespace cortex::cluster
