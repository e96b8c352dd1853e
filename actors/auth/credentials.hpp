// Turning what a client presents into a key id, the same way on every
// gateway (auth.md "Credentials per gateway"), and logging refusals without
// letting a flood of bad attempts flood the log. CAF-free.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "actors/auth/access_policy.hpp"
#include "messages/errors.hpp"

namespace cortex::auth {

// The credentials of one request: a key id, or the 401 to answer.
struct credential_check {
  std::string key_id;  // when ok
  status error;  // ok() when authenticated
  bool ok() const { return error.is_ok(); }
};

// Whether an error is an access-control refusal (401, 403, 429 rate_limited).
inline bool is_access_refusal(errc e) {
  return e == errc::unauthenticated || e == errc::forbidden || e == errc::rate_limited;
}

// The token of an `Authorization: Bearer <token>` header (scheme
// case-insensitive, surrounding blanks ignored); nullopt for any other shape.
std::optional<std::string_view> bearer_token(std::string_view header);

// HTTP: the Authorization header as sent ("" when absent).
credential_check check_bearer(const access_policy& policy, std::string_view authorization);

// ZeroMQ without CURVE: the submit's `auth` field ("" when absent).
credential_check check_auth_field(const access_policy& policy, std::string_view secret);

// Logs refused attempts (warn level) with the key id or "unknown" and the
// peer address: a token bucket of `lines_per_minute` (a burst of that many,
// then one per 60 / lines_per_minute seconds); the lines left out are
// counted and reported with the next one logged. Thread-safe. Never give it
// a secret.
class refusal_log {
 public:
  explicit refusal_log(std::string gateway, double lines_per_minute = 60);
  void refused(std::string_view key_id, std::string_view peer, const status& e);

 private:
  std::string gateway_;
  std::mutex mu_;
  token_bucket bucket_;
  uint64_t suppressed_ = 0;
};

}  // namespace cortex::auth
