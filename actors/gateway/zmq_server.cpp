#include "actors/gateway/zmq_server.hpp"

#include <sys/eventfd.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "actors/auth/secrets.hpp"

namespace cortex {

namespace {

std::string zmq_error_text() { return zmq_strerror(zmq_errno()); }

void set_int(void* s, int opt, int v) { zmq_setsockopt(s, opt, &v, sizeof v); }

// libzmq's ZMQ_ZAP_ENFORCE_DOMAIN (a draft option in 4.3's header): with it a
// CURVE server fails handshakes closed when no ZAP handler answers. Builds
// without the draft API reject it; the handler is bound first either way.
constexpr int k_zap_enforce_domain = 93;

}  // namespace

expected<std::unique_ptr<zmq_server>> zmq_server::bind(const zmq_server_options& opts) {
  std::unique_ptr<zmq_server> s(new zmq_server());
  s->opts_ = opts;
  s->ctx_ = zmq_ctx_new();
  if (!s->ctx_) return fail(errc::internal, "cannot create a ZeroMQ context: " + zmq_error_text());
  s->router_ = zmq_socket(s->ctx_, ZMQ_ROUTER);
  set_int(s->router_, ZMQ_ROUTER_MANDATORY, 1);
  int64_t maxmsg = opts.max_message_bytes;
  zmq_setsockopt(s->router_, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
  set_int(s->router_, ZMQ_SNDHWM, opts.sndhwm);
  set_int(s->router_, ZMQ_HEARTBEAT_IVL, opts.heartbeat_ivl_ms);
  set_int(s->router_, ZMQ_HEARTBEAT_TIMEOUT, opts.heartbeat_timeout_ms);
  set_int(s->router_, ZMQ_HEARTBEAT_TTL, opts.heartbeat_timeout_ms);
  set_int(s->router_, ZMQ_LINGER, opts.linger_ms);
  if (opts.sndbuf_bytes > 0) set_int(s->router_, ZMQ_SNDBUF, opts.sndbuf_bytes);
  if (!opts.curve_secret_key.empty()) {
    if (status st = s->enable_curve(); !st) return st;
  }
  if (zmq_bind(s->router_, opts.endpoint.c_str()) != 0) {
    return fail(errc::invalid_param, "cannot bind ZeroMQ endpoint '" + opts.endpoint + "': " + zmq_error_text() +
                      " (is another server using it? choose another with --endpoint)");
  }
  char buf[256];
  size_t len = sizeof buf;
  s->endpoint_ = zmq_getsockopt(s->router_, ZMQ_LAST_ENDPOINT, buf, &len) == 0 ? std::string(buf) : opts.endpoint;
  const std::string mon = "inproc://cortex-monitor-" + std::to_string(reinterpret_cast<uintptr_t>(s.get()));
  if (zmq_socket_monitor(s->router_, mon.c_str(), ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_ACCEPTED) == 0) {
    s->monitor_ = zmq_socket(s->ctx_, ZMQ_PAIR);
    if (zmq_connect(s->monitor_, mon.c_str()) != 0) {
      zmq_close(s->monitor_);
      s->monitor_ = nullptr;
    }
  }
  s->wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (s->wake_fd_ < 0) return fail(errc::internal, "cannot create an eventfd for the gateway thread");
  return s;
}

// The handler is bound before the router (RFC 27), so no handshake can
// reach an unguarded server.
status zmq_server::enable_curve() {
  const std::string& key = opts_.curve_secret_key;
  if (!zmq_has("curve")) return fail(errc::unsupported, "this libzmq was built without CURVE support");
  if (!auth::is_z85_key(key)) {
    return fail(errc::invalid_param, "the CURVE secret key must be 40 Z85 characters (" + std::to_string(key.size()) +
                                         " given, or not Z85); write a key pair with 'cortex keys curve --out NAME'");
  }
  if (!opts_.curve_authenticate) return fail(errc::invalid_param, "a CURVE server needs curve_authenticate (the keys)");
  char pub[41] = {};
  if (zmq_curve_public(pub, key.c_str()) != 0) return fail(errc::invalid_param, "cannot derive the CURVE public key");
  curve_public_ = pub;
  auto zap = zap_handler::start(ctx_, opts_.curve_authenticate);
  if (!zap) return zap.error();
  zap_ = std::move(*zap);
  set_int(router_, ZMQ_CURVE_SERVER, 1);
  if (zmq_setsockopt(router_, ZMQ_CURVE_SECRETKEY, key.c_str(), key.size()) != 0) {
    return fail(errc::invalid_param, "libzmq refused the CURVE secret key: " + zmq_error_text());
  }
  const std::string domain = "cortex";
  zmq_setsockopt(router_, ZMQ_ZAP_DOMAIN, domain.data(), domain.size());
  set_int(router_, k_zap_enforce_domain, 1);
  return status::ok();
}

zmq_server::~zmq_server() {
  stop();
  if (monitor_) zmq_close(monitor_);
  if (router_) zmq_close(router_);
  zap_.reset();
  if (ctx_) zmq_ctx_term(ctx_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void zmq_server::start(callbacks cb) {
  cb_ = std::move(cb);
  io_ = std::thread([this] { run(); });
}

void zmq_server::post(const std::string& peer, std::string payload, bool delimiter) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    posted_.emplace_back(peer, outgoing{std::move(payload), delimiter});
  }
  const uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
}

void zmq_server::stop() {
  if (stopped_) return;
  stopped_ = true;
  stopping_ = true;
  const uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
  if (io_.joinable()) io_.join();
  // Handshakes after this wait unanswered (and fail): nothing is served any more.
  if (zap_) zap_->stop();
}

bool zmq_server::send_now(const std::string& peer, const std::string& payload, bool delimiter, int& err) {
  if (opts_.fault_send_fail_at != 0 && ++n_send_attempts_ == opts_.fault_send_fail_at) {
    err = opts_.fault_send_errno;  // injected fault
    return false;
  }
  if (zmq_send(router_, peer.data(), peer.size(), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
    err = zmq_errno();
    return false;
  }
  if (delimiter) zmq_send(router_, "", 0, ZMQ_SNDMORE);
  zmq_send(router_, payload.data(), payload.size(), 0);
  n_out_++;
  return true;
}

void zmq_server::peer_gone(const std::string& peer) {
  const auto now = std::chrono::steady_clock::now();
  for (auto g = gone_.begin(); g != gone_.end();) g = now - g->second > gone_mark_ttl ? gone_.erase(g) : std::next(g);
  gone_[peer] = now;
  auto it = peers_.find(peer);
  if (it != peers_.end()) {
    if (it->second.fd >= 0) {
      auto& v = peers_by_fd_[it->second.fd];
      v.erase(std::remove(v.begin(), v.end(), peer), v.end());
    }
    peers_.erase(it);
    n_peers_ = peers_.size();
  }
  if (cb_.on_peer_gone) cb_.on_peer_gone(peer);
}

// Sends a peer's queued frames until one meets the high-water mark.
void zmq_server::flush_peer(const std::string& peer) {
  auto it = peers_.find(peer);
  if (it == peers_.end()) return;
  auto& ps = it->second;
  while (!ps.queue.empty()) {
    int err = 0;
    if (!send_now(peer, ps.queue.front().payload, ps.queue.front().delimiter, err)) {
      if (err == EAGAIN) break;
      peer_gone(peer);  // EHOSTUNREACH: the peer left
      return;
    }
    ps.queue.pop_front();
  }
  const bool blocked = !ps.queue.empty();
  if (blocked != ps.blocked) {
    ps.blocked = blocked;
    if (cb_.on_peer_blocked) cb_.on_peer_blocked(peer, blocked);
  }
}

void zmq_server::drain_posts() {
  std::vector<std::pair<std::string, outgoing>> batch;
  {
    std::lock_guard<std::mutex> lk(mu_);
    batch.swap(posted_);
  }
  for (auto& [peer, out] : batch) {
    if (!gone_.empty() && gone_.count(peer)) {
      continue;  // posted before the gateway heard the peer was gone
    }
    auto& ps = peers_[peer];
    if (ps.queue.empty()) {
      int err = 0;
      if (send_now(peer, out.payload, out.delimiter, err)) continue;
      if (err != EAGAIN) {
        peer_gone(peer);
        continue;
      }
    }
    if (ps.queue.size() >= opts_.max_peer_backlog) {
      peer_gone(peer);  // cannot keep up at all: treated as gone
      continue;
    }
    ps.queue.push_back(std::move(out));
    if (!ps.blocked) {
      ps.blocked = true;
      if (cb_.on_peer_blocked) cb_.on_peer_blocked(peer, true);
    }
  }
}

void zmq_server::receive_all() {
  for (;;) {
    std::vector<std::string> frames;
    std::string user_id;  // of the last frame: the payload's
    std::string address;  // the first frame's Peer-Address (kept for the peer when it is first seen)
    int fd = -1;
    bool more = true;
    while (more) {
      zmq_msg_t msg;
      zmq_msg_init(&msg);
      if (zmq_msg_recv(&msg, router_, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&msg);
        if (frames.empty()) return;  // EAGAIN: nothing more
        break;
      }
      if (fd < 0) fd = zmq_msg_get(&msg, ZMQ_SRCFD);
      const char* user = zap_ ? zmq_msg_gets(&msg, "User-Id") : nullptr;
      user_id = user ? user : "";
      if (frames.empty()) {
        const char* a = zmq_msg_gets(&msg, "Peer-Address");
        address = a ? a : "";
      }
      frames.emplace_back(static_cast<const char*>(zmq_msg_data(&msg)), zmq_msg_size(&msg));
      more = zmq_msg_more(&msg);
      zmq_msg_close(&msg);
    }
    n_in_++;
    if (frames.size() < 2) continue;
    inbound_frame in;
    in.peer = std::move(frames[0]);
    in.user_id = std::move(user_id);
    if (fd >= 0 && monitor_) {
      auto known = peers_.find(in.peer);
      if (known == peers_.end() || known->second.fd != fd) handle_monitor();  // see run()
    }
    if (!gone_.empty()) gone_.erase(in.peer);  // it talks again: serve it again
    auto& ps = peers_[in.peer];
    n_peers_ = peers_.size();
    if (ps.address.empty()) ps.address = std::move(address);
    in.peer_address = ps.address;
    if (fd >= 0 && ps.fd != fd) {
      ps.fd = fd;
      peers_by_fd_[fd].push_back(in.peer);
    }
    if (frames.size() >= 3 && frames[1].empty()) {
      in.delimiter = true;
      in.payload = std::move(frames[2]);
      in.extra_frames = frames.size() > 3;
    } else {
      in.payload = std::move(frames[1]);
      in.extra_frames = frames.size() > 2;
    }
    if (cb_.on_message) cb_.on_message(std::move(in));
  }
}

void zmq_server::handle_monitor() {
  for (;;) {
    zmq_msg_t ev, addr;
    zmq_msg_init(&ev);
    if (zmq_msg_recv(&ev, monitor_, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&ev);
      return;
    }
    uint16_t event = 0;
    uint32_t value = 0;
    if (zmq_msg_size(&ev) >= 6) {
      std::memcpy(&event, zmq_msg_data(&ev), 2);
      std::memcpy(&value, static_cast<const char*>(zmq_msg_data(&ev)) + 2, 4);
    }
    const bool more = zmq_msg_more(&ev);
    zmq_msg_close(&ev);
    if (more) {
      zmq_msg_init(&addr);
      zmq_msg_recv(&addr, monitor_, 0);
      zmq_msg_close(&addr);
    }
    if (event == ZMQ_EVENT_DISCONNECTED) {
      auto it = peers_by_fd_.find(static_cast<int>(value));
      if (it == peers_by_fd_.end()) continue;
      auto gone = std::move(it->second);
      peers_by_fd_.erase(it);
      for (auto& p : gone) {
        auto ps = peers_.find(p);
        if (ps != peers_.end() && ps->second.fd == static_cast<int>(value)) {
          ps->second.fd = -1;
          peer_gone(p);
        }
      }
    }
  }
}

void zmq_server::run() {
  zmq_pollitem_t items[3] = {{router_, 0, ZMQ_POLLIN, 0}, {nullptr, wake_fd_, ZMQ_POLLIN, 0}, {monitor_, 0, ZMQ_POLLIN, 0}};
  const int n_items = monitor_ ? 3 : 2;
  auto any_blocked = [&] {
    for (auto& [p, ps] : peers_) {
      if (ps.blocked) return true;
    }
    return false;
  };
  while (!stopping_) {
    const long timeout = any_blocked() ? 5 : 200;
    if (zmq_poll(items, n_items, timeout) < 0 && zmq_errno() == ETERM) break;
    if (items[1].revents & ZMQ_POLLIN) {
      uint64_t v;
      [[maybe_unused]] auto n = ::read(wake_fd_, &v, sizeof v);
    }
    // Monitor events first, always: a connection's fd is reused by the next
    // one, and the old connection's DISCONNECTED must be applied before the
    // new connection's first message ties its peer to that fd, or the new
    // peer would be taken for gone.
    if (monitor_) handle_monitor();
    if (items[0].revents & ZMQ_POLLIN) receive_all();
    drain_posts();
    std::vector<std::string> blocked;
    for (auto& [p, ps] : peers_) {
      if (ps.blocked) blocked.push_back(p);
    }
    for (auto& p : blocked) flush_peer(p);
  }
  // Stopping: send what was posted, retrying blocked peers until linger.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(opts_.linger_ms);
  drain_posts();
  while (any_blocked() && std::chrono::steady_clock::now() < until) {
    std::vector<std::string> blocked;
    for (auto& [p, ps] : peers_) {
      if (ps.blocked) blocked.push_back(p);
    }
    for (auto& p : blocked) flush_peer(p);
    zmq_poll(nullptr, 0, 5);
  }
}

}  // namespace cortex
