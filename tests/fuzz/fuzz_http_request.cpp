// Fuzz target: the HTTP request path up to the intake boundary, without
// sockets or CAF. Byte 0 picks the input's shape:
//   0 mod 4: raw bytes on a connection: Beast's request parser with the
//            server's limits (http_server.cpp: 64 KiB head, 8 MiB body),
//            then what the gateway does with a complete request: the route
//            (http_routes.hpp), the head check (auth's check_bearer on the
//            Authorization header), and for the OpenAI endpoints the body
//            (parse_openai_request), also for every pipelined request;
//   1, 2, 3:  the rest is a JSON body for /v1/chat/completions,
//            /v1/completions, /v1/embeddings (parse_openai_request); /v1/rerank
//            through mode 0's routes.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>

#include "actors/auth/credentials.hpp"
#include "actors/http_gateway/http_routes.hpp"
#include "actors/http_gateway/openai_request.hpp"
#include "tests/fuzz/fixed_policy.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace cortex;
namespace bhttp = boost::beast::http;

namespace {

constexpr size_t header_limit_bytes = 64 << 10;  // as http_server.cpp
constexpr size_t max_body_bytes = 8 << 20;       // http_server_options' default

const http::openai_limits& limits() {
  static const http::openai_limits l = [] {
    http::openai_limits x;
    x.model_name = "stories260K";
    x.n_embd = 64;
    return x;
  }();
  return l;
}

void parse_body(http::openai_endpoint ep, const std::string& body) {
  const auto r = http::parse_openai_request(ep, body, limits());
  if (!r.ok()) {
    FUZZ_CHECK(!r.error.report.message.empty());
    return;
  }
  if (ep == http::openai_endpoint::embeddings || ep == http::openai_endpoint::rerank) {
    FUZZ_CHECK(!r.request.inputs.empty() && r.request.inputs.size() <= limits().max_embedding_inputs);
    if (ep == http::openai_endpoint::rerank) FUZZ_CHECK(r.request.top_n >= 1 && r.request.top_n <= r.request.inputs.size());
  } else {
    FUZZ_CHECK(r.request.n >= 1 && r.request.n <= limits().max_n);
    FUZZ_CHECK(http::choice_requests(r.request).size() == r.request.n);
  }
}

void handle(const bhttp::request<bhttp::string_body>& req) {
  const std::string method(req.method_string()), target(req.target());
  const auto route = http::classify_http_route(method, target);
  (void)auth::check_bearer(fuzz::fixed_policy(), std::string(req[bhttp::field::authorization]));
  switch (route.kind) {
    case http::http_route_kind::chat_completions: return parse_body(http::openai_endpoint::chat_completions, req.body());
    case http::http_route_kind::completions: return parse_body(http::openai_endpoint::completions, req.body());
    case http::http_route_kind::embeddings: return parse_body(http::openai_endpoint::embeddings, req.body());
    case http::http_route_kind::rerank: return parse_body(http::openai_endpoint::rerank, req.body());
    default: return;
  }
}

// Requests on one connection, as http_server.cpp reads them: one parser
// per request, the bytes after a complete request start the next one.
void parse_connection(const uint8_t* data, size_t size) {
  for (int n_requests = 0; size > 0 && n_requests < 16; ++n_requests) {
    bhttp::request_parser<bhttp::string_body> parser;
    parser.eager(true);
    parser.body_limit(max_body_bytes);
    parser.header_limit(header_limit_bytes);
    boost::beast::error_code ec;
    size_t used = 0;
    while (used < size && !parser.is_done()) {
      const size_t n = parser.put(boost::asio::buffer(data + used, size - used), ec);
      if (ec == bhttp::error::need_more) ec = {};
      if (ec) return;
      if (n == 0) break;
      used += n;
    }
    if (!parser.is_done()) {
      parser.put_eof(ec);
      if (ec || !parser.is_done()) return;
    }
    handle(parser.get());
    data += used;
    size -= used;
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)limits();
  (void)fuzz::fixed_policy();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0] % 4;
  ++data;
  --size;
  switch (mode) {
    case 0: parse_connection(data, size); break;
    case 1: parse_body(http::openai_endpoint::chat_completions, std::string(reinterpret_cast<const char*>(data), size)); break;
    case 2: parse_body(http::openai_endpoint::completions, std::string(reinterpret_cast<const char*>(data), size)); break;
    case 3: parse_body(http::openai_endpoint::embeddings, std::string(reinterpret_cast<const char*>(data), size)); break;
  }
  return 0;
}
