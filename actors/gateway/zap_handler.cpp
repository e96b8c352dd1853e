#include "actors/gateway/zap_handler.hpp"

#include <sys/eventfd.h>
#include <unistd.h>
#include <zmq.h>

#include <vector>

namespace cortex {

namespace {

constexpr const char* k_zap_endpoint = "inproc://zeromq.zap.01";

// Every frame of one multipart message; empty on failure.
std::vector<std::string> recv_multipart(void* sock) {
  std::vector<std::string> frames;
  for (bool more = true; more;) {
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, sock, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&msg);
      break;
    }
    frames.emplace_back(static_cast<const char*>(zmq_msg_data(&msg)), zmq_msg_size(&msg));
    more = zmq_msg_more(&msg);
    zmq_msg_close(&msg);
  }
  return frames;
}

}  // namespace

expected<std::unique_ptr<zap_handler>> zap_handler::start(void* zmq_context, authenticate_fn authenticate) {
  std::unique_ptr<zap_handler> h(new zap_handler());
  h->authenticate_ = std::move(authenticate);
  h->sock_ = zmq_socket(zmq_context, ZMQ_REP);
  if (!h->sock_) return fail(errc::internal, std::string("cannot create the ZAP socket: ") + zmq_strerror(zmq_errno()));
  int linger = 0;
  zmq_setsockopt(h->sock_, ZMQ_LINGER, &linger, sizeof linger);
  if (zmq_bind(h->sock_, k_zap_endpoint) != 0) {
    return fail(errc::internal, std::string("cannot bind the ZAP handler on ") + k_zap_endpoint + ": " +
                                    zmq_strerror(zmq_errno()) + " (one CURVE server per ZeroMQ context)");
  }
  h->wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (h->wake_fd_ < 0) return fail(errc::internal, "cannot create an eventfd for the ZAP thread");
  h->thread_ = std::thread([p = h.get()] { p->run(); });
  return h;
}

zap_handler::~zap_handler() {
  stop();
  if (sock_) zmq_close(sock_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void zap_handler::stop() {
  if (stopped_) return;
  stopped_ = true;
  stopping_ = true;
  if (wake_fd_ >= 0) {
    const uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
  }
  if (thread_.joinable()) thread_.join();
}

void zap_handler::run() {
  zmq_pollitem_t items[2] = {{sock_, 0, ZMQ_POLLIN, 0}, {nullptr, wake_fd_, ZMQ_POLLIN, 0}};
  while (!stopping_) {
    if (zmq_poll(items, 2, -1) < 0) {
      if (zmq_errno() == ETERM) return;
      continue;  // EINTR
    }
    if (items[0].revents & ZMQ_POLLIN) answer_one();
  }
}

// One request (RFC 27): version, request id, domain, address, routing id,
// mechanism, credentials...; one reply: version, request id, status code,
// status text, user id, metadata. A REP socket must answer every request it
// read before the next one, so even a malformed request gets a 400.
void zap_handler::answer_one() {
  const std::vector<std::string> req = recv_multipart(sock_);
  if (req.empty()) return;
  std::string status = "400", text = "unknown CURVE client key", user_id;
  const bool well_formed = req.size() >= 7 && req[0] == "1.0";
  if (!well_formed) {
    text = "malformed ZAP request";
  } else if (req[5] != "CURVE" || req[6].size() != 32) {
    text = "CURVE required";
  } else {
    char z85[41] = {};
    zmq_z85_encode(z85, reinterpret_cast<const uint8_t*>(req[6].data()), 32);
    std::optional<std::string> key_id;
    try {
      key_id = authenticate_ ? authenticate_(z85, req[3]) : std::nullopt;
    } catch (...) {
      key_id = std::nullopt;  // a failing check refuses; it never admits
    }
    if (key_id) {
      status = "200";
      text = "OK";
      user_id = *key_id;
    }
  }
  (status == "200" ? n_allowed_ : n_denied_)++;
  const std::string reply[] = {"1.0", req.size() >= 2 ? req[1] : std::string(), status, text, user_id, ""};
  for (size_t i = 0; i < 6; ++i) zmq_send(sock_, reply[i].data(), reply[i].size(), i < 5 ? ZMQ_SNDMORE : 0);
}

}  // namespace cortex
