// The executor's logic without CAF: owns the compute pool, the forward pass,
// the K/V arena and one sampler per open sequence, and turns an engine step
// (plain data from the scheduler) into sampled tokens. Embed entries
// (step_entry::embed) add their tokens' normed hidden rows to a pooled
// sum per request, across steps; the entry that completes the prompt returns
// the embedding (model/embedding.hpp) and drops the sum. An encoder
// (hp.encoder) gets whole embed inputs only, each pooled as its file says in
// the step that computes it (L2-normalised; rank scores as they are), and
// no K/V: its entries carry no block tables.
//
// Thread: all calls from one thread (the executor's own).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/thread_pool.hpp"
#include "messages/engine.hpp"
#include "model/forward.hpp"
#include "model/kv_arena.hpp"
#include "grammar/token_mask.hpp"
#include "model/model.hpp"
#include "model/sampler.hpp"

namespace cortex {

struct executor_config {
  int n_threads = 2;
  int n_kv_blocks = 256;  // K/V arena size, in blocks
  int n_ctx_seq = 0;      // the context one request may reach (LongRoPE's factor choice); 0: the model's
  int block_size = 16;
  kernels::kv_type kv_type = kernels::kv_type::f16;  // element type of the arena
  // K/V in groups by memory kind (kv_group_layout::by_window: sliding-window
  // layers apart, n_kv_blocks blocks of the groups' size, one block table
  // per group in each step_entry); false: one group of every layer.
  bool kv_groups_by_window = false;
  // Injected faults (actors/runtime/fault_plan.hpp); 0: off.
  uint64_t fault_fail_step = 0;   // the step with this id fails
  uint64_t fault_stall_step = 0;  // the step with this id first sleeps fault_stall_ms
  uint32_t fault_stall_ms = 0;
};

// request_params -> the sampler's parameters (seed resolved by intake).
sampling_params to_sampling_params(const request_params& p, uint64_t seed, uint32_t n_logprobs);

class step_runner {
 public:
  step_runner(std::shared_ptr<const model> m, const executor_config& cfg);

  // A sequence's sampler and penalty history (and its grammar, compiled
  // here: intake checked it compiles); replaces an existing one.
  void open(const sequence_open& o);
  void close(request_id rid) {
    seqs_.erase(rid);
    sums_.erase(rid);
    states_.erase(rid);
  }
  size_t n_open() const { return seqs_.size(); }
  // Recurrent models (hp.state_floats() > 0): the sequences whose state this
  // runner holds (one slot each, from their first step to their close).
  size_t n_state_slots() const { return states_.size(); }

  // Runs one step. On failure (bad plan, exception in the model, injected
  // fault) returns failed() with the error (code internal); no sequence's
  // sampler or history changes then, and the runner stays usable.
  engine_step_result run(const engine_step& step);

  // Test hook: the next n steps fail.
  void fail_next(uint32_t n) { fail_next_ = n; }
  // Test hook: row r of the last step's logits (rows in batch order, as run() sampled them).
  const float* logits(int row) const { return fwd_.logits(row); }
  const kv_arena& arena() const { return kv_; }

 private:
  // Sequences with the same grammar text share one matcher (its interned
  // stacks and states) and one mask cache, so a state's mask is computed
  // once for all of them (a batch of requests with one schema). A matcher
  // is not thread-safe: a step computes each context's masks in one task,
  // different contexts in parallel, then samples every sequence in parallel.
  struct grammar_context {
    grammar_matcher matcher;
    token_masker masker;
    grammar_context(std::shared_ptr<const grammar> g, std::shared_ptr<const vocab_trie> t)
        : matcher(std::move(g)), masker(std::move(t), matcher) {}
  };
  // A sequence with a grammar (request_params::grammar): its state after
  // the tokens sampled so far, and this step's mask.
  struct constraint {
    std::shared_ptr<grammar_context> ctx;
    grammar_matcher::state state;
    std::vector<uint64_t> mask;  // (n_vocab + 63) / 64 words
    std::vector<int32_t> banned;  // logit_bias <= -100: out of the mask too
    bool overflow = false;        // the state holds over max_open_stacks stacks: the request is refused
  };
  struct open_seq {
    sampler smp;
    std::vector<int32_t> history;  // prompt + sampled ids (penalties)
    uint32_t n_logprobs;
    std::unique_ptr<constraint> grammar;  // null: unconstrained
    status grammar_error;                 // the grammar did not compile (a bug: intake checks it)
  };
  // c.mask for c's state, less the banned tokens; end-of-generation tokens
  // only if that leaves nothing (a grammar with no way on, or a logit_bias
  // that bans every token the grammar allows: the request then ends `stop`
  // with a prefix of a document).
  void compute_mask(constraint& c);
  // Samples e's token(s) from logits rows from row0 into out: one, or for a
  // speculative entry (e.n_draft > 0) the accepted drafts then the token
  // sampled at the first rejection (or after the last draft). Touches only
  // sq's sampler; sq's grammar state is restored before returning, and its
  // shared matcher is used only when e has drafts (callers serialize those).
  void sample_entry(const step_entry& e, open_seq& sq, int row0, std::vector<sampled_output>& out);
  // The plan is ours, but a bad one must fail its step (internal), never
  // write outside the arena or read outside the vocabulary.
  status check(const engine_step& step) const;
  // After the forward pass: counts e's tokens into its pooled sum and, when e
  // completes the prompt, appends the embedding to res and drops the sum.
  void finish_embedding(const step_entry& e, engine_step_result& res);
  // An encoder's entry k: its pooled output (encoded_[k]), normalised, into res.
  void finish_encoded(size_t k, const step_entry& e, engine_step_result& res);

  std::shared_ptr<const model> model_;
  executor_config cfg_;
  kernels::thread_pool pool_;
  forward_pass fwd_;
  kv_arena kv_;
  std::unordered_map<request_id, open_seq> seqs_;
  std::shared_ptr<const vocab_trie> trie_;  // built at the first grammar request
  std::unordered_map<std::string, std::weak_ptr<grammar_context>> contexts_;  // by grammar text
  struct pooled_sum {
    std::vector<float> sum;  // (n_embd,) normed hidden rows of positions [0, n_tokens)
    int32_t n_tokens = 0;
  };
  std::unordered_map<request_id, pooled_sum> sums_;  // embed requests mid-prompt
  std::vector<std::vector<float>> encoded_;           // an encoder step's outputs, one per entry
  // A recurrent model's state per sequence (batch_seq::state): it covers the
  // sequence's positions [0, n_tokens), so a step must continue exactly
  // there or start over at 0 (a recompute after preemption: the slot is
  // zeroed and refilled). A failed step drops the states it touched.
  struct recurrent_state {
    std::vector<float> data;
    int32_t n_tokens = 0;
  };
  std::unordered_map<request_id, recurrent_state> states_;
  std::vector<batch_seq> batch_;  // reused per step
  std::vector<std::vector<const int32_t*>> group_tables_;  // (entries,) each one's tables per K/V group, reused per step
  uint32_t fail_next_ = 0;
};

}  // namespace cortex
