// Which worker a router sends a request to (issue 14), without CAF.
//
// affinity: rendezvous (highest random weight) hashing of the request's
//   prefix key over the live workers, so requests sharing a prompt prefix
//   (a system prompt) land on the worker that has it in its prefix cache,
//   and removing or adding a worker moves only the keys that were (or will
//   be) on it. Bounded by load (SGLang's cache-aware routing with a balance
//   threshold): when the preferred worker's waiting queue exceeds the least
//   loaded's by more than `balance_threshold`, the least loaded wins. A
//   request without a key (a prompt shorter than one block) goes to the
//   least loaded.
// least_loaded: the smallest waiting queue plus requests in flight from
//   this router, then the fewest in flight, then the rendezvous score
//   (deterministic). The waiting queue comes from the worker's last stats
//   and lags a burst; the router's own in-flight count does not, so a stale
//   poll cannot send a whole burst to the worker that was idle at the poll.
// round_robin: the next worker in the order given, whatever the load.
//
// Thread: one thread at a time (the cluster intake's).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cortex::cluster {

enum class routing_mode : uint8_t { affinity, least_loaded, round_robin };

// "affinity" | "least-loaded" | "round-robin"; false for anything else.
bool parse_routing_mode(const std::string& s, routing_mode& out);
const char* routing_mode_name(routing_mode m);

// A live worker as the policy sees it.
struct node_load {
  uint64_t id_hash = 0;   // node_id_hash(its stable name, e.g. "host:port")
  uint32_t waiting = 0;   // its waiting queue (its last stats)
  uint32_t in_flight = 0; // requests this router has on it, not yet ended
};

// FNV-1a 64 of a worker's stable name: the same on every router and run.
uint64_t node_id_hash(const std::string& name);

// A request's routing key: a hash chained over its first full blocks
// (at most `max_blocks`), or nothing when it has no full block. Two
// requests get the same key exactly when those blocks are equal.
// REQUIRES: block_size >= 1, max_blocks >= 1.
std::optional<uint64_t> prefix_key_of_tokens(const std::vector<int32_t>& tokens, size_t block_size, size_t max_blocks);
std::optional<uint64_t> prefix_key_of_bytes(const std::string& text, size_t block_bytes, size_t max_blocks);

class routing_policy {
 public:
  explicit routing_policy(routing_mode mode, uint32_t balance_threshold = 4) : mode_(mode), threshold_(balance_threshold) {}

  // The index in `nodes` to send the request to; nothing when `nodes` is
  // empty. The result depends only on the arguments (and, for round_robin,
  // on how many picks came before).
  std::optional<size_t> pick(std::optional<uint64_t> key, const std::vector<node_load>& nodes);

  // What the last pick decided, for stats: whether it followed the key's
  // preferred worker (true) or the load bound overrode it (false).
  bool last_pick_followed_affinity() const { return last_followed_; }
  routing_mode mode() const { return mode_; }

  // The rendezvous score of a key on a node (exposed for tests).
  static uint64_t score(uint64_t key, uint64_t node_hash);

 private:
  size_t least_loaded(const std::vector<node_load>& nodes, uint64_t tiebreak_key) const;

  routing_mode mode_;
  uint32_t threshold_;
  uint64_t rr_next_ = 0;
  bool last_followed_ = false;
};

}  // namespace cortex::cluster
