#include "actors/http_gateway/http_server.hpp"

#include <deque>
#include <optional>
#include <unordered_map>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "actors/http_gateway/anthropic_messages.hpp"
#include "actors/http_gateway/openai_error.hpp"

namespace cortex {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = net::ip::tcp;

namespace {

constexpr size_t header_limit_bytes = 64 << 10;
constexpr size_t pipelined_limit_bytes = 64 << 10;  // read ahead while a request is served

// One queued output step: starts an async write (or does nothing) and calls
// `done` with its result.
struct write_op {
  size_t bytes = 0;
  std::function<void(std::function<void(beast::error_code)>)> start;
};

}  // namespace

class http_connection;

struct http_server::impl {
  http_server* owner = nullptr;
  http_server_options opts;
  net::io_context ioc{1};
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work{ioc.get_executor()};
  tcp::acceptor acceptor{ioc};
  callbacks cb;
  uint64_t next_conn = 1;
  std::unordered_map<uint64_t, std::shared_ptr<http_connection>> conns;  // I/O thread only

  void accept();
  void closed(uint64_t id, bool delivered);
  void count_request() { owner->n_requests_++; }
  template <class F>
  void with_conn(uint64_t id, F&& f);
};

class http_connection : public std::enable_shared_from_this<http_connection> {
 public:
  http_connection(http_server::impl& srv, uint64_t id, tcp::socket s, bool reject)
      : srv_(srv), id_(id), stream_(std::move(s)), reject_(reject) {}

  void start() { read_request(); }

  void respond(http_response_out r) {
    auto res = std::make_shared<bhttp::response<bhttp::string_body>>(static_cast<bhttp::status>(r.status), 11);
    res->set(bhttp::field::server, "cortexd");
    res->set(bhttp::field::content_type, r.content_type);
    for (auto& [k, v] : r.headers) res->set(k, v);
    res->keep_alive(keep_alive_);
    res->body() = std::move(r.body);
    res->prepare_payload();
    const size_t bytes = res->body().size() + 256;
    auto self = shared_from_this();
    enqueue({bytes, [self, res](auto done) {
               bhttp::async_write(self->stream_, *res, [res, done](beast::error_code ec, size_t) { done(ec); });
             }});
    enqueue_response_end();
  }

  void stream_begin(int status, const std::string& content_type, const http_header_list& headers) {
    auto res = std::make_shared<bhttp::response<bhttp::empty_body>>(static_cast<bhttp::status>(status), 11);
    res->set(bhttp::field::server, "cortexd");
    res->set(bhttp::field::content_type, content_type);
    for (auto& [k, v] : headers) res->set(k, v);
    res->keep_alive(keep_alive_);
    res->chunked(true);
    auto sr = std::make_shared<bhttp::response_serializer<bhttp::empty_body>>(*res);
    auto self = shared_from_this();
    enqueue({256, [self, res, sr](auto done) {
               bhttp::async_write_header(self->stream_, *sr, [res, sr, done](beast::error_code ec, size_t) { done(ec); });
             }});
  }

  void stream_write(std::string data) {
    if (data.empty()) return;  // an empty chunk would end the stream
    auto buf = std::make_shared<std::string>(std::move(data));
    auto self = shared_from_this();
    enqueue({buf->size(), [self, buf](auto done) {
               net::async_write(self->stream_, bhttp::make_chunk(net::buffer(*buf)),
                                [buf, done](beast::error_code ec, size_t) { done(ec); });
             }});
  }

  void stream_end() {
    auto self = shared_from_this();
    enqueue({8, [self](auto done) {
               net::async_write(self->stream_, bhttp::make_chunk_last(), [done](beast::error_code ec, size_t) { done(ec); });
             }});
    enqueue_response_end();
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    // Queued writes hold `self`: dropping them breaks the cycle that kept a
    // connection closed mid-response alive forever (LeakSanitizer).
    queue_.clear();
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
    srv_.closed(id_, delivered_);
  }

 private:
  // "ip:port" of the client ("" once the socket is gone).
  std::string peer() {
    beast::error_code ec;
    auto ep = stream_.socket().remote_endpoint(ec);
    if (ec) return {};
    return ep.address().to_string() + ":" + std::to_string(ep.port());
  }

  void read_request() {
    if (closed_) return;
    parser_.emplace();
    parser_->body_limit(srv_.opts.max_body_bytes);
    parser_->header_limit(header_limit_bytes);
    stream_.expires_after(std::chrono::milliseconds(srv_.opts.header_timeout_ms));
    auto self = shared_from_this();
    bhttp::async_read_header(stream_, buf_, *parser_, [self](beast::error_code ec, size_t) { self->on_header(ec); });
  }

  void on_header(beast::error_code ec) {
    if (closed_) return;
    if (ec) {
      if (ec == bhttp::error::header_limit)
        return fail(413, {errc::too_large, "the request head is larger than 64 KiB", 0});
      if (ec == bhttp::error::body_limit) return too_large();  // Content-Length over the cap
      return close();  // timeout, bad request line, client gone: nothing to answer
    }
    keep_alive_ = parser_->get().keep_alive();
    if (srv_.cb.on_head) {
      const auto& h = parser_->get();
      key_id_.clear();
      auto refused = srv_.cb.on_head({std::string(h.method_string()), std::string(h.target()),
                                      std::string(h[bhttp::field::authorization]), std::string(h["x-api-key"]), peer()},
                                     key_id_);
      if (refused) return fail(http::openai_http_status(refused->code), *refused, std::string(h.target()));
    }
    if (auto n = parser_->content_length(); n && *n > srv_.opts.max_body_bytes) return too_large();
    if (parser_->is_done()) return on_body({});
    stream_.expires_after(std::chrono::milliseconds(srv_.opts.body_timeout_ms));
    auto self = shared_from_this();
    bhttp::async_read(stream_, buf_, *parser_, [self](beast::error_code ec, size_t) { self->on_body(ec); });
  }

  void on_body(beast::error_code ec) {
    if (closed_) return;
    if (ec == bhttp::error::body_limit) return too_large();
    if (ec) return close();
    stream_.expires_never();
    busy_ = true;
    // http.md: 503 beyond the connection cap. Protocol v1 has no 503 name for
    // it; `overloaded` (retryable, "the server is full") is the closest.
    if (reject_)
      return fail(503, {errc::overloaded, "the server has too many open connections; retry shortly", 1000}, head_target());
    auto& req = parser_->get();
    http_inbound in;
    in.conn = id_;
    in.method = std::string(req.method_string());
    in.target = std::string(req.target());
    in.content_type = std::string(req[bhttp::field::content_type]);
    in.body = std::move(req.body());
    in.peer = peer();
    in.key_id = key_id_;
    parser_.reset();
    delivered_ = true;
    srv_.count_request();
    watch();
    if (srv_.cb.on_request) srv_.cb.on_request(std::move(in));
  }

  // A request is in progress: keep a read pending so a client that closes
  // the connection is noticed at once.
  void watch() {
    if (closed_ || watching_) return;
    watching_ = true;
    auto self = shared_from_this();
    stream_.async_read_some(buf_.prepare(4096), [self](beast::error_code ec, size_t n) { self->on_watch(ec, n); });
  }

  void on_watch(beast::error_code ec, size_t n) {
    watching_ = false;
    if (closed_) return;
    if (lingering_) return ec ? close() : drain();
    if (ec == net::error::operation_aborted) {
      if (!busy_) read_request();
      return;
    }
    if (ec) return close();  // EOF or reset: the client is gone
    buf_.commit(n);
    if (!busy_) return read_request();
    if (buf_.size() < pipelined_limit_bytes) watch();
  }

  // An error answered without involving the gateway (OpenAI's error shape
  // and headers, openai_error.hpp; Anthropic's for a target under
  // /v1/messages) with `status`; the connection closes after it.
  void fail(uint16_t status, const cortex::status& e, std::string_view target = {}) {
    keep_alive_ = false;
    busy_ = true;
    stream_.expires_never();
    auto er = http::is_anthropic_target(target) ? http::make_anthropic_error(e) : http::make_openai_error(e);
    http_response_out r;
    r.status = status;
    r.headers = er.headers();
    r.body = std::move(er.body);
    respond(std::move(r));
  }
  // The target of the head being read ("" when none).
  std::string head_target() const { return parser_ ? std::string(parser_->get().target()) : std::string(); }
  void too_large() {
    fail(413, {errc::too_large, "the request body is larger than " + std::to_string(srv_.opts.max_body_bytes) + " bytes", 0},
         head_target());
  }

  void enqueue(write_op op) {
    if (closed_) return;
    queued_bytes_ += op.bytes;
    queue_.push_back(std::move(op));
    update_blocked();
    if (!writing_) write_next();
  }
  void enqueue_response_end() {
    auto self = shared_from_this();
    enqueue({0, [self](auto done) {
               self->response_done();
               done({});
             }});
  }

  void write_next() {
    if (closed_ || queue_.empty()) {
      writing_ = false;
      return;
    }
    writing_ = true;
    auto op = std::move(queue_.front());
    queue_.pop_front();
    auto self = shared_from_this();
    const size_t bytes = op.bytes;
    op.start([self, bytes](beast::error_code ec) {
      self->queued_bytes_ -= bytes;
      if (ec) return self->close();
      self->update_blocked();
      self->write_next();
    });
  }

  void response_done() {
    busy_ = false;
    if (!keep_alive_) return lingering_close();
    if (watching_) {
      beast::error_code ec;
      stream_.socket().cancel(ec);  // on_watch (aborted) reads the next request
    } else {
      read_request();
    }
  }

  // Closes after a final response while the client may still be sending
  // (an unread body): stop sending, read and drop what arrives for up to 2 s,
  // then close. Closing at once would reset the connection, and the client
  // could lose the response it has not read yet.
  void lingering_close() {
    if (closed_) return;
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return close();
    lingering_ = true;
    stream_.expires_after(std::chrono::seconds(2));
    if (!watching_) drain();  // else the pending watch read goes on draining
  }
  void drain() {
    auto self = shared_from_this();
    buf_.clear();
    stream_.async_read_some(buf_.prepare(16384), [self](beast::error_code ec, size_t) {
      if (ec || self->closed_) return self->close();
      self->drain();
    });
  }

  void update_blocked() {
    const bool over = queued_bytes_ > srv_.opts.max_queued_bytes;
    const bool under = queued_bytes_ <= srv_.opts.max_queued_bytes / 2;
    if (!blocked_ && over) {
      blocked_ = true;
      if (srv_.cb.on_blocked) srv_.cb.on_blocked(id_, true);
    } else if (blocked_ && under) {
      blocked_ = false;
      if (srv_.cb.on_blocked) srv_.cb.on_blocked(id_, false);
    }
  }

  http_server::impl& srv_;
  uint64_t id_;
  beast::tcp_stream stream_;
  beast::flat_buffer buf_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::string key_id_;       // what on_head bound the current request to
  bool reject_ = false;      // over the connection cap: answer 503 and close
  bool keep_alive_ = true;
  bool busy_ = false;        // a request is being answered
  bool watching_ = false;
  bool writing_ = false;
  bool blocked_ = false;
  bool closed_ = false;
  bool lingering_ = false;   // final response sent; dropping input until the client closes
  bool delivered_ = false;   // handed a request to the gateway
  std::deque<write_op> queue_;
  size_t queued_bytes_ = 0;
};

void http_server::impl::accept() {
  acceptor.async_accept([this](beast::error_code ec, tcp::socket s) {
    if (!acceptor.is_open()) return;
    if (!ec) {
      const bool reject = conns.size() >= opts.max_connections;
      const uint64_t id = next_conn++;
      auto c = std::make_shared<http_connection>(*this, id, std::move(s), reject);
      conns.emplace(id, c);
      owner->n_open_ = conns.size();
      c->start();
    }
    accept();
  });
}

void http_server::impl::closed(uint64_t id, bool delivered) {
  conns.erase(id);
  owner->n_open_ = conns.size();
  if (delivered && cb.on_closed) cb.on_closed(id);
}

template <class F>
void http_server::impl::with_conn(uint64_t id, F&& f) {
  net::post(ioc, [this, id, f = std::forward<F>(f)]() mutable {
    auto it = conns.find(id);
    if (it != conns.end()) f(*it->second);  // a closed connection drops what was posted
  });
}

expected<std::unique_ptr<http_server>> http_server::bind(const http_server_options& opts) {
  std::unique_ptr<http_server> s(new http_server());
  s->impl_ = std::make_unique<impl>();
  s->impl_->owner = s.get();
  s->impl_->opts = opts;
  const std::string where = opts.host + ":" + std::to_string(opts.port);
  beast::error_code ec;
  tcp::resolver resolver(s->impl_->ioc);
  auto results = resolver.resolve(opts.host, std::to_string(opts.port), tcp::resolver::passive, ec);
  if (ec || results.empty()) return fail(errc::invalid_param, "cannot resolve HTTP address " + where + ": " + ec.message());
  const tcp::endpoint ep = *results.begin();
  auto& acc = s->impl_->acceptor;
  acc.open(ep.protocol(), ec);
  if (!ec) acc.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acc.bind(ep, ec);
  if (!ec) acc.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return fail(errc::invalid_param, "cannot listen for HTTP on " + where + ": " + ec.message() + " (use --http HOST:PORT, or --http off)");
  s->port_ = acc.local_endpoint().port();
  s->host_ = opts.host;
  return s;
}

std::string http_server::address() const { return host_ + ":" + std::to_string(port_); }

void http_server::start(callbacks cb) {
  impl_->cb = std::move(cb);
  impl_->accept();
  io_ = std::thread([this] { impl_->ioc.run(); });
}

void http_server::respond(uint64_t conn, http_response_out r) {
  impl_->with_conn(conn, [r = std::move(r)](http_connection& c) mutable { c.respond(std::move(r)); });
}

void http_server::stream_begin(uint64_t conn, int status, std::string content_type, http_header_list headers) {
  impl_->with_conn(conn, [status, ct = std::move(content_type), h = std::move(headers)](http_connection& c) {
    c.stream_begin(status, ct, h);
  });
}

void http_server::stream_write(uint64_t conn, std::string data) {
  impl_->with_conn(conn, [d = std::move(data)](http_connection& c) mutable { c.stream_write(std::move(d)); });
}

void http_server::stream_end(uint64_t conn) {
  impl_->with_conn(conn, [](http_connection& c) { c.stream_end(); });
}

void http_server::stop() {
  if (stopped_) return;
  stopped_ = true;
  if (io_.joinable()) {
    net::post(impl_->ioc, [this] {
      beast::error_code ec;
      impl_->acceptor.close(ec);
      auto conns = impl_->conns;  // close() erases from the map
      for (auto& [id, c] : conns) c->close();
    });
    impl_->work.reset();
    io_.join();
  }
}

http_server::~http_server() { stop(); }

}  // namespace cortex
