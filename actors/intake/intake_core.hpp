// Intake's admission pipeline, with no CAF in it: one submit in, either an
// admitted request (its id, what the scheduler and the session get) or the
// rejection its client receives. The intake actor calls admit() once per
// submit and only spawns, sends and logs.
//
// The order of the checks is the order of what they cost and what they
// consume: draining first (nothing is read), then the API key (401), the
// validator (tokenizes, renders chat; 400 / 413 / 422), the key's tier (403,
// 429 rate_limited: consumes its tokens), and last the server's waiting
// queue (429 overloaded), which undoes the tier's charge when it refuses:
// a refused request consumes nothing.
//
// Not thread-safe: one owner (the intake actor). The tokenizer, the chat
// setup and the access policy must outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "actors/auth/access_policy.hpp"
#include "actors/intake/admission_groups.hpp"
#include "actors/intake/request_validator.hpp"
#include "messages/engine.hpp"
#include "messages/errors.hpp"
#include "messages/request.hpp"

namespace cortex {

struct intake_config {
  validation_limits limits;      // n_ctx: positions one request may use
  uint32_t max_waiting = 256;
  uint64_t max_queued_tokens = 262144;
  uint64_t seed = 0;             // for seeds of requests without one (0: from the clock)
  std::shared_ptr<const chat_setup> chat;  // renders `messages`; null: such requests are 501
  std::shared_ptr<auth::access_policy> access;  // null: access control off (see runtime_config)
  request_id fault_session_crash_rid = 0;  // injected fault (fault_plan.hpp): this request's session throws; 0: off
};

// An admitted request: what the scheduler and the session are given.
struct intake_admission {
  request_id rid = 0;                 // the server's id, 1, 2, ...
  uint32_t n_tokens_prompt = 0;
  uint32_t queue_pos = 0;             // admitted requests waiting before it
  sequence_admission sequence;        // for the scheduler: prompt tokens, resolved params and seed
  // For the session: the request as submitted, with its params resolved as
  // the scheduler's (max_tokens capped to the context, json_schema turned
  // into `grammar`, the chat template's end-of-turn tokens among the stop
  // tokens) and the chat output spec set.
  generation_request request;
  std::shared_ptr<auth::admission_ticket> ticket;  // with access control: released when the request ends
};

struct intake_decision {
  intake_admission admitted;  // when ok()
  status error;         // ok() when admitted
  bool ok() const { return error.is_ok(); }
};

class intake_core {
 public:
  // `tok` must outlive the core (the model owns it).
  intake_core(const intake_config& cfg, const tokenizer& tok);

  // Admits `req` or says why not (see above). An admitted request holds its
  // place in the waiting queue until release().
  intake_decision admit(generation_request req);
  // The request of `n_tokens_prompt` tokens left the waiting queue (it
  // started, or ended before it did).
  void release(uint32_t n_tokens_prompt) { admission_.release(n_tokens_prompt); }
  // Every member of an admission group has ended (access control).
  void close_group(const std::string& group);
  // From now on every submit is 503 draining.
  void drain() { draining_ = true; }
  bool draining() const { return draining_; }
  uint32_t n_waiting() const { return admission_.n_waiting(); }

 private:
  // The tier's cap bounds the default max_tokens (an explicit larger ask is
  // the tier's 403 at admission).
  void apply_tier_defaults(generation_request& req) const;

  std::shared_ptr<const chat_setup> chat_;
  std::shared_ptr<auth::access_policy> access_;
  request_validator validator_;
  admission_limits admission_;
  std::unique_ptr<admission_groups> groups_;  // with access control
  request_id next_rid_ = 1;
  bool draining_ = false;
};

}  // namespace cortex
