// The scheduler's step policy, vLLM V1-style, with no CAF in it.
//
// The step loop is three calls with plain data in between:
//   plan = core.schedule();            // which tokens of which sequences
//   sampled = executor.run(plan);      // elsewhere
//   core.update(plan, sampled);        // progress, new tokens, finishes
// There are no prefill and decode phases: each sequence's computed-token
// count catches up with its known tokens. A step takes, within
// max_batch_tokens: first one decode token per running sequence, then
// prefill chunks of running sequences, then new admissions in priority
// order (with aging). When the KV cache cannot grow, the sequence ranked
// lowest by the policy is preempted: its blocks are freed and it waits to
// recompute its prompt and generated tokens.
//
// Step budget in time: the owner reports each step's measured time
// (observe_step), a step_cost_model learns what steps cost, and a step that
// carries decode tokens gets only as many prefill tokens as keep it under
// the inter-token latency target (itl_target_ms), but at least
// min_prefill_with_decode, so waiting prompts always progress. A step with
// no decode tokens takes prefill up to the token budget. Until the model is
// calibrated (and with the budget off) the static max_prefill_with_decode
// cap applies instead.
//
// finish() and cancel() take effect at step boundaries: immediately for a
// sequence outside the step in flight, at update() / abort_step() for one
// inside it. Every sequence added ends exactly once, reported through
// take_finished().
//
// Not thread-safe: one owner (the scheduler actor) calls it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "actors/kv_cache/kv_cache_manager.hpp"
#include "actors/scheduler/scheduling_policy.hpp"
#include "actors/scheduler/sequence.hpp"
#include "actors/scheduler/sched_plan.hpp"
#include "actors/scheduler/step_cost_model.hpp"
#include "base/expected.hpp"

namespace cortex {

struct scheduler_config {
  int32_t max_batch_tokens = 512;  // tokens computed per step (>= 1)
  int32_t max_running = 64;        // sequences admitted at once (>= 1)
  int32_t max_prefill_chunk = 0;   // prefill tokens of one sequence per step; 0: up to the budget
  double aging_per_step = 0.01;    // priority gained per step since arrival (>= 0)
  // Prefill tokens per step while the step also carries decode tokens; 0: up
  // to the budget. On a CPU a 512-token prefill chunk takes seconds, and every
  // decoding sequence waits for it: this bounds their inter-token latency.
  int32_t max_prefill_with_decode = 0;
  // Time budget of a step that carries decode tokens, in ms: < 0 off (the
  // static cap above only), 0 auto (twice the predicted time of the step's
  // decode tokens alone), > 0 that many ms.
  double itl_target_ms = 0;
  // Prefill tokens a step carrying decode tokens gets at least, whatever the
  // target says (when prompts are waiting): time to first token stays bounded.
  int32_t min_prefill_with_decode = 16;
  // Speculative decoding for requests that do not set params.speculative
  // (cortexd --speculative); off by default.
  spec_config speculative;
  // Drafts sized by each sequence's acceptance and the step cost model
  // (draft_governor): speculation turns itself down where it does not pay.
  // false: every draft the lookup finds, up to max_draft (tests of the mechanics).
  bool adaptive_drafts = true;
  // Encoders (hp.encoder): attention sees a sequence's whole input, so each
  // is computed in one step, whole (never chunked; it waits for a step with
  // room), and holds no K/V blocks: the executor reads the step's own rows.
  // REQUIRES then: every prompt <= max_batch_tokens (intake caps them).
  bool whole_inputs = false;
  // A recurrent model's state per running sequence (bytes; 0: none). The
  // scheduler actor then turns prefix caching and speculation off (a cached
  // prefix's K/V would not restore the state; drafts would advance it past
  // tokens that may be rejected) and counts the executor's state slots.
  uint64_t recurrent_state_bytes = 0;
};

struct scheduler_totals {
  uint64_t n_steps = 0;
  uint64_t n_preemptions = 0;
  uint64_t n_finished = 0;
  uint64_t n_tokens_computed = 0;
  uint64_t n_tokens_generated = 0;
  uint64_t n_tokens_drafted = 0;   // speculative decoding: drafts verified
  uint64_t n_tokens_accepted = 0;  // of which accepted
};

class scheduler_core {
 public:
  // `kv` is borrowed: it must outlive the core, and only the core mutates it.
  // REQUIRES: cfg fields in their stated ranges.
  scheduler_core(const scheduler_config& cfg, kv_cache_manager& kv);

  // Queues a new sequence. Fails with duplicate_id on a live id, and with
  // invalid_param on an empty prompt or max_tokens < 1.
  status add(seq_request req);

  // Plans the next step and allocates its blocks (preempting if needed).
  // Returns an empty plan when there is nothing to do or a step is still in
  // flight. The plan stays valid until update() or abort_step().
  sched_plan schedule();

  // Applies the executor's result for `plan` (the last schedule() result):
  // advances computed counts, registers newly full blocks in the prefix
  // cache, appends one sampled token per completing entry, finishes
  // sequences that reached max_tokens (length), were flagged finished
  // (stop), or got no token (error), then applies deferred finish()/cancel().
  // An embed sequence whose completing entry got an answer ends with stop.
  void update(const sched_plan& plan, const std::vector<sched_sampled>& sampled);
  // Whether `token`, the `n_generated`th token of sequence `rid` (1 for the
  // first), ends it by itself: a stop or end-of-generation token as its
  // request says (stop_by_token). The owner knows the requests' parameters
  // and the vocabulary; the core does not.
  using token_stop_rule = std::function<bool(request_id rid, int32_t token, uint32_t n_generated)>;
  // The answers of the step in flight as update() takes them: one
  // sched_sampled per sequence with its tokens in order (a speculative entry
  // answers with several), cut after the first that ends the sequence (by
  // `ends_by_token`, which marks it finished, or by reaching max_tokens), so
  // that neither update() nor a session sees what follows; res.outputs keeps
  // only the tokens kept. An embed request's answer (res.embeddings) is a
  // finished entry without tokens. Tokens of a sequence the core no longer
  // knows are kept as they are.
  std::vector<sched_sampled> cut_sampled(engine_step_result& res, const token_stop_rule& ends_by_token) const;
  // The executor failed `plan`: its sequences finish with error.
  void abort_step(const sched_plan& plan);
  // `plan`'s forward pass took `ms` (measured by the executor): teaches the
  // step cost model. `round_trip_ms` (0: unknown) is the whole step as the
  // owner saw it, sent to answered: what it spends beyond the forward pass
  // (messages, sampling, bookkeeping) costs every step alike, whatever its
  // tokens, and is learnt apart (step_overhead_ms) for the draft governor: a
  // stream's speed is tokens per step period, not per forward pass. Any
  // time after schedule() returned it.
  void observe_step(const sched_plan& plan, double ms, double round_trip_ms = 0);
  // The learnt per-step time outside the forward pass (EWMA), ms; 0 until observed.
  double step_overhead_ms() const { return step_overhead_ms_; }
  const step_cost_model& cost_model() const { return cost_; }
  const scheduler_config& config() const { return cfg_; }

  // Ends a sequence (blocks freed) at the next step boundary. Returns false
  // if the id is unknown or already finished. `error` goes with
  // finish_reason::error to the session.
  bool finish(request_id rid, finish_reason reason, status error = status::ok());
  bool cancel(request_id rid) { return finish(rid, finish_reason::cancelled); }

  // Terminal records since the last call, in the order they happened.
  std::vector<seq_finished> take_finished();

  // nullptr once finished or for an unknown id.
  const sequence* find(request_id rid) const;
  int32_t n_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  int32_t n_running() const { return static_cast<int32_t>(running_.size()); }
  bool has_work() const { return !waiting_.empty() || !running_.empty(); }
  bool step_in_flight() const { return step_in_flight_; }
  const scheduler_totals& totals() const { return totals_; }
  const kv_cache_manager& kv() const { return kv_; }

  // Empty when consistent, else what is wrong: the KV manager's checks, each
  // live sequence in exactly one queue matching its state, only running
  // sequences hold blocks, tables cover computed tokens. O(sequences + blocks).
  std::string check_invariants() const;

 private:
  sequence* find_mut(request_id rid);
  // Tokens of seq's next n_want that the pool can give slots to now.
  int32_t n_tokens_fitting(const sequence& s, int32_t n_want) const;
  // Allocates slots for n tokens and appends seq's entry; tokens beyond s's
  // known ones come from `draft`. REQUIRES: they fit.
  void add_entry(sequence& s, int32_t n_tokens, bool is_decode, sched_plan& plan, int32_t& budget,
                 const std::vector<int32_t>& draft = {});
  // Schedules n_want tokens of a running sequence (its known ones, then
  // `draft`), preempting as needed; drafts are cut first when the pool is
  // short; may preempt s itself, or end it (error, kv capacity) if it alone exceeds the pool.
  void schedule_running(sequence& s, int32_t n_want, bool is_decode, sched_plan& plan, int32_t& budget,
                        const std::vector<int32_t>& draft = {});
  // A decoding sequence's draft for this step: prompt lookup, cut to its
  // token budget, max_tokens and the blocks free beyond one per running sequence.
  std::vector<int32_t> plan_draft(const sequence& s, int32_t budget) const;
  void admit_waiting(sched_plan& plan, int32_t& budget);
  // The running sequence to preempt first. REQUIRES: running_ is not empty.
  sequence& pick_victim();
  void preempt(sequence& s, sched_plan& plan, int32_t& budget);
  void finish_now(sequence& s, finish_reason reason, status error = status::ok());
  void end_step();
  // Prefill tokens of s this step: within the token budget, max_prefill_chunk
  // and, while the step carries decode tokens, the time budget.
  int32_t prefill_chunk(const sequence& s, int32_t budget) const;
  // Starts the time budget of a step whose decode entries are planned.
  void limit_prefill(const sched_plan& plan, int32_t& budget);

  scheduler_config cfg_;
  scheduling_policy policy_;
  step_cost_model cost_;
  double step_overhead_ms_ = 0;
  bool overhead_seen_ = false;
  struct step_limit {  // the time budget of the step being planned
    bool active = false;
    double target_ms = 0;
    step_work work;           // of the entries planned so far
    int32_t n_prefill = 0;    // prefill tokens planned so far
  };
  step_limit limit_;
  kv_cache_manager& kv_;
  std::unordered_map<request_id, sequence> seqs_;  // live sequences only
  std::vector<request_id> running_;
  std::vector<request_id> waiting_;              // waiting and preempted
  std::unordered_set<request_id> in_flight_;     // ids in the step in flight
  struct deferred_finish {
    request_id rid;
    finish_reason reason;
    status error;
  };
  std::vector<deferred_finish> finish_deferred_;
  std::vector<seq_finished> finished_;
  bool step_in_flight_ = false;
  uint64_t step_ = 0;
  uint64_t n_arrivals_ = 0;
  scheduler_totals totals_;
};

}  // namespace cortex
