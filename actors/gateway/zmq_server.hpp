// The ZeroMQ side of the gateway, CAF-free: one ROUTER socket owned by an
// I/O thread of its own (ZeroMQ sockets are not thread-safe, and CAF
// workers must never block on the network).
//
// Inbound frames and peer events are handed to callbacks on the I/O thread;
// outbound frames are queued by any thread with post() and sent in order per
// peer. A send never blocks: a peer at its high-water mark keeps a queue here
// and is reported blocked (so the gateway merges its chunks) until it drains.
// Peers are noticed gone when a send fails (EHOSTUNREACH, with
// ROUTER_MANDATORY) or their connection closes (socket monitor +
// heartbeats; the connection is tied to the peer by the source fd of its
// messages). Once a peer is taken for gone, frames already posted for it are
// dropped, not sent, until it sends a message again: a client whose send
// failed never sees a later chunk of the same request (a gap in `seq`).
//
// With a CURVE secret key the ROUTER is a CURVE server (ZeroMQ RFC 26:
// encrypted, and every client proves its key): a zap_handler in the same
// context admits only the client keys `curve_authenticate` maps to a key id,
// and each frame carries that id (inbound_frame::user_id).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "actors/gateway/zap_handler.hpp"
#include "base/expected.hpp"

namespace cortex {

struct zmq_server_options {
  std::string endpoint = "tcp://127.0.0.1:5555";
  int64_t max_message_bytes = 8 << 20;  // ZMQ_MAXMSGSIZE: larger frames drop the connection
  int sndhwm = 1000;                    // per-peer outbound messages inside ZeroMQ
  int heartbeat_ivl_ms = 1000;          // ZMTP heartbeats: a silent peer is disconnected
  int heartbeat_timeout_ms = 5000;
  int linger_ms = 1000;                 // flush time at stop()
  int sndbuf_bytes = 0;                 // kernel send buffer per connection (ZMQ_SNDBUF); 0 = OS default
  size_t max_peer_backlog = 4096;       // frames queued here for a blocked peer before it is dropped
  // Injected fault (actors/runtime/fault_plan.hpp): the send with this
  // 1-based number fails with fault_send_errno (EAGAIN or EHOSTUNREACH)
  // before reaching ZeroMQ. 0: off.
  uint64_t fault_send_fail_at = 0;
  int fault_send_errno = 0;
  // The server's CURVE secret key: 40 Z85 characters (`cortex keys curve`
  // writes one). Empty: plaintext, no client authentication.
  std::string curve_secret_key;
  // With curve_secret_key, REQUIRED: the key id a client's public key (Z85)
  // binds its connection to, or nullopt to refuse the handshake. Called on
  // the ZAP thread (thread-safe, quick); an exception refuses.
  std::function<std::optional<std::string>(const std::string& client_public_z85, const std::string& peer_address)>
      curve_authenticate;
};

struct inbound_frame {
  std::string peer;       // ZeroMQ routing id
  std::string payload;    // the msgpack map (unchecked)
  bool delimiter = false; // a REQ-style empty frame preceded the payload (mirror it back)
  bool extra_frames = false;  // more frames than [id, (""), payload]
  std::string user_id;    // CURVE: the key id the ZAP handler bound the connection to; empty without CURVE
  std::string peer_address;  // the client's address (TCP: its IP), for logs; may be empty
};

class zmq_server {
 public:
  struct callbacks {
    std::function<void(inbound_frame&&)> on_message;
    std::function<void(const std::string& peer)> on_peer_gone;
    std::function<void(const std::string& peer, bool blocked)> on_peer_blocked;
  };

  // Creates the socket and binds it (in the calling thread). Errors name the
  // endpoint and the reason (address in use, bad endpoint, a CURVE secret
  // key that is not 40 Z85 characters, CURVE without curve_authenticate).
  static expected<std::unique_ptr<zmq_server>> bind(const zmq_server_options& opts);
  ~zmq_server();

  // The bound endpoint (with the real port when the endpoint asked for *).
  const std::string& endpoint() const { return endpoint_; }

  // Starts the I/O thread. REQUIRES: called once.
  void start(callbacks cb);

  // Thread-safe. Queues one frame for `peer`.
  void post(const std::string& peer, std::string payload, bool delimiter);

  // Sends what is queued (bounded by linger_ms), then closes; stops the
  // ZAP thread (new CURVE handshakes are then left unanswered). Idempotent.
  void stop();

  uint64_t n_frames_in() const { return n_in_.load(); }
  uint64_t n_frames_out() const { return n_out_.load(); }
  // Clients known to the server (they sent a message and are not gone).
  size_t n_peers() const { return n_peers_.load(); }
  // CURVE handshakes refused by the ZAP handler (0 without CURVE). Thread-safe.
  uint64_t n_auth_denied() const { return zap_ ? zap_->n_denied() : 0; }
  // The server's CURVE public key (Z85, what clients need), empty without CURVE.
  const std::string& curve_public_key() const { return curve_public_; }

 private:
  zmq_server() = default;
  status enable_curve();
  void run();
  void drain_posts();
  void flush_peer(const std::string& peer);
  bool send_now(const std::string& peer, const std::string& payload, bool delimiter, int& err);
  void peer_gone(const std::string& peer);
  void handle_monitor();
  void receive_all();

  struct outgoing {
    std::string payload;
    bool delimiter;
  };
  struct peer_state {
    std::deque<outgoing> queue;  // frames that met the high-water mark
    bool blocked = false;
    int fd = -1;
    std::string address;  // Peer-Address ("" for ipc peers)
  };

  zmq_server_options opts_;
  std::string endpoint_;
  std::string curve_public_;
  void* ctx_ = nullptr;
  std::unique_ptr<zap_handler> zap_;  // with CURVE; closed after router_, before the context
  void* router_ = nullptr;
  void* monitor_ = nullptr;
  uint64_t n_send_attempts_ = 0;  // counted only while a send fault is armed
  int wake_fd_ = -1;
  std::thread io_;
  std::atomic<bool> stopping_{false};
  bool stopped_ = false;
  callbacks cb_;

  std::mutex mu_;                      // guards posted_
  std::vector<std::pair<std::string, outgoing>> posted_;
  // I/O thread only.
  std::unordered_map<std::string, peer_state> peers_;
  // Peers taken for gone and when: their posts are dropped until they talk
  // again. Marks older than gone_mark_ttl are forgotten (posts still in
  // flight for a gone peer arrive within milliseconds), so the map stays
  // bounded when clients come and go.
  std::unordered_map<std::string, std::chrono::steady_clock::time_point> gone_;
  static constexpr std::chrono::seconds gone_mark_ttl{30};
  std::unordered_map<int, std::vector<std::string>> peers_by_fd_;
  std::atomic<uint64_t> n_in_{0}, n_out_{0};
  std::atomic<size_t> n_peers_{0};
};

}  // namespace cortex
