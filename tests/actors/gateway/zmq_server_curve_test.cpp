// The ZeroMQ server as a CURVE server: a real zmq_server on a loopback port
// and libzmq DEALER clients. Listed client keys get through tagged with their
// key id; an unlisted key and a plaintext client get nothing through (their
// handshake fails) and ZAP denials are counted; bad keys are bind errors.
#include "actors/gateway/zmq_server.hpp"

#include <gtest/gtest.h>
#include <zmq.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cortex {
namespace {

using std::chrono::milliseconds;

struct key_pair {
  std::string pub, secret;
};

key_pair make_key_pair() {
  char pub[41] = {}, secret[41] = {};
  EXPECT_EQ(zmq_curve_keypair(pub, secret), 0);
  return {pub, secret};
}

// One DEALER in a context of its own; CURVE client when `server_public` is set.
class dealer {
 public:
  dealer(const std::string& endpoint, const std::string& server_public = "", const key_pair& keys = {}) {
    ctx_ = zmq_ctx_new();
    sock_ = zmq_socket(ctx_, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(sock_, ZMQ_LINGER, &linger, sizeof linger);
    if (!server_public.empty()) {
      EXPECT_EQ(zmq_setsockopt(sock_, ZMQ_CURVE_SERVERKEY, server_public.c_str(), 40), 0);
      EXPECT_EQ(zmq_setsockopt(sock_, ZMQ_CURVE_PUBLICKEY, keys.pub.c_str(), 40), 0);
      EXPECT_EQ(zmq_setsockopt(sock_, ZMQ_CURVE_SECRETKEY, keys.secret.c_str(), 40), 0);
    }
    EXPECT_EQ(zmq_connect(sock_, endpoint.c_str()), 0);
  }
  ~dealer() {
    zmq_close(sock_);
    zmq_ctx_term(ctx_);
  }
  // Queued until the handshake completes (never, when it fails).
  void send(const std::string& s) { zmq_send(sock_, s.data(), s.size(), ZMQ_DONTWAIT); }
  // The next frame within `ms`, or "<none>".
  std::string recv(int ms) {
    zmq_pollitem_t item{sock_, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, ms) <= 0) return "<none>";
    char buf[256];
    const int n = zmq_recv(sock_, buf, sizeof buf, 0);
    return n < 0 ? "<error>" : std::string(buf, static_cast<size_t>(n));
  }

 private:
  void* ctx_ = nullptr;
  void* sock_ = nullptr;
};

// A started server; inbound frames are recorded and echoed back as "re:" + payload.
struct curve_server_test : ::testing::Test {
  key_pair server_keys = make_key_pair(), alice = make_key_pair(), bob = make_key_pair(), mallory = make_key_pair();
  std::unique_ptr<zmq_server> server;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<inbound_frame> frames;
  std::vector<std::string> peer_addresses;

  zmq_server_options curve_options() {
    zmq_server_options o;
    o.endpoint = "tcp://127.0.0.1:*";
    o.linger_ms = 0;
    o.curve_secret_key = server_keys.secret;
    const std::map<std::string, std::string> ids = {{alice.pub, "alice"}, {bob.pub, "bob"}};
    o.curve_authenticate = [this, ids](const std::string& pub, const std::string& address) -> std::optional<std::string> {
      {
        std::lock_guard<std::mutex> lk(mu);
        peer_addresses.push_back(address);
      }
      auto it = ids.find(pub);
      if (it == ids.end()) return std::nullopt;
      return it->second;
    };
    return o;
  }
  void start(const zmq_server_options& o) {
    auto s = zmq_server::bind(o);
    ASSERT_TRUE(s) << s.error().message;
    server = std::move(*s);
    server->start({[this](inbound_frame&& f) {
                     server->post(f.peer, "re:" + f.payload, f.delimiter);
                     std::lock_guard<std::mutex> lk(mu);
                     frames.push_back(std::move(f));
                     cv.notify_all();
                   },
                   nullptr, nullptr});
  }
  // Waits until `n` frames arrived (or `ms` passed); returns how many did.
  size_t wait_frames(size_t n, int ms) {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait_for(lk, milliseconds(ms), [&] { return frames.size() >= n; });
    return frames.size();
  }
  // Waits until the server counted `n` denials (or `ms` passed).
  uint64_t wait_denied(uint64_t n, int ms) {
    const auto until = std::chrono::steady_clock::now() + milliseconds(ms);
    while (server->n_auth_denied() < n && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(milliseconds(10));
    return server->n_auth_denied();
  }
};

TEST_F(curve_server_test, listed_clients_get_through_tagged_with_their_key_id) {
  start(curve_options());
  char derived[41] = {};
  ASSERT_EQ(zmq_curve_public(derived, server_keys.secret.c_str()), 0);
  EXPECT_EQ(server->curve_public_key(), std::string(derived));
  EXPECT_EQ(server->curve_public_key(), server_keys.pub);

  dealer a(server->endpoint(), server_keys.pub, alice), b(server->endpoint(), server_keys.pub, bob);
  a.send("from alice");
  b.send("from bob");
  ASSERT_EQ(wait_frames(2, 10000), 2u);
  EXPECT_EQ(a.recv(10000), "re:from alice");
  EXPECT_EQ(b.recv(10000), "re:from bob");
  std::lock_guard<std::mutex> lk(mu);
  std::map<std::string, std::string> user_by_payload;
  for (auto& f : frames) user_by_payload[f.payload] = f.user_id;
  EXPECT_EQ(user_by_payload["from alice"], "alice");
  EXPECT_EQ(user_by_payload["from bob"], "bob");
  EXPECT_EQ(server->n_auth_denied(), 0u);
  ASSERT_FALSE(peer_addresses.empty());
  EXPECT_EQ(peer_addresses.front(), "127.0.0.1");
}

TEST_F(curve_server_test, unlisted_key_gets_nothing_through_and_is_counted) {
  start(curve_options());
  dealer m(server->endpoint(), server_keys.pub, mallory);
  m.send("from mallory");
  EXPECT_GE(wait_denied(1, 10000), 1u);
  EXPECT_EQ(m.recv(500), "<none>");
  EXPECT_EQ(wait_frames(1, 500), 0u);
  // The server still serves listed clients.
  dealer a(server->endpoint(), server_keys.pub, alice);
  a.send("after");
  EXPECT_EQ(a.recv(10000), "re:after");
  EXPECT_EQ(wait_frames(1, 0), 1u);
}

TEST_F(curve_server_test, client_with_a_wrong_server_key_gets_nothing_through) {
  start(curve_options());
  const key_pair other_server = make_key_pair();
  dealer a(server->endpoint(), other_server.pub, alice);  // listed key, but it expects another server
  a.send("hello");
  EXPECT_EQ(a.recv(1500), "<none>");
  EXPECT_EQ(wait_frames(1, 0), 0u);
}

TEST_F(curve_server_test, plaintext_client_cannot_talk_to_a_curve_server) {
  start(curve_options());
  dealer plain(server->endpoint());
  plain.send("in clear");
  EXPECT_EQ(plain.recv(1500), "<none>");
  EXPECT_EQ(wait_frames(1, 0), 0u);
}

TEST_F(curve_server_test, plaintext_server_leaves_user_id_empty) {
  zmq_server_options o;
  o.endpoint = "tcp://127.0.0.1:*";
  o.linger_ms = 0;
  start(o);
  EXPECT_EQ(server->curve_public_key(), "");
  dealer plain(server->endpoint());
  plain.send("hi");
  EXPECT_EQ(plain.recv(10000), "re:hi");
  ASSERT_EQ(wait_frames(1, 0), 1u);
  EXPECT_EQ(frames[0].user_id, "");
  EXPECT_EQ(server->n_auth_denied(), 0u);
}

TEST_F(curve_server_test, bad_secret_key_is_a_bind_error) {
  for (const std::string& bad : {std::string("short"), std::string(40, '"'), server_keys.secret + "x"}) {
    zmq_server_options o = curve_options();
    o.curve_secret_key = bad;
    auto s = zmq_server::bind(o);
    ASSERT_FALSE(s) << "accepted '" << bad << "'";
    EXPECT_NE(s.error().message.find("40 Z85 characters"), std::string::npos) << s.error().message;
  }
  zmq_server_options o = curve_options();
  o.curve_authenticate = nullptr;
  auto s = zmq_server::bind(o);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("curve_authenticate"), std::string::npos) << s.error().message;
}

TEST_F(curve_server_test, throwing_authenticate_refuses) {
  zmq_server_options o = curve_options();
  o.curve_authenticate = [](const std::string&, const std::string&) -> std::optional<std::string> {
    throw std::runtime_error("keys unavailable");
  };
  start(o);
  dealer a(server->endpoint(), server_keys.pub, alice);
  a.send("hello");
  EXPECT_GE(wait_denied(1, 10000), 1u);
  EXPECT_EQ(a.recv(300), "<none>");
  EXPECT_EQ(wait_frames(1, 0), 0u);
}

}  // namespace
}  // namespace cortex

namespace cortex {
namespace {

// Plaintext, with the second send failing as if the peer had left
// (EHOSTUNREACH): the frames already posted behind it must not go out (the
// client would see a gap), and the peer is served again once it talks.
TEST(zmq_server_gone, frames_posted_after_a_failed_send_are_dropped_until_the_peer_talks_again) {
  zmq_server_options o;
  o.endpoint = "tcp://127.0.0.1:*";
  o.linger_ms = 0;
  o.fault_send_fail_at = 2;
  o.fault_send_errno = EHOSTUNREACH;
  auto s = zmq_server::bind(o);
  ASSERT_TRUE(s) << s.error().message;
  std::unique_ptr<zmq_server> server = std::move(*s);
  std::mutex mu;
  std::vector<std::string> gone;
  server->start({[&](inbound_frame&& f) {
                   // All posted from the I/O thread's callback: one batch.
                   if (f.payload == "hi") {
                     for (const char* p : {"f1", "f2", "f3", "f4", "f5"}) server->post(f.peer, p, f.delimiter);
                   } else {
                     server->post(f.peer, "re:" + f.payload, f.delimiter);
                   }
                 },
                 [&](const std::string& peer) {
                   std::lock_guard<std::mutex> lk(mu);
                   gone.push_back(peer);
                 },
                 nullptr});
  dealer d(server->endpoint());
  d.send("hi");
  EXPECT_EQ(d.recv(10000), "f1");
  EXPECT_EQ(d.recv(500), "<none>") << "f2 failed: nothing behind it may arrive";
  {
    std::lock_guard<std::mutex> lk(mu);
    EXPECT_EQ(gone.size(), 1u);
  }
  d.send("again");
  EXPECT_EQ(d.recv(10000), "re:again");
  server->stop();
}

}  // namespace
}  // namespace cortex
