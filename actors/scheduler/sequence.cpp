#include "actors/scheduler/sequence.hpp"

#include <algorithm>

namespace cortex {

const char* to_string(seq_state s) {
  switch (s) {
    case seq_state::waiting: return "waiting";
    case seq_state::running: return "running";
    case seq_state::preempted: return "preempted";
    case seq_state::finished: return "finished";
  }
  return "?";
}

seq_request seq_request_of(const sequence_admission& a, const spec_config& default_spec, bool recurrent) {
  seq_request req;
  req.rid = a.rid;
  req.priority = a.priority;
  req.tokens_prompt = a.tokens_prompt;
  req.max_tokens = static_cast<int32_t>(std::max<uint32_t>(1, a.params.max_tokens));
  req.embed = a.kind == request_kind::embed;
  req.spec = a.params.spec_given ? spec_config{a.params.spec_ngram, a.params.spec_max_draft} : default_spec;
  if (req.embed || a.params.max_tokens <= 1 || recurrent) req.spec = {};
  return req;
}

}  // namespace cortex
