// A session's config: the admitted request intake starts it with (CAF-free:
// session_core, a plain class, takes it; messages/session_start.hpp has the
// actor side).
#pragma once

#include <cstdint>

#include "messages/request.hpp"

namespace cortex {

struct session_config {
  request_id rid = 0;
  // Validated by intake. REQUIRES: params.max_tokens >= 1, already capped to
  // the context; stop strings valid UTF-8.
  generation_request request;
  uint32_t n_tokens_prompt = 0;  // length of the tokenized prompt (BOS included)
  bool fault_crash = false;      // injected fault (fault_plan.hpp): the session actor throws on its first update
};

}  // namespace cortex
