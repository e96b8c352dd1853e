#include "actors/auth/credentials.hpp"

#include <cctype>

#include <spdlog/spdlog.h>

namespace cortex::auth {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

credential_check refuse(std::string msg) { return {{}, {errc::unauthenticated, std::move(msg), 0}}; }

credential_check check_secret(const access_policy& policy, std::string_view secret) {
  if (auto id = policy.authenticate_secret(secret)) return {*id, status::ok()};
  return refuse("the API key is not valid (unknown or revoked); check the key you were given");
}

}  // namespace

std::optional<std::string_view> bearer_token(std::string_view header) {
  header = trim(header);
  constexpr std::string_view scheme = "bearer";
  if (header.size() <= scheme.size()) return std::nullopt;
  for (size_t i = 0; i < scheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != scheme[i]) return std::nullopt;
  }
  if (header[scheme.size()] != ' ' && header[scheme.size()] != '\t') return std::nullopt;
  auto token = trim(header.substr(scheme.size()));
  if (token.empty() || token.find_first_of(" \t") != std::string_view::npos) return std::nullopt;
  return token;
}

credential_check check_bearer(const access_policy& policy, std::string_view authorization) {
  if (trim(authorization).empty())
    return refuse("this server requires an API key: send the header 'Authorization: Bearer <your key>'");
  auto token = bearer_token(authorization);
  if (!token) return refuse("the Authorization header must be 'Bearer <your key>'");
  return check_secret(policy, *token);
}

credential_check check_auth_field(const access_policy& policy, std::string_view secret) {
  if (secret.empty())
    return refuse("this server requires an API key: put it in the submit's `auth` field, or connect with CURVE "
                  "(auth.md)");
  return check_secret(policy, secret);
}

refusal_log::refusal_log(std::string gateway, double lines_per_minute)
    : gateway_(std::move(gateway)), bucket_(lines_per_minute, std::chrono::steady_clock::now()) {}

void refusal_log::refused(std::string_view key_id, std::string_view peer, const status& e) {
  const auto now = std::chrono::steady_clock::now();
  uint64_t skipped = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (bucket_.wait_ms(1, now) > 0) {
      ++suppressed_;
      return;
    }
    bucket_.take(1, now);
    skipped = suppressed_;
    suppressed_ = 0;
  }
  spdlog::warn("{}: refused {} from key '{}' at {}: {}{}", gateway_, errc_name(e.code), key_id.empty() ? "unknown" : key_id,
               peer.empty() ? "?" : peer, e.message,
               skipped ? " (" + std::to_string(skipped) + " more refusals not logged)" : std::string());
}

}  // namespace cortex::auth
