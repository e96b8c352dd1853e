#include "messages/errors.hpp"

namespace cortex {

uint16_t errc_code(errc e) {
  switch (e) {
    case errc::malformed: case errc::invalid_param: case errc::unknown_type: return 400;
    case errc::unknown_model: return 404;
    case errc::duplicate_id: return 409;
    case errc::too_large: return 413;
    case errc::context_overflow: return 422;
    case errc::overloaded: return 429;
    case errc::internal: return 500;
    case errc::unsupported: return 501;
    case errc::not_ready: case errc::draining: return 503;
    case errc::unsupported_version: return 505;
    case errc::unauthenticated: return 401;
    case errc::forbidden: return 403;
    case errc::rate_limited: return 429;
    case errc::worker_lost: return 503;
  }
  return 500;
}

const char* errc_name(errc e) {
  switch (e) {
    case errc::malformed: return "malformed";
    case errc::invalid_param: return "invalid_param";
    case errc::unknown_type: return "unknown_type";
    case errc::unknown_model: return "unknown_model";
    case errc::duplicate_id: return "duplicate_id";
    case errc::too_large: return "too_large";
    case errc::context_overflow: return "context_overflow";
    case errc::overloaded: return "overloaded";
    case errc::internal: return "internal";
    case errc::unsupported: return "unsupported";
    case errc::not_ready: return "not_ready";
    case errc::draining: return "draining";
    case errc::unsupported_version: return "unsupported_version";
    case errc::unauthenticated: return "unauthenticated";
    case errc::forbidden: return "forbidden";
    case errc::rate_limited: return "rate_limited";
    case errc::worker_lost: return "worker_lost";
  }
  return "internal";
}

bool errc_retryable(errc e) { return e == errc::overloaded || e == errc::rate_limited || e == errc::not_ready || e == errc::draining ||
                                  e == errc::worker_lost; }

}  // namespace cortex
