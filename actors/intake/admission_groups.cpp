#include "actors/intake/admission_groups.hpp"

namespace cortex {

void admission_groups::seen_one(std::unordered_map<std::string, entry>::iterator it) {
  if (++it->second.seen < it->second.size) return;
  if (it->second.ticket) it->second.ticket->close_group();
  groups_.erase(it);
}

auth::access_policy::admit_result admission_groups::admit(const generation_request& req, uint32_t prompt_tokens,
                                                          uint32_t max_tokens) {
  const bool grouped = !req.admission_group.empty() && req.group_size > 1;
  const bool embed = req.kind == request_kind::embed;
  if (grouped) {
    auto it = groups_.find(req.admission_group);
    if (it != groups_.end()) {  // a later member
      auth::access_policy::admit_result r;
      r.error = it->second.refusal;
      r.ticket = it->second.ticket;
      if (r.ticket) r.ticket->join(embed ? prompt_tokens : 0);  // choices share the first's prompt, prepaid
      seen_one(it);
      return r;
    }
  }
  // An embedding generates nothing: only its prompt is charged; choices are
  // charged their max_tokens once each.
  const uint32_t n_choices = grouped && !embed ? req.group_size : 1;
  const uint64_t charged_max = embed ? 0 : uint64_t(max_tokens) * n_choices;
  auth::admission_request ar{req.key_id, prompt_tokens, static_cast<uint32_t>(std::min<uint64_t>(charged_max, UINT32_MAX)),
                             req.params.max_tokens_given ? req.params.max_tokens : 0, req.priority};
  auto r = policy_->admit(ar, grouped);
  if (grouped) {
    entry e;
    e.ticket = r.ticket;
    e.refusal = r.error;
    e.size = req.group_size;
    seen_one(groups_.emplace(req.admission_group, std::move(e)).first);
  }
  return r;
}

void admission_groups::undo(const generation_request& req, const std::shared_ptr<auth::admission_ticket>& ticket,
                            const status& err) {
  if (!ticket) return;
  auto it = req.admission_group.empty() ? groups_.end() : groups_.find(req.admission_group);
  if (it == groups_.end() || it->second.seen <= 1) {  // the first member: nothing was joined yet
    ticket->revert();
    if (it != groups_.end()) {
      it->second.ticket = nullptr;
      it->second.refusal = err;
    }
    return;
  }
  ticket->finish(0);  // a later member that never ran
}

void admission_groups::close(const std::string& group) {
  auto it = groups_.find(group);
  if (it == groups_.end()) return;
  if (it->second.ticket) it->second.ticket->close_group();
  groups_.erase(it);
}

}  // namespace cortex
