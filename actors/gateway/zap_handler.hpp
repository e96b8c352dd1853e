// The ZAP handler (ZeroMQ RFC 27) of a CURVE server, CAF-free: a REP socket
// on inproc://zeromq.zap.01 in the server's ZeroMQ context, served by a
// thread of its own. libzmq asks it about every CURVE handshake; it admits a
// client only when `authenticate` names a key id for the client's public key,
// and replies 200 with that id as the ZAP user id (libzmq then stamps every
// message of the connection with it as the "User-Id" property). Anything
// else is 400: the handshake fails and the client never gets a reply.
//
// Ordering contract (RFC 27): the handler must be bound before any CURVE
// socket of the context binds, and must outlive those sockets; zmq_server
// does both. Only one handler may exist per context (the inproc address is
// fixed by the RFC).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "base/expected.hpp"

namespace cortex {

class zap_handler {
 public:
  // Returns the key id to bind the connection to, or nullopt to refuse.
  // Called on the handler's thread; must be thread-safe and must not block
  // for long (handshakes wait on it). An exception counts as a refusal.
  using authenticate_fn =
      std::function<std::optional<std::string>(const std::string& client_public_z85, const std::string& peer_address)>;

  // Binds the REP socket in `zmq_context` and starts the thread. Errors say
  // why (another handler already bound in this context, no eventfd).
  static expected<std::unique_ptr<zap_handler>> start(void* zmq_context, authenticate_fn authenticate);
  // Stops the thread and closes the socket (REQUIRES: before the context is
  // terminated, as zmq_ctx_term waits for every socket).
  ~zap_handler();

  // Idempotent. Handshakes still in flight after this are not answered
  // (libzmq then fails them once the socket is closed).
  void stop();

  // Thread-safe counters of answered requests.
  uint64_t n_allowed() const { return n_allowed_.load(); }
  uint64_t n_denied() const { return n_denied_.load(); }

 private:
  zap_handler() = default;
  void run();
  void answer_one();

  void* sock_ = nullptr;
  int wake_fd_ = -1;
  authenticate_fn authenticate_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  bool stopped_ = false;
  std::atomic<uint64_t> n_allowed_{0}, n_denied_{0};
};

}  // namespace cortex
