#include "bench/load/http_transport.hpp"

#include <array>
#include <deque>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace cortex::load {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = net::ip::tcp;
using json = nlohmann::json;

namespace {

// One stream's connection and the request in progress on it. A request
// submitted while the previous response is still being read (its final
// chunk after [DONE], or Poisson arrivals faster than the stream) waits in
// `next`: one request at a time per connection, as HTTP/1.1 clients do.
struct http_stream {
  explicit http_stream(net::io_context& ioc) : sock(ioc) {}
  beast::tcp_stream sock;
  beast::flat_buffer buf;
  bool open = false;
  bool reused = false;    // a response completed on this connection: the server may have closed it since
  bool busy = false;      // a request is in progress
  bool got_head = false;  // its response head arrived
  bool retried = false;
  int request = -1;
  std::string body;       // the request body
  std::deque<planned_request> next;
  bhttp::request<bhttp::string_body> req;
  std::optional<bhttp::response_parser<bhttp::buffer_body>> parser;
  std::array<char, 16384> chunk{};
  std::optional<completion_stream_reader> reader;  // a 200 response
  std::string error_body;                          // any other
};

std::string request_body(const planned_request& r, bool logprobs, completion_format format) {
  if (format == completion_format::llama_server) {
    return json({{"prompt", r.tokens},
                 {"n_predict", r.max_tokens},
                 {"temperature", 0.0},
                 {"ignore_eos", true},
                 {"stream", true}})
        .dump();
  }
  json body = {{"prompt", r.tokens},
               {"max_tokens", r.max_tokens},
               {"temperature", 0.0},
               {"ignore_eos", true},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  if (logprobs) body["logprobs"] = 0;
  return body.dump();
}

}  // namespace

struct http_transport::impl {
  net::io_context ioc{1};
  net::executor_work_guard<net::io_context::executor_type> work{ioc.get_executor()};  // run_one_until waits, even idle
  tcp::resolver::results_type endpoints;
  std::string host;  // the Host header
  std::string model;
  bool logprobs = false;
  completion_format format = completion_format::openai;
  std::vector<std::unique_ptr<http_stream>> streams;
  std::vector<load_event> events;  // produced by handlers, handed out by poll

  void start(http_stream& s) {
    if (s.open) return send(s);
    s.sock.async_connect(endpoints, [this, &s](beast::error_code ec, const tcp::endpoint&) {
      if (ec) return fail(s, "connect_failed");
      s.open = true;
      beast::error_code ignored;
      s.sock.socket().set_option(tcp::no_delay(true), ignored);  // as ZeroMQ does: small requests go at once
      send(s);
    });
  }

  void send(http_stream& s) {
    s.req = {bhttp::verb::post, format == completion_format::llama_server ? "/completion" : "/v1/completions", 11};
    s.req.set(bhttp::field::host, host);
    s.req.set(bhttp::field::content_type, "application/json");
    s.req.set(bhttp::field::accept, "text/event-stream");
    s.req.keep_alive(true);
    s.req.body() = s.body;
    s.req.prepare_payload();
    bhttp::async_write(s.sock, s.req, [this, &s](beast::error_code ec, size_t) {
      if (ec) return retry_or_fail(s);
      read_head(s);
    });
  }

  void read_head(http_stream& s) {
    s.parser.emplace();
    s.parser->body_limit(std::numeric_limits<std::uint64_t>::max());
    bhttp::async_read_header(s.sock, s.buf, *s.parser, [this, &s](beast::error_code ec, size_t) {
      if (ec) return retry_or_fail(s);
      s.got_head = true;
      if (s.parser->get().result_int() == 200) s.reader.emplace(s.request, format);
      read_body(s);
    });
  }

  void read_body(http_stream& s) {
    if (s.parser->is_done()) return complete(s);
    auto& b = s.parser->get().body();
    b.data = s.chunk.data();
    b.size = s.chunk.size();
    bhttp::async_read_some(s.sock, s.buf, *s.parser, [this, &s](beast::error_code ec, size_t) {
      if (ec == bhttp::error::need_buffer) ec = {};  // the chunk buffer is full: hand it over, read on
      if (ec) return fail(s, "connection_lost");
      const auto at = load_clock::now();
      const size_t n = s.chunk.size() - s.parser->get().body().size;
      if (s.reader) {
        s.reader->feed(std::string_view(s.chunk.data(), n), at, events);
      } else {
        s.error_body.append(s.chunk.data(), n);
      }
      read_body(s);
    });
  }

  // The response is complete: an error event unless it was a whole stream.
  void complete(http_stream& s) {
    const int status = s.parser->get().result_int();
    if (status != 200) {
      const json j = json::parse(s.error_body, nullptr, false);
      std::string name = "http_" + std::to_string(status);
      if (j.is_object() && j.contains("error")) name = error_name(j["error"], name);
      push_error(s.request, status, name);
    } else if (!s.reader->done()) {
      push_error(s.request, 0, "incomplete_stream");
    }
    const bool keep = s.parser->keep_alive();
    s.reused = true;
    finish(s, keep);
  }

  // A connection the server closed while idle (keep-alive timeout) fails
  // the next request before any byte of a response: reconnect once.
  void retry_or_fail(http_stream& s) {
    if (s.reused && !s.got_head && !s.retried) {
      s.retried = true;
      close(s);
      s.reused = false;
      return start(s);
    }
    fail(s, s.got_head ? "connection_lost" : "no_response");
  }

  void fail(http_stream& s, const std::string& name) {
    push_error(s.request, 0, name);
    finish(s, false);
  }

  void push_error(int request, int code, const std::string& name) {
    load_event e;
    e.request = request;
    e.what = load_event::kind::error;
    e.at = load_clock::now();
    e.error_code = code;
    e.error_name = name;
    events.push_back(std::move(e));
  }

  // The request is over; the connection stays open when `keep`. Starts the
  // request that waited for it, if any.
  void finish(http_stream& s, bool keep) {
    if (!keep) close(s);
    s.busy = false;
    s.reader.reset();
    s.parser.reset();
    s.error_body.clear();
    if (!s.next.empty()) {
      planned_request r = std::move(s.next.front());
      s.next.pop_front();
      begin(s, r);
    }
  }

  void begin(http_stream& s, const planned_request& r) {
    s.busy = true;
    s.got_head = false;
    s.retried = false;
    s.request = r.index;
    s.body = request_body(r, logprobs, format);
    start(s);
  }

  void close(http_stream& s) {
    beast::error_code ec;
    s.sock.socket().shutdown(tcp::socket::shutdown_both, ec);
    s.sock.close();
    s.open = false;
    s.reused = false;
    s.buf.clear();
  }

  // GET `target` on a connection of its own, within `timeout`: (status, body).
  expected<std::pair<int, std::string>> get(const std::string& target, std::chrono::milliseconds timeout) {
    beast::tcp_stream st(ioc);
    beast::flat_buffer buf;
    bhttp::request<bhttp::empty_body> req{bhttp::verb::get, target, 11};
    req.set(bhttp::field::host, host);
    req.keep_alive(false);
    bhttp::response<bhttp::string_body> res;
    beast::error_code result;
    bool done = false;
    st.expires_after(timeout);  // bounds every step below
    st.async_connect(endpoints, [&](beast::error_code ec, const tcp::endpoint&) {
      if (ec) {
        done = true;
        result = ec;
        return;
      }
      bhttp::async_write(st, req, [&](beast::error_code ec, size_t) {
        if (ec) {
          done = true;
          result = ec;
          return;
        }
        bhttp::async_read(st, buf, res, [&](beast::error_code ec, size_t) {
          done = true;
          result = ec;
        });
      });
    });
    while (!done) ioc.run_one();
    if (result) return cortex::fail(errc::internal, "GET " + target + ": " + result.message());
    return std::make_pair(int(res.result_int()), std::move(res.body()));
  }
};

expected<std::unique_ptr<http_transport>> http_transport::connect(const std::string& url, int n_streams,
                                                                  double ready_timeout_s, bool logprobs,
                                                                  completion_format format) {
  const std::string scheme = "http://";
  std::string rest = url.compare(0, scheme.size(), scheme) == 0 ? url.substr(scheme.size()) : "";
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  const size_t colon = rest.rfind(':');
  if (rest.empty() || colon == std::string::npos || colon == 0 || colon + 1 == rest.size() ||
      rest.find('/') != std::string::npos) {
    return fail(errc::invalid_param, "--http '" + url + "': expected http://HOST:PORT (no path; https is not supported)");
  }
  std::string host = rest.substr(0, colon);
  const std::string port = rest.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);

  std::unique_ptr<http_transport> t(new http_transport());
  t->impl_ = std::make_unique<impl>();
  impl& im = *t->impl_;
  im.host = rest;
  im.logprobs = logprobs;
  im.format = format;
  beast::error_code ec;
  im.endpoints = tcp::resolver(im.ioc).resolve(host, port, ec);
  if (ec) return fail(errc::invalid_param, "cannot resolve '" + rest + "': " + ec.message());
  for (int i = 0; i < n_streams; ++i) im.streams.push_back(std::make_unique<http_stream>(im.ioc));

  // Both servers listen before they load the model: wait for readiness.
  const bool llama = format == completion_format::llama_server;
  const std::string health = llama ? "/health" : "/health/ready";
  const auto until = load_clock::now() + std::chrono::duration<double>(ready_timeout_s);
  std::string last = "no reply";
  for (;;) {
    auto h = im.get(health, std::chrono::milliseconds(1000));
    if (h && h->first == 200) break;
    last = h ? "GET " + health + " answered " + std::to_string(h->first) : h.error().message;
    if (load_clock::now() >= until) {
      return cortex::fail(errc::not_ready, "server at '" + url + "' not ready within " + std::to_string(int(ready_timeout_s)) + " s (" +
                        last + "); is " + (llama ? "llama-server" : "cortexd") + " serving HTTP there?");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // polling readiness, bounded by `until`
  }
  auto m = im.get("/v1/models", std::chrono::milliseconds(5000));
  if (!m) return m.error();
  const json list = json::parse(m->second, nullptr, false);
  if (m->first != 200 || !list.is_object() || !list.contains("data") || !list["data"].is_array() || list["data"].empty() ||
      !list["data"][0].is_object()) {
    return cortex::fail(errc::internal, "GET /v1/models answered " + std::to_string(m->first) + " without a model: " + m->second);
  }
  im.model = list["data"][0].value("id", "");
  return t;
}

http_transport::~http_transport() {
  if (!impl_) return;
  for (auto& s : impl_->streams) {
    if (s->open) impl_->close(*s);
  }
}

const std::string& http_transport::model_id() const { return impl_->model; }

void http_transport::submit(const planned_request& r) {
  http_stream& s = *impl_->streams[size_t(r.stream)];
  if (s.busy) {
    s.next.push_back(r);  // the stream's previous response is still being read to its end
    return;
  }
  impl_->begin(s, r);
}

void http_transport::poll(std::vector<load_event>& out, std::chrono::milliseconds timeout) {
  auto& im = *impl_;
  const auto until = load_clock::now() + timeout;
  while (im.events.empty() && im.ioc.run_one_until(until) > 0) {
  }
  im.ioc.poll();
  out.insert(out.end(), std::make_move_iterator(im.events.begin()), std::make_move_iterator(im.events.end()));
  im.events.clear();
}

}  // namespace cortex::load
