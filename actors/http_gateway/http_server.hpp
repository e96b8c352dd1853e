// The HTTP/1.1 side of the HTTP gateway, CAF-free: Boost.Beast over one
// Asio I/O thread of its own. It accepts connections (at most
// max_connections; beyond, a 503 and close), reads one request at a time
// per connection (keep-alive; a head must arrive within header_timeout_ms,
// a body over max_body_bytes is 413), hands each complete request to a
// callback, and writes what the caller posts back: a whole response, or a
// chunked stream (SSE). While a request is in progress the connection is
// watched, so a client that closes it is reported at once.
//
// Callbacks run on the I/O thread; respond/stream_* are thread-safe and
// are written in the order posted. A connection whose queued output passes
// max_queued_bytes is reported blocked (the gateway then merges its
// chunks) until its queue drains below half.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "messages/errors.hpp"
#include "messages/gateway.hpp"
#include "base/expected.hpp"

namespace cortex {

struct http_server_options {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;                  // 0: any free port (tests)
  size_t max_connections = 256;          // open connections; beyond, 503
  size_t max_body_bytes = 8 << 20;       // beyond, 413
  int header_timeout_ms = 10000;         // a request head must be complete within this
  int body_timeout_ms = 60000;           // and its body within this after the head
  size_t max_queued_bytes = 1 << 20;     // per connection, before it is reported blocked
};

using http_header_list = std::vector<std::pair<std::string, std::string>>;


struct http_response_out {
  int status = 200;
  std::string content_type = "application/json";
  http_header_list headers;    // extra headers (Retry-After...)
  std::string body;
};

class http_server {
 public:
  struct callbacks {
    std::function<void(http_inbound&&)> on_request;
    // The connection closed (by the client, an error, or the server). Called
    // once per connection that delivered a request, whatever state it was in.
    std::function<void(uint64_t conn)> on_closed;
    std::function<void(uint64_t conn, bool blocked)> on_blocked;
    // Optional. Called with each complete head before its body is read, so
    // that a request to be refused (no credentials) costs no body: an error
    // is answered at once (status from its code; 401 adds
    // `WWW-Authenticate: Bearer`) and the connection closed; otherwise
    // `key_id` (set by the callback) travels in the http_inbound.
    std::function<std::optional<status>(const http_head&, std::string& key_id)> on_head;
  };

  // Resolves and binds `host:port` (in the calling thread). Errors name the
  // address and the reason.
  static expected<std::unique_ptr<http_server>> bind(const http_server_options& opts);
  ~http_server();

  // "host:port" actually bound (the real port when 0 was asked for).
  std::string address() const;
  uint16_t port() const { return port_; }

  // Starts the I/O thread. REQUIRES: called once.
  void start(callbacks cb);

  // Thread-safe. The response to the connection's current request; the
  // connection then reads its next request (keep-alive) or closes.
  void respond(uint64_t conn, http_response_out r);
  // Thread-safe. A chunked response: begin (status and headers), any number
  // of writes, then end (which completes the request like respond).
  void stream_begin(uint64_t conn, int status, std::string content_type, http_header_list headers = {});
  void stream_write(uint64_t conn, std::string data);
  void stream_end(uint64_t conn);

  // Closes the listener and every connection, then joins the thread. Idempotent.
  void stop();

  size_t n_connections() const { return n_open_.load(); }
  uint64_t n_requests() const { return n_requests_.load(); }

  struct impl;

 private:
  friend struct impl;
  http_server() = default;
  std::unique_ptr<impl> impl_;
  uint16_t port_ = 0;
  std::string host_;
  std::thread io_;
  std::atomic<size_t> n_open_{0};
  std::atomic<uint64_t> n_requests_{0};
  bool stopped_ = false;
};

}  // namespace cortex
