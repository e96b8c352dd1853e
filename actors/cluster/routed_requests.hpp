// The router's book of the requests it sent to workers (issue 14), without
// CAF: which worker serves each request and under which key it reports
// back, whether its client has seen a token yet (then a lost worker ends it
// with worker_lost; before, it is resubmitted elsewhere, transparently),
// cancels that arrive while no worker rid is known, and requests in flight
// per worker (load for the routing policy).
//
// Keys: a worker reports a request's events under the client_id the router
// gave it, a route_key "r<rid>.<attempt>"; the attempt changes with each
// resubmission, so a late event of an earlier attempt is recognised and
// dropped. The router's rid (a routed_request_id: what the gateway's cancel
// names) stays the same across attempts and is what the gateway sees in
// every event.
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
#include "messages/route_key.hpp"

namespace cortex::cluster {

// The router's id of a request it routed: the same across attempts, and
// what the gateway sees as the request's rid in every event and names in a
// cancel. Not an engine request_id: each attempt has its own on its worker
// (routed_request::worker_rid), and the two must not be mixed up, so this
// converts to and from request_id only by name. It crosses actors only as
// the rid of the events and of cancel_atom in intake_actor's interface
// (the gateway cannot tell the router from a local intake): a CAF type of
// its own would change that interface, so it is converted at that boundary
// (gateway_rid / of_gateway_rid) and lives only inside the cluster code.
class routed_request_id {
 public:
  constexpr routed_request_id() = default;
  constexpr explicit routed_request_id(uint64_t value) : value_(value) {}

  // The rid the gateway knows the request by (events out, cancels in).
  static constexpr routed_request_id of_gateway_rid(request_id rid) { return routed_request_id(rid); }
  constexpr request_id gateway_rid() const { return value_; }
  constexpr uint64_t value() const { return value_; }

  friend constexpr bool operator==(routed_request_id a, routed_request_id b) { return a.value_ == b.value_; }
  friend constexpr bool operator!=(routed_request_id a, routed_request_id b) { return a.value_ != b.value_; }
  friend constexpr bool operator<(routed_request_id a, routed_request_id b) { return a.value_ < b.value_; }

 private:
  uint64_t value_ = 0;  // from 1
};

// What a route key of the router names: a request and its attempt.
struct routed_attempt {
  routed_request_id rid;
  uint32_t attempt = 0;
};

// The key of attempt `attempt` of `rid`: "r<rid>.<attempt>".
inline route_key routed_key(routed_request_id rid, uint32_t attempt) {
  return route_key("r" + std::to_string(rid.value()) + "." + std::to_string(attempt));
}

// The request and attempt `key` names; nullopt when it is not a key of
// routed_key's form (e.g. another relay's or a client's own id).
inline std::optional<routed_attempt> parse_routed_key(const route_key& key) {
  const std::string& s = key.str();
  if (s.size() < 4 || s[0] != 'r') return std::nullopt;
  char* end = nullptr;
  const uint64_t n_rid = std::strtoull(s.c_str() + 1, &end, 10);
  if (*end != '.') return std::nullopt;
  const unsigned long attempt = std::strtoul(end + 1, &end, 10);
  if (*end || attempt > UINT32_MAX) return std::nullopt;
  return routed_attempt{routed_request_id(n_rid), static_cast<uint32_t>(attempt)};
}

template <class Sink>
struct routed_request {
  routed_request_id rid;           // the router's id (what the gateway sees)
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
  routed_request_id rid;
  bool resubmit = false;  // no token reached the client: send it to another worker
};

template <class Sink>
class routed_requests {
 public:
  using entry = routed_request<Sink>;

  // A new request; REQUIRES: assign() before anything is sent for it.
  entry& open(generation_request req, Sink sink) {
    const routed_request_id rid(next_rid_++);
    entry& e = by_rid_[rid];
    e.rid = rid;
    e.client_id = req.client_id;
    e.tags = req.tags;
    e.request = std::move(req);
    e.sink = std::move(sink);
    return e;
  }

  // Starts a new attempt on `worker`; returns the key the worker reports it under.
  route_key assign(entry& e, const std::string& worker) {
    e.worker = worker;
    ++e.attempt;
    e.worker_rid = 0;
    ++in_flight_[worker];
    return key_of(e);
  }

  static route_key key_of(const entry& e) { return routed_key(e.rid, e.attempt); }

  // The request of the current attempt `key` names; null for an unknown,
  // ended or superseded one (its event is dropped).
  entry* find_key(const route_key& key) {
    const auto a = parse_routed_key(key);
    if (!a) return nullptr;
    auto it = by_rid_.find(a->rid);
    if (it == by_rid_.end() || it->second.attempt != a->attempt || it->second.worker.empty()) return nullptr;
    return &it->second;
  }
  entry* find(routed_request_id rid) {
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
  std::optional<std::pair<std::string, request_id>> cancel(routed_request_id rid, finish_reason why) {
    entry* e = find(rid);
    if (!e) return std::nullopt;
    if (e->worker_rid == 0 || e->worker.empty()) {
      e->cancel_pending = why;
      return std::nullopt;
    }
    return std::make_pair(e->worker, e->worker_rid);
  }

  // The request ended (its terminal went to the sink).
  void close(routed_request_id rid) {
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
  std::map<routed_request_id, entry> by_rid_;
  std::unordered_map<std::string, uint32_t> in_flight_;
};

}  // namespace cortex::cluster
