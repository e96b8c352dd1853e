#include "actors/scheduler/scheduling_policy.hpp"

namespace cortex {

double scheduling_policy::effective_priority(const sequence& s, uint64_t step_now) const {
  const uint64_t waited = step_now > s.step_arrived ? step_now - s.step_arrived : 0;
  return static_cast<double>(s.priority) + aging_per_step_ * static_cast<double>(waited);
}

bool scheduling_policy::goes_before(const sequence& a, const sequence& b, uint64_t step_now) const {
  const double pa = effective_priority(a, step_now);
  const double pb = effective_priority(b, step_now);
  if (pa != pb) return pa > pb;
  return a.arrival < b.arrival;
}

bool scheduling_policy::preempted_before(const sequence& a, const sequence& b, uint64_t step_now) const {
  const double pa = effective_priority(a, step_now);
  const double pb = effective_priority(b, step_now);
  if (pa != pb) return pa < pb;
  if (a.n_tokens_computed != b.n_tokens_computed) return a.n_tokens_computed < b.n_tokens_computed;
  return a.arrival > b.arrival;
}

}  // namespace cortex
