// The logic every gateway shares, without CAF or sockets: which request of
// which connection a session event belongs to, ids scoped per connection,
// cancels that arrive before the engine's `accepted`, chunk merging for a
// reader that cannot keep up (with a bounded backlog), cancelling every
// request of a connection that is gone, and the latency reservoirs behind
// `stats` and `/metrics`.
//
// A gateway shell (ZeroMQ, HTTP) owns one core and implements its port:
// the core decides *whether and when* an event goes out, the shell decides
// *how* (msgpack frame, SSE event, JSON body). Tests drive a core with a
// fake port and a fake clock.
//
// Thread: one thread at a time (the gateway actor's).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "actors/gateway_core/latency_stats.hpp"
#include "messages/request.hpp"
#include "messages/route_key.hpp"

namespace cortex {

using gateway_clock = std::chrono::steady_clock;

struct gateway_core_limits {
  // Merged chunk bytes (text + 4 per token id) held for a blocked reader;
  // beyond it the request ends with client_gone.
  size_t max_pending_bytes = 1 << 20;
};

// One request of one connection, from submit to its terminal event.
// `Extra` is what the shell keeps per request (wire: output fields; HTTP:
// the response it belongs to).
template <class Extra>
struct gateway_route {
  route_key key;          // the engine's client_id for this request (unique in the core)
  std::string conn;       // the connection (ZeroMQ routing id, HTTP connection id)
  std::string client_id;  // the client's id, unique among the connection's live requests
  request_id rid = 0;     // engine id; 0 until accepted
  uint64_t seq = 0;       // next per-request event number, for the shell's use
  bool cancel_pending = false;  // cancelled before `accepted` (no rid to cancel yet)
  finish_reason cancel_reason = finish_reason::cancelled;
  bool conn_gone = false;       // nothing more goes out
  bool overflowed = false;      // its reader fell behind the backlog bound; cancelled
  std::optional<request_chunk> merged;  // held while the connection is blocked
  std::optional<gateway_clock::time_point> last_token;  // when its last token was delivered
  Extra extra{};
};

// What a shell does for its core. Calls happen inside core methods.
template <class Extra>
class gateway_port {
 public:
  virtual ~gateway_port() = default;
  // Ask the engine to end request `rid`.
  virtual void cancel(request_id rid, finish_reason why) = 0;
  // Deliver an event to the route's connection (never called once it is gone).
  // The event's client_id is already the client's own id.
  virtual void send_accepted(gateway_route<Extra>& r, const request_accepted& a) = 0;
  virtual void send_chunk(gateway_route<Extra>& r, const request_chunk& c) = 0;
  virtual void send_finished(gateway_route<Extra>& r, const request_finished& f) = 0;
  virtual void send_rejected(gateway_route<Extra>& r, const status& e) = 0;
  // Every terminal event of a known route, called before send_finished /
  // send_rejected and also when its connection is gone (then nothing is
  // sent): for accounting that must count every request (metrics).
  virtual void ended(gateway_route<Extra>& /*r*/, const request_finished& /*f*/) {}
  virtual void ended_rejected(gateway_route<Extra>& /*r*/, const status& /*e*/) {}
};

// Appends `next` to `into` (text, token ids, logprobs): a slow reader gets
// fewer, larger chunks, never lost tokens.
void merge_chunk(request_chunk& into, request_chunk&& next);
// The backlog measure of a held chunk: text bytes + 4 per token id.
size_t pending_bytes(const request_chunk& c);

template <class Extra>
class gateway_core {
 public:
  using route = gateway_route<Extra>;
  using port = gateway_port<Extra>;

  gateway_core(port& p, gateway_core_limits limits, std::function<gateway_clock::time_point()> now = gateway_clock::now)
      : port_(p), limits_(limits), now_(std::move(now)) {}

  // Opens a route for a new request. Returns its key (set its str() as the
  // request's client_id before submitting), or nullopt when `client_id` is
  // still active on `conn` (the caller answers 409; the live request is untouched).
  std::optional<route_key> open(const std::string& conn, const std::string& client_id, Extra extra = {}) {
    const auto slot = std::make_pair(conn, client_id);
    if (active_.count(slot)) return std::nullopt;
    route r;
    r.key = route_key("g" + std::to_string(next_key_++));
    r.conn = conn;
    r.client_id = client_id;
    r.extra = std::move(extra);
    auto key = r.key;
    active_.emplace(slot, key);
    routes_.emplace(key, std::move(r));
    return key;
  }

  // The live request `client_id` of `conn`, or nullptr.
  route* find(const std::string& conn, const std::string& client_id) {
    auto it = active_.find({conn, client_id});
    return it == active_.end() ? nullptr : &routes_.at(it->second);
  }
  route* find_key(const route_key& key) {
    auto it = routes_.find(key);
    return it == routes_.end() ? nullptr : &it->second;
  }

  // Client cancel; unknown ids are ignored (cancel is idempotent).
  void cancel(const std::string& conn, const std::string& client_id, finish_reason why = finish_reason::cancelled) {
    if (auto* r = find(conn, client_id)) cancel_route(*r, why);
  }

  // The connection is gone: every request of it is cancelled (client_gone)
  // and nothing more is sent to it. Returns how many were live.
  size_t conn_gone(const std::string& conn) {
    size_t n = 0;
    for (auto& [key, r] : routes_) {
      if (r.conn != conn || r.conn_gone) continue;
      r.conn_gone = true;
      r.merged.reset();
      cancel_route(r, finish_reason::client_gone);
      ++n;
    }
    blocked_.erase(conn);
    return n;
  }

  // The connection cannot take more (its send queue is full) or can again.
  // Unblocking sends every request's merged chunk first.
  void set_blocked(const std::string& conn, bool blocked) {
    if (blocked) {
      blocked_.insert(conn);
      return;
    }
    blocked_.erase(conn);
    for (auto& [key, r] : routes_) {
      if (r.conn == conn) flush(r);
    }
  }
  bool is_blocked(const std::string& conn) const { return blocked_.count(conn) > 0; }

  // Session events, keyed by the route key in their client_id. Events of
  // unknown keys (a route already ended) are dropped.
  void on_accepted(request_accepted& a) {
    auto* r = find_key(route_key::of_client_id(a.client_id));
    if (!r) return;
    r->rid = a.rid;
    a.client_id = r->client_id;
    if (!r->conn_gone) port_.send_accepted(*r, a);
    if (r->cancel_pending) cancel_route(*r, r->cancel_reason);
  }

  void on_chunk(request_chunk& c) {
    auto* r = find_key(route_key::of_client_id(c.client_id));
    if (!r) return;
    const auto t = now_();
    if (!c.token_ids.empty() || !c.text.empty()) {
      if (r->last_token) itl_.add(std::chrono::duration<double, std::milli>(t - *r->last_token).count());
      r->last_token = t;
    }
    if (r->conn_gone) return;
    c.client_id = r->client_id;
    if (!blocked_.count(r->conn)) {
      flush(*r);
      port_.send_chunk(*r, c);
      return;
    }
    // A slow reader: merge, never block generation; past the bound the request ends.
    if (!r->merged) {
      r->merged = std::move(c);
    } else {
      merge_chunk(*r->merged, std::move(c));
    }
    if (pending_bytes(*r->merged) > limits_.max_pending_bytes && !r->overflowed) {
      r->overflowed = true;
      overflowed_++;
      cancel_route(*r, finish_reason::client_gone);
    }
  }

  void on_finished(request_finished& f) {
    auto* r = find_key(route_key::of_client_id(f.client_id));
    if (!r) return;
    if (f.timings.ttft_ms > 0) ttft_.add(f.timings.ttft_ms);
    f.client_id = r->client_id;
    port_.ended(*r, f);
    if (!r->conn_gone) {
      flush(*r);
      port_.send_finished(*r, f);
    }
    erase(r->key);
  }

  void on_rejected(request_rejected& rj) {
    auto* r = find_key(route_key::of_client_id(rj.client_id));
    if (!r) return;
    rj.client_id = r->client_id;
    port_.ended_rejected(*r, rj.error);
    if (!r->conn_gone) port_.send_rejected(*r, rj.error);
    erase(r->key);
  }

  // Closes a route whose request was never submitted (the shell held it
  // back and gave up): no event, no accounting.
  void forget(const route_key& key) { erase(key); }

  // Requests opened and not yet terminated.
  size_t n_active() const { return routes_.size(); }
  // Requests ended because their reader fell too far behind.
  uint64_t n_overflowed() const { return overflowed_; }
  const latency_stats& ttft_ms() const { return ttft_; }
  const latency_stats& itl_ms() const { return itl_; }

 private:
  void cancel_route(route& r, finish_reason why) {
    if (r.rid == 0) {
      r.cancel_pending = true;
      r.cancel_reason = why;
      return;
    }
    port_.cancel(r.rid, why);
  }
  void flush(route& r) {
    if (!r.merged || r.conn_gone) return;
    auto c = std::move(*r.merged);
    r.merged.reset();
    port_.send_chunk(r, c);
  }
  void erase(const route_key& key) {
    auto it = routes_.find(key);
    if (it == routes_.end()) return;
    active_.erase({it->second.conn, it->second.client_id});
    routes_.erase(it);
  }

  port& port_;
  gateway_core_limits limits_;
  std::function<gateway_clock::time_point()> now_;
  std::unordered_map<route_key, route> routes_;                         // by key
  std::map<std::pair<std::string, std::string>, route_key> active_;     // (conn, client id) -> key
  std::unordered_set<std::string> blocked_;
  uint64_t next_key_ = 1;
  uint64_t overflowed_ = 0;
  latency_stats ttft_, itl_;
};

}  // namespace cortex
