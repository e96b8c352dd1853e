#include "apps/cortex/wire_connection.hpp"

#include <signal.h>
#include <zmq.h>

#include <atomic>
#include <chrono>
#include <cstring>

namespace cortex::cli {

namespace {

std::atomic<bool> g_sigint{false};
void on_sigint(int) { g_sigint = true; }

}  // namespace

void catch_sigint() {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: blocking calls return EINTR
  sigaction(SIGINT, &sa, nullptr);
}

bool take_sigint() { return g_sigint.exchange(false); }

wire_connection::wire_connection(const std::string& endpoint, const curve_client_keys& curve, const std::string& routing_id)
    : endpoint_(endpoint) {
  ctx_ = zmq_ctx_new();
  sock_ = zmq_socket(ctx_, ZMQ_DEALER);
  int linger = 200;
  zmq_setsockopt(sock_, ZMQ_LINGER, &linger, sizeof linger);
  if (!routing_id.empty()) zmq_setsockopt(sock_, ZMQ_ROUTING_ID, routing_id.data(), routing_id.size());
  if (curve.enabled()) {
    curve_ = true;
    if (!apply_curve_client(sock_, curve, error_)) return;
    // A refused handshake is only visible as a monitor event; without it the
    // client would wait out its timeout and blame the network.
    const char* mon = "inproc://cortex-cli-monitor";
    if (zmq_socket_monitor(sock_, mon, ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) == 0) {
      monitor_ = zmq_socket(ctx_, ZMQ_PAIR);
      zmq_connect(monitor_, mon);
    }
  }
  ok_ = zmq_connect(sock_, endpoint.c_str()) == 0;
  if (!ok_) error_ = "cannot connect to '" + endpoint + "': " + zmq_strerror(zmq_errno());
}

wire_connection::~wire_connection() {
  if (monitor_) zmq_close(monitor_);
  zmq_close(sock_);
  zmq_ctx_term(ctx_);
}

bool wire_connection::send(const wire_json& msg) {
  const std::vector<uint8_t> bytes = wire_json::to_msgpack(msg);
  return zmq_send(sock_, bytes.data(), bytes.size(), 0) >= 0;
}

bool wire_connection::recv(wire_json& out, int timeout_ms) {
  zmq_pollitem_t items[2] = {{sock_, 0, ZMQ_POLLIN, 0}, {monitor_, 0, ZMQ_POLLIN, 0}};
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < until) {
    if (on_interrupt_ && take_sigint()) on_interrupt_();
    if (zmq_poll(items, monitor_ ? 2 : 1, 100) <= 0) continue;
    if (items[1].revents & ZMQ_POLLIN) {
      zmq_msg_t ev;
      zmq_msg_init(&ev);
      uint16_t event = 0;
      if (zmq_msg_recv(&ev, monitor_, 0) >= 6) std::memcpy(&event, zmq_msg_data(&ev), 2);
      const bool more = zmq_msg_more(&ev);
      zmq_msg_close(&ev);
      if (more) zmq_recv(monitor_, nullptr, 0, 0);  // the address frame
      refused_ = event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH
                     ? "the server refused this CURVE key (is its curve_public listed in cortexd's keys file?)"
                     : "the CURVE handshake failed (is --curve-server-key the server's public key?)";
      return false;
    }
    if (items[0].revents & ZMQ_POLLIN) {
      zmq_msg_t m;
      zmq_msg_init(&m);
      zmq_msg_recv(&m, sock_, 0);
      const auto* p = static_cast<const uint8_t*>(zmq_msg_data(&m));
      out = wire_json::from_msgpack(p, p + zmq_msg_size(&m), true, false);
      zmq_msg_close(&m);
      if (out.is_discarded()) continue;
      return true;
    }
  }
  return false;
}

}  // namespace cortex::cli
