// The router's book of the requests it sent to workers (issue 14), without
// CAF: which worker serves each request and under which key it reports
// back, whether its client has seen a token yet (then a lost worker ends it
// with worker_lost; before, it is resubmitted elsewhere, transparently),
// cancels that arrive while no worker rid is known, and requests in flight
// per worker (load for the routing policy).
//
// Keys: a worker reports a request's events under the client_id the router
// gave it, "r<rid>.<attempt>"; the attempt changes with each resubmission,
// so a late event of an earlier attempt is recognised and dropped. The
// router's rid (what the gateway's cancel names) stays the same across
// attempts and is what the gateway sees in every event.
//
// `Sink` is the gateway's handle (a CAF actor in the router; an int in tests).
// Thread: one thread at a time (the cluster intake's).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "messages/request.hpp"

namespace cortex::cluster {

template <class Sink>
struct routed_request {
  uint64_t rid = 0;                // the router's id (what the gateway sees)
  std::string client_id;           // the gateway's client_id, restored on every event
  std::map<std::string, std::string> tags;  // echoed by a terminal the router makes itself
  generation_request request;      // kept for a resubmission until the first chunk
  Sink sink{};
  std::string worker;              // the worker serving the current attempt ("" between attempts)
  uint32_t attempt = 0;
  request_id worker_rid = 0;       // the worker's rid for the current attempt; 0 until its accepted
  bool accepted_sent = false;      // the sink got `accepted` (only the first attempt's goes out)
  bool produced = false;           // the sink got a chunk: a lost worker now means worker_lost
  std::optional<finish_reason> cancel_pending;  // cancelled while no worker rid was known
};

// What a lost worker means for one of its requests.
struct lost_request {
  uint64_t rid = 0;
  bool resubmit = false;  // no token reached the client: send it to another worker
};

template <class Sink>
class routed_requests {
 public:
  using entry = routed_request<Sink>;

  // A new request; REQUIRES: assign() before anything is sent for it.
  entry& open(generation_request req, Sink sink) {
    const uint64_t rid = next_rid_++;
    entry& e = by_rid_[rid];
    e.rid = rid;
    e.client_id = req.client_id;
    e.tags = req.tags;
    e.request = std::move(req);
    e.sink = std::move(sink);
    return e;
  }

  // Starts a new attempt on `worker`; returns the key the worker reports it under.
  std::string assign(entry& e, const std::string& worker) {
    e.worker = worker;
    ++e.attempt;
    e.worker_rid = 0;
    ++in_flight_[worker];
    return key_of(e);
  }

  static std::string key_of(const entry& e) { return "r" + std::to_string(e.rid) + "." + std::to_string(e.attempt); }

  // The request of the current attempt `key` names; null for an unknown,
  // ended or superseded one (its event is dropped).
  entry* find_key(const std::string& key) {
    if (key.size() < 4 || key[0] != 'r') return nullptr;
    char* end = nullptr;
    const uint64_t rid = std::strtoull(key.c_str() + 1, &end, 10);
    if (*end != '.') return nullptr;
    const unsigned long attempt = std::strtoul(end + 1, &end, 10);
    auto it = by_rid_.find(rid);
    if (*end || it == by_rid_.end() || it->second.attempt != attempt || it->second.worker.empty()) return nullptr;
    return &it->second;
  }
  entry* find(uint64_t rid) {
    auto it = by_rid_.find(rid);
    return it == by_rid_.end() ? nullptr : &it->second;
  }

  // The worker accepted the current attempt as `worker_rid`. Returns the
  // cancel to forward at once, if one came while no rid was known.
  std::optional<finish_reason> accepted(entry& e, request_id worker_rid) {
    e.worker_rid = worker_rid;
    auto c = e.cancel_pending;
    e.cancel_pending.reset();
    return c;
  }

  // A chunk goes out to the client: from now on the request cannot move.
  void produced(entry& e) {
    e.produced = true;
    e.request = generation_request{};  // no resubmission any more: drop the prompt
  }

  // The gateway cancels `rid`: the (worker, worker rid) to tell, or nothing
  // when no rid is known yet (kept, and returned by accepted()).
  std::optional<std::pair<std::string, request_id>> cancel(uint64_t rid, finish_reason why) {
    entry* e = find(rid);
    if (!e) return std::nullopt;
    if (e->worker_rid == 0 || e->worker.empty()) {
      e->cancel_pending = why;
      return std::nullopt;
    }
    return std::make_pair(e->worker, e->worker_rid);
  }

  // The request ended (its terminal went to the sink).
  void close(uint64_t rid) {
    auto it = by_rid_.find(rid);
    if (it == by_rid_.end()) return;
    release(it->second);
    by_rid_.erase(it);
  }

  // `worker` is gone: each of its requests is detached from it and either
  // to be resubmitted or to be ended (lost_request::resubmit false; the
  // caller sends the terminal and close()s it).
  std::vector<lost_request> worker_lost(const std::string& worker) {
    std::vector<lost_request> out;
    for (auto& [rid, e] : by_rid_) {
      if (e.worker != worker) continue;
      release(e);
      e.worker.clear();
      e.worker_rid = 0;
      out.push_back({rid, !e.produced});
    }
    in_flight_.erase(worker);
    return out;
  }

  // The current attempt's worker refused it (draining): detached, to be
  // routed again. REQUIRES: the client saw no chunk of it.
  void detach(entry& e) {
    release(e);
    e.worker.clear();
    e.worker_rid = 0;
  }

  uint32_t in_flight(const std::string& worker) const {
    auto it = in_flight_.find(worker);
    return it == in_flight_.end() ? 0 : it->second;
  }
  size_t size() const { return by_rid_.size(); }
  template <class F>
  void for_each(F&& f) {
    for (auto& [rid, e] : by_rid_) f(e);
  }

 private:
  void release(entry& e) {
    if (e.worker.empty()) return;
    auto it = in_flight_.find(e.worker);
    if (it != in_flight_.end() && it->second > 0 && --it->second == 0) in_flight_.erase(it);
  }

  uint64_t next_rid_ = 1;
  std::map<uint64_t, entry> by_rid_;
  std::unordered_map<std::string, uint32_t> in_flight_;
};

}  // namespace cortex::cluster
