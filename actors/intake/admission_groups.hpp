// Access-control admission at intake (auth.md "Limits"), for single requests
// and for groups: the engine sequences of one client request (an HTTP chat
// with n > 1 choices, an embeddings call with several inputs) are one
// request to the key's tier. The group's first member is admitted for all
// of them: one request token, one concurrency slot, and for choices (which
// share the prompt and max_tokens) prompt + n * max_tokens; embedding inputs
// that follow add their own prompt tokens to the admitted request. When the
// first member is refused, later members get the same refusal, so a refused
// request consumes nothing. CAF-free; used by the intake actor only (not
// thread-safe; the tickets are).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "actors/auth/access_policy.hpp"
#include "messages/request.hpp"

namespace cortex {

class admission_groups {
 public:
  explicit admission_groups(std::shared_ptr<auth::access_policy> policy) : policy_(std::move(policy)) {}

  // Admits `req` (validated: `prompt_tokens` tokenized, `max_tokens` capped
  // to the context) or says why not. A later member of an admitted group
  // gets the group's ticket.
  auth::access_policy::admit_result admit(const generation_request& req, uint32_t prompt_tokens, uint32_t max_tokens);

  // The member admitted by admit() was refused afterwards (the server's own
  // queue): a first member's admission is undone and the group refused with
  // `err`; a later member simply did not join.
  void undo(const generation_request& req, const std::shared_ptr<auth::admission_ticket>& ticket, const status& err);

  // No member of `group` comes any more (its client request ended): its
  // ticket is released once its running members end.
  void close(const std::string& group);

  size_t n_open() const { return groups_.size(); }

 private:
  struct entry {
    std::shared_ptr<auth::admission_ticket> ticket;  // null: refused with `refusal`
    status refusal;
    uint32_t seen = 0;  // members that came
    uint32_t size = 0;
  };
  void seen_one(std::unordered_map<std::string, entry>::iterator it);

  std::shared_ptr<auth::access_policy> policy_;
  std::unordered_map<std::string, entry> groups_;
};

}  // namespace cortex
