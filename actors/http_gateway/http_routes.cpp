#include "actors/http_gateway/http_routes.hpp"

#include <cctype>

namespace cortex::http {

namespace {

std::string percent_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

http_route_match classify_http_route(const std::string& method, const std::string& target) {
  std::string path = target.substr(0, target.find('?'));
  if (path.size() > 1 && path.back() == '/') path.pop_back();
  struct fixed {
    const char* path;
    const char* method;
    http_route_kind kind;
  };
  static const fixed table[] = {
      {"/v1/chat/completions", "POST", http_route_kind::chat_completions},
      {"/v1/completions", "POST", http_route_kind::completions},
      {"/v1/embeddings", "POST", http_route_kind::embeddings},
      {"/v1/rerank", "POST", http_route_kind::rerank},
      {"/rerank", "POST", http_route_kind::rerank},  // llama-server's and TEI-style clients' path
      {"/v1/responses", "POST", http_route_kind::responses},
      {"/v1/messages", "POST", http_route_kind::messages},
      {"/v1/messages/count_tokens", "POST", http_route_kind::messages_count_tokens},
      {"/v1/models", "GET", http_route_kind::models},
      {"/health/live", "GET", http_route_kind::health_live},
      {"/health/ready", "GET", http_route_kind::health_ready},
      {"/health/startup", "GET", http_route_kind::health_startup},
      {"/metrics", "GET", http_route_kind::metrics},
  };
  for (const auto& f : table) {
    if (path != f.path) continue;
    return {method == f.method || (method == "HEAD" && std::string(f.method) == "GET") ? f.kind : http_route_kind::wrong_method, {}};
  }
  static const std::string models_prefix = "/v1/models/";
  if (path.compare(0, models_prefix.size(), models_prefix) == 0 && path.size() > models_prefix.size()) {
    if (method != "GET") return {http_route_kind::wrong_method, {}};
    return {http_route_kind::model, percent_decode(path.substr(models_prefix.size()))};
  }
  return {http_route_kind::unknown, {}};
}

}  // namespace cortex::http
