#include "actors/http_gateway/openai_error.hpp"

#include <nlohmann/json.hpp>

#include "actors/http_gateway/openai_json.hpp"

namespace cortex::http {

uint16_t openai_http_status(errc code) {
  if (code == errc::context_overflow) return 400;
  const uint16_t s = errc_code(code);
  return s >= 400 && s <= 599 ? s : 500;
}

const char* openai_error_type(uint16_t status) {
  switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 429: return "rate_limit_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

std::string openai_error_body(const status& e, std::string_view param) {
  const uint16_t status = openai_http_status(e.code);
  nlohmann::ordered_json err = {{"message", e.message},
                        {"type", openai_error_type(status)},
                        {"param", nullptr},
                        {"code", e.code == errc::context_overflow ? "context_length_exceeded" : errc_name(e.code)}};
  if (!param.empty()) err["param"] = std::string(param);
  return dump_json(nlohmann::ordered_json{{"error", std::move(err)}});
}

openai_error_response make_openai_error(const status& e, std::string_view param) {
  openai_error_response r;
  r.status = openai_http_status(e.code);
  r.body = openai_error_body(e, param);
  if (r.status == 429 || r.status == 503) r.retry_after_s = e.retry_after_ms == 0 ? 1 : (e.retry_after_ms + 999) / 1000;
  r.authenticate = r.status == 401;
  return r;
}

std::vector<std::pair<std::string, std::string>> openai_error_response::headers() const {
  std::vector<std::pair<std::string, std::string>> h;
  if (authenticate) h.emplace_back("WWW-Authenticate", "Bearer");
  if (retry_after_s) h.emplace_back("Retry-After", std::to_string(retry_after_s));
  return h;
}

}  // namespace cortex::http
