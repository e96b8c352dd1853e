// The Beast HTTP server against a real Beast client over loopback:
// keep-alive, the body cap, the head timeout, the connection cap, chunked
// streams, and a client that closes mid-request.
#include "actors/http_gateway/http_server.hpp"

#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <mutex>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace cortex {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = net::ip::tcp;

// Collects what the server's callbacks report (they run on its I/O thread).
struct recorder {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<http_inbound> requests;
  std::vector<uint64_t> closed;

  http_server::callbacks callbacks() {
    return {[this](http_inbound&& in) {
              std::lock_guard<std::mutex> l(mu);
              requests.push_back(std::move(in));
              cv.notify_all();
            },
            [this](uint64_t conn) {
              std::lock_guard<std::mutex> l(mu);
              closed.push_back(conn);
              cv.notify_all();
            },
            nullptr};
  }
  http_inbound next_request() {
    std::unique_lock<std::mutex> l(mu);
    const bool got = cv.wait_for(l, std::chrono::seconds(10), [&] { return !requests.empty(); });
    EXPECT_TRUE(got) << "no request reached the callback";
    if (!got) return {};
    auto r = std::move(requests.front());
    requests.pop_front();
    return r;
  }
  bool wait_closed(size_t n) {
    std::unique_lock<std::mutex> l(mu);
    return cv.wait_for(l, std::chrono::seconds(5), [&] { return closed.size() >= n; });
  }
};

struct client {
  net::io_context ioc;
  tcp::socket sock{ioc};
  beast::flat_buffer buf;
  explicit client(uint16_t port) { sock.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port)); }
  void send(const std::string& method, const std::string& target, const std::string& body = "") {
    bhttp::request<bhttp::string_body> req{method == "POST" ? bhttp::verb::post : bhttp::verb::get, target, 11};
    req.set(bhttp::field::host, "localhost");
    req.set(bhttp::field::content_type, "application/json");
    req.body() = body;
    req.prepare_payload();
    bhttp::write(sock, req);
  }
  bhttp::response<bhttp::string_body> read() {
    bhttp::response_parser<bhttp::string_body> p;
    p.body_limit(64 << 20);
    bhttp::read(sock, buf, p);
    return p.release();
  }
};

struct server_test : ::testing::Test {
  recorder rec;
  std::unique_ptr<http_server> srv;
  void start(http_server_options o = {}) {
    o.port = 0;
    auto s = http_server::bind(o);
    ASSERT_TRUE(s) << s.error();
    srv = std::move(*s);
    srv->start(rec.callbacks());
  }
  void TearDown() override {
    if (srv) srv->stop();
  }
  void answer(uint64_t conn, const std::string& body, int status = 200) {
    http_response_out r;
    r.status = status;
    r.body = body;
    srv->respond(conn, std::move(r));
  }
};

TEST_F(server_test, keep_alive_serves_several_requests_on_one_connection) {
  start();
  client c(srv->port());
  for (int i = 0; i < 3; ++i) {
    c.send("POST", "/v1/x?i=" + std::to_string(i), "{\"n\":" + std::to_string(i) + "}");
    auto in = rec.next_request();
    EXPECT_EQ(in.method, "POST");
    EXPECT_EQ(in.target, "/v1/x?i=" + std::to_string(i));
    EXPECT_EQ(in.body, "{\"n\":" + std::to_string(i) + "}");
    EXPECT_EQ(in.content_type, "application/json");
    answer(in.conn, "ok" + std::to_string(i));
    auto res = c.read();
    EXPECT_EQ(res.result_int(), 200);
    EXPECT_EQ(res.body(), "ok" + std::to_string(i));
    EXPECT_TRUE(res.keep_alive());
  }
  EXPECT_EQ(srv->n_requests(), 3u);
  EXPECT_EQ(srv->n_connections(), 1u);
}

TEST_F(server_test, a_body_over_the_cap_is_413_and_never_reaches_the_gateway) {
  http_server_options o;
  o.max_body_bytes = 1000;
  start(o);
  client c(srv->port());
  c.send("POST", "/v1/completions", std::string(2000, 'x'));
  auto res = c.read();
  EXPECT_EQ(res.result_int(), 413);
  EXPECT_NE(res.body().find("1000 bytes"), std::string::npos) << res.body();
  std::lock_guard<std::mutex> l(rec.mu);
  EXPECT_TRUE(rec.requests.empty());
}

TEST_F(server_test, a_client_that_sends_no_complete_head_is_closed) {
  http_server_options o;
  o.header_timeout_ms = 200;
  start(o);
  client c(srv->port());
  net::write(c.sock, net::buffer(std::string("GET /health/live HTTP/1.1\r\nHost: x\r\n")));  // no blank line
  const auto t0 = std::chrono::steady_clock::now();
  char b[16];
  beast::error_code ec;
  c.sock.read_some(net::buffer(b), ec);
  EXPECT_TRUE(ec == net::error::eof || ec == net::error::connection_reset) << ec.message();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST_F(server_test, connections_over_the_cap_get_503) {
  http_server_options o;
  o.max_connections = 1;
  start(o);
  client first(srv->port());
  first.send("GET", "/health/live");
  auto in = rec.next_request();  // the first connection is now open and counted
  client second(srv->port());
  second.send("GET", "/health/live");
  auto res = second.read();
  EXPECT_EQ(res.result_int(), 503);
  EXPECT_EQ(res[bhttp::field::retry_after], "1");
  answer(in.conn, "live");
  EXPECT_EQ(first.read().body(), "live");
}

TEST_F(server_test, a_stream_is_chunked_and_the_connection_stays_usable) {
  start();
  client c(srv->port());
  c.send("POST", "/v1/chat/completions", "{}");
  auto in = rec.next_request();
  srv->stream_begin(in.conn, 200, "text/event-stream", {{"Cache-Control", "no-cache"}});
  srv->stream_write(in.conn, "data: 1\n\n");
  srv->stream_write(in.conn, "");  // ignored: an empty chunk would end the stream
  srv->stream_write(in.conn, "data: [DONE]\n\n");
  srv->stream_end(in.conn);
  auto res = c.read();
  EXPECT_EQ(res.result_int(), 200);
  EXPECT_TRUE(res.chunked());
  EXPECT_EQ(res[bhttp::field::content_type], "text/event-stream");
  EXPECT_EQ(res.body(), "data: 1\n\ndata: [DONE]\n\n");
  c.send("GET", "/health/live");
  auto in2 = rec.next_request();
  EXPECT_EQ(in2.conn, in.conn);
  answer(in2.conn, "again");
  EXPECT_EQ(c.read().body(), "again");
}

TEST_F(server_test, a_client_closing_mid_request_is_reported_at_once) {
  start();
  uint64_t conn = 0;
  {
    client c(srv->port());
    c.send("POST", "/v1/completions", "{}");
    conn = rec.next_request().conn;
  }  // closed before any response
  ASSERT_TRUE(rec.wait_closed(1));
  EXPECT_EQ(rec.closed[0], conn);
  answer(conn, "too late");  // posting to a closed connection is harmless
  EXPECT_EQ(srv->n_connections(), 0u);
}

}  // namespace
}  // namespace cortex
