#include "actors/http_gateway/openai_json.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace cortex::http {

std::string dump_json(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }
std::string dump_json(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

double json_float(float v, double non_finite) {
  if (!std::isfinite(v)) return non_finite;
  char buf[32];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof buf - 1, v);  // shortest round trip
  *r.ptr = '\0';
  return std::strtod(buf, nullptr);
}

}  // namespace cortex::http
