// The cortex CLI's side of protocol v1 (../shared/docs/protocol.md): one
// ZeroMQ DEALER connection to cortexd, one msgpack map per frame, JSON
// values (nlohmann::ordered_json: maps keep the order they were written in,
// both ways). Also the CLI's Ctrl-C handling, which the wire commands share.
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "apps/common/curve_keys.hpp"

namespace cortex::cli {

using wire_json = nlohmann::ordered_json;

// Installs a SIGINT handler that only records the signal (no SA_RESTART, so
// a blocking read or poll returns EINTR and the caller can look).
void catch_sigint();
// Whether SIGINT arrived since the last call; clears the record.
bool take_sigint();

// One DEALER connection. Every call has a timeout; nothing blocks forever.
// Thread: one thread at a time (a ZeroMQ socket is not thread-safe).
class wire_connection {
 public:
  // `routing_id`: the ZeroMQ routing id ("" = chosen by ZeroMQ); protocol v1
  // scopes request ids to it. With `curve` keys the connection is a CURVE
  // client (encrypted; the server must admit the key).
  explicit wire_connection(const std::string& endpoint, const curve_client_keys& curve = {},
                           const std::string& routing_id = "");
  ~wire_connection();
  wire_connection(const wire_connection&) = delete;
  wire_connection& operator=(const wire_connection&) = delete;

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  const std::string& endpoint() const { return endpoint_; }

  bool send(const wire_json& msg);
  // The next message within timeout_ms: false on timeout, or at once when
  // the server refused the CURVE handshake (refused() says so). Frames that
  // are not msgpack are skipped. While waiting, a SIGINT (take_sigint) calls the
  // on_interrupt callback, if one is set.
  bool recv(wire_json& out, int timeout_ms);
  void on_interrupt(std::function<void()> f) { on_interrupt_ = std::move(f); }
  // Why the server refused the CURVE handshake ("" while it has not).
  const std::string& refused() const { return refused_; }
  bool curve() const { return curve_; }

 private:
  void* ctx_ = nullptr;
  void* sock_ = nullptr;
  void* monitor_ = nullptr;  // CURVE only: handshake failures
  bool ok_ = false, curve_ = false;
  std::string endpoint_, error_, refused_;
  std::function<void()> on_interrupt_;
};

}  // namespace cortex::cli
