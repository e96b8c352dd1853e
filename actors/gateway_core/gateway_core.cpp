#include "actors/gateway_core/gateway_core.hpp"

namespace cortex {

void merge_chunk(request_chunk& into, request_chunk&& next) {
  into.text += next.text;
  into.token_ids.insert(into.token_ids.end(), next.token_ids.begin(), next.token_ids.end());
  into.logprobs.insert(into.logprobs.end(), std::make_move_iterator(next.logprobs.begin()),
                       std::make_move_iterator(next.logprobs.end()));
}

size_t pending_bytes(const request_chunk& c) { return c.text.size() + c.token_ids.size() * 4; }

}  // namespace cortex
