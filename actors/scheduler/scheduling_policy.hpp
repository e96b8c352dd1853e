// The orderings the scheduler decides with: who runs first, who is admitted
// first, who is preempted first. Priority ages: every step a sequence has
// spent since its arrival adds aging_per_step to its priority, so a low
// priority request cannot wait forever behind a stream of higher ones, and
// once aged it is not the first to be preempted either.
#pragma once

#include <cstdint>

#include "actors/scheduler/sequence.hpp"

namespace cortex {

class scheduling_policy {
 public:
  // REQUIRES: aging_per_step >= 0 (0 disables aging).
  explicit scheduling_policy(double aging_per_step) : aging_per_step_(aging_per_step) {}

  double effective_priority(const sequence& s, uint64_t step_now) const;

  // Run and admission order: higher effective priority, then earlier arrival.
  // A strict weak ordering; ties are impossible (arrivals are unique).
  bool goes_before(const sequence& a, const sequence& b, uint64_t step_now) const;

  // Preemption order: lower effective priority, then less progress
  // (n_tokens_computed), then later arrival. True if a is preempted before b.
  bool preempted_before(const sequence& a, const sequence& b, uint64_t step_now) const;

 private:
  double aging_per_step_;
};

}  // namespace cortex
