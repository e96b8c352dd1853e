#include "messages/request.hpp"

#include <algorithm>

namespace cortex {

const char* finish_reason_name(finish_reason r) {
  switch (r) {
    case finish_reason::stop: return "stop";
    case finish_reason::length: return "length";
    case finish_reason::cancelled: return "cancelled";
    case finish_reason::deadline: return "deadline";
    case finish_reason::shutdown: return "shutdown";
    case finish_reason::client_gone: return "client_gone";
    case finish_reason::error: return "error";
  }
  return "error";
}

token_stop stop_by_token(const request_params& p, bool is_eog, int32_t token, uint32_t n_generated) {
  if (n_generated <= p.min_tokens) return token_stop::none;
  if (is_eog && !p.ignore_eos) return token_stop::eos;
  const auto& ids = p.stop_token_ids;
  return std::find(ids.begin(), ids.end(), token) != ids.end() ? token_stop::token : token_stop::none;
}

}  // namespace cortex
