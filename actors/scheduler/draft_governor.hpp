// How many drafted tokens a sequence should verify this step, so that
// speculative decoding turns itself down where it does not pay (a model
// whose outputs do not repeat, or one so small that verifying 1 + k tokens
// costs far more than decoding 1). No CAF.
//
// Each sequence keeps an estimate of the chance that a drafted token is
// accepted given that the ones before it were (decayed counts of accepted
// and rejected drafts, prior 1:1). With acceptance a, verifying k drafts
// yields 1 + a + a^2 + ... + a^k tokens on average, at cost_ratio(k) = the
// predicted time of a step carrying 1 + k tokens for the sequence over one
// carrying 1 (the scheduler's step cost model). The governor picks the k
// in [0, n_max] with the best tokens per unit of time, and drafts only when
// that beats plain decoding by `min_gain`. A sequence that stopped drafting
// probes again every `probe_every` decode steps with a short draft, so the
// estimate can recover when its text starts to repeat.
//
// Thread: one owner (the scheduler core).
#pragma once

#include <cstdint>
#include <functional>

namespace cortex {

struct draft_governor_config {
  double min_gain = 1.05;      // expected speed-up over plain decode needed to draft
  double decay = 0.9;          // weight of past counts per verified draft
  int32_t probe_every = 32;    // decode steps without a draft before a probe
  int32_t probe_length = 2;    // tokens a probe drafts at most
};

// A sequence's acceptance record.
struct draft_record {
  double accepted = 1.0;   // decayed count of accepted drafted tokens (prior 1)
  double rejected = 1.0;   // decayed count of rejections (prior 1)
  int32_t steps_without_draft = 0;
  double acceptance() const { return accepted / (accepted + rejected); }
};

// cost_ratio(k): predicted cost of verifying 1 + k tokens over decoding 1
// (>= 1, non-decreasing in k); null when no prediction is available yet,
// in which case the prior decides with every extra token costing
// `fallback_token_cost` of a step.
using draft_cost_fn = std::function<double(int32_t k)>;

// The draft length to use now: 0 (decode plainly) to n_max.
int32_t choose_draft_length(const draft_record& r, int32_t n_max, const draft_cost_fn& cost_ratio,
                            const draft_governor_config& cfg = {});

// Records a verified draft of n_drafted tokens of which n_accepted were
// accepted (a prefix), or a decode step without a draft (n_drafted == 0).
void record_draft(draft_record& r, int32_t n_drafted, int32_t n_accepted, const draft_governor_config& cfg = {});

}  // namespace cortex
