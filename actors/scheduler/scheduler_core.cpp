#include "actors/scheduler/scheduler_core.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace cortex {

namespace {

void erase_id(std::vector<request_id>& ids, request_id id) {
  const auto it = std::find(ids.begin(), ids.end(), id);
  if (it != ids.end()) ids.erase(it);
}

}  // namespace

scheduler_core::scheduler_core(const scheduler_config& cfg, kv_cache_manager& kv)
    : cfg_(cfg), policy_(cfg.aging_per_step), kv_(kv) {}

status scheduler_core::add(seq_request req) {
  // Intake assigns rids: a duplicate is our bug (409 duplicate_id is the
  // client's id on its connection, protocol.md), so it is internal.
  if (seqs_.count(req.rid) != 0) return fail(errc::internal, "scheduler: request " + std::to_string(req.rid) + " is already queued or running");
  if (req.tokens_prompt.empty()) return fail(errc::invalid_param, "scheduler: the prompt is empty");
  if (req.max_tokens < 1) return fail(errc::invalid_param, "scheduler: max_tokens must be >= 1");
  sequence s;
  s.rid = req.rid;
  s.priority = req.priority;
  s.arrival = n_arrivals_++;
  s.step_arrived = step_;
  s.n_tokens_prompt = static_cast<int32_t>(req.tokens_prompt.size());
  s.tokens = std::move(req.tokens_prompt);
  s.max_tokens = req.max_tokens;
  s.embed = req.embed;
  s.spec = req.spec;
  s.state = seq_state::waiting;
  waiting_.push_back(s.rid);
  seqs_.emplace(s.rid, std::move(s));
  return status::ok();
}

sequence* scheduler_core::find_mut(request_id rid) {
  const auto it = seqs_.find(rid);
  return it == seqs_.end() ? nullptr : &it->second;
}

const sequence* scheduler_core::find(request_id rid) const {
  const auto it = seqs_.find(rid);
  return it == seqs_.end() ? nullptr : &it->second;
}

sched_plan scheduler_core::schedule() {
  sched_plan plan;
  if (step_in_flight_ || !has_work()) return plan;
  ++step_;
  plan.stats.step = step_;
  int32_t budget = cfg_.max_batch_tokens;

  const auto by_rank = [this](request_id a, request_id b) { return policy_.goes_before(seqs_.at(a), seqs_.at(b), step_); };
  std::sort(running_.begin(), running_.end(), by_rank);
  const std::vector<request_id> order = running_;  // preemption edits running_
  for (const request_id id : order) {  // decode tokens first: a prefill never stalls them
    if (budget == 0) break;
    sequence& s = seqs_.at(id);  // a sequence leaves seqs_ only through finish_now, which only hits s itself
    if (s.state == seq_state::running && s.n_tokens_uncomputed() == 1 && s.n_tokens_generated() > 0) {
      const std::vector<int32_t> draft = plan_draft(s, budget);
      schedule_running(s, 1 + static_cast<int32_t>(draft.size()), true, plan, budget, draft);
    }
  }
  limit_prefill(plan, budget);
  for (const request_id id : order) {  // then prefill chunks of admitted sequences
    if (budget == 0) break;
    const auto it = seqs_.find(id);
    if (it == seqs_.end() || it->second.state != seq_state::running || in_flight_.count(id) != 0) continue;
    const int32_t n_want = prefill_chunk(it->second, budget);
    if (n_want > 0) schedule_running(it->second, n_want, false, plan, budget);
  }
  // As in vLLM: a step that had to preempt admits no one, or the freed
  // blocks would go straight to a newcomer and the preemption would repeat.
  if (plan.stats.n_preemptions == 0 || plan.entries.empty()) admit_waiting(plan, budget);

  step_work work;
  for (const step_entry& e : plan.entries) {
    work += step_work::entry(e.pos0, e.n_tokens());
    plan.stats.n_tokens_batch += e.n_tokens();
    (e.is_decode ? plan.stats.n_tokens_decode : plan.stats.n_tokens_prefill) += e.n_tokens();
    plan.stats.n_tokens_draft += e.n_draft;
  }
  const kv_cache_stats kv_stats = kv_.stats();
  plan.stats.n_seqs = static_cast<int32_t>(plan.entries.size());
  plan.stats.n_blocks_used = kv_stats.n_blocks_used;
  plan.stats.n_blocks_total = kv_stats.n_blocks_total;
  plan.stats.n_running = n_running();
  plan.stats.n_waiting = n_waiting();
  plan.stats.predicted_ms = cost_.calibrated() ? cost_.predict_ms(work) : 0;
  plan.stats.target_ms = limit_.active ? limit_.target_ms : 0;
  limit_ = {};
  totals_.n_steps += 1;
  step_in_flight_ = !plan.entries.empty();
  return plan;
}

std::vector<int32_t> scheduler_core::plan_draft(const sequence& s, int32_t budget) const {
  if (!s.spec.on()) return {};
  // Drafts never cost another sequence its decode slot: keep one free block
  // per running sequence aside, and take only what the step has room for.
  const int64_t n_spare_blocks = static_cast<int64_t>(kv_.n_rows_available()) - n_running();
  const int64_t n_table_slots = static_cast<int64_t>(kv_.block_table(s.rid).size()) * kv_.block_size() - s.n_tokens_computed - 1;
  const int64_t n_slots = std::max<int64_t>(0, n_table_slots) + std::max<int64_t>(0, n_spare_blocks) * kv_.block_size();
  const int64_t n_max = std::min<int64_t>({budget - 1, s.max_tokens - s.n_tokens_generated() - 1, n_slots});
  if (n_max <= 0) return {};
  std::vector<int32_t> draft = prompt_lookup_draft(s.tokens, s.spec);
  if (draft.empty() || !cfg_.adaptive_drafts) {
    if (static_cast<int64_t>(draft.size()) > n_max) draft.resize(static_cast<size_t>(n_max));
    return draft;
  }
  // Only as many as pay on this sequence's acceptance so far and the
  // learnt step cost: the step period with 1 + k tokens at its position over
  // the one with 1, each the forward pass plus the per-step overhead (on a
  // tiny model the overhead dominates, and drafts are nearly free).
  const int32_t pos = s.n_tokens_computed;
  draft_cost_fn cost;
  if (cost_.calibrated()) {
    const double oh = step_overhead_ms_;
    const double one = oh + cost_.predict_ms(step_work::entry(pos, 1));
    if (one > 0) cost = [this, pos, one, oh](int32_t k) { return (oh + cost_.predict_ms(step_work::entry(pos, 1 + k))) / one; };
  }
  const int32_t k = choose_draft_length(s.spec_record, static_cast<int32_t>(std::min<int64_t>(n_max, static_cast<int64_t>(draft.size()))), cost);
  draft.resize(static_cast<size_t>(k));
  return draft;
}

void scheduler_core::limit_prefill(const sched_plan& plan, int32_t& budget) {
  limit_ = {};
  if (plan.entries.empty()) return;  // nothing decodes: prefill takes the whole budget
  if (cfg_.itl_target_ms < 0 || !cost_.calibrated()) {
    if (cfg_.max_prefill_with_decode > 0) budget = std::min(budget, cfg_.max_prefill_with_decode);
    return;
  }
  limit_.active = true;
  for (const step_entry& e : plan.entries) limit_.work += step_work::entry(e.pos0, e.n_tokens());
  limit_.target_ms = cfg_.itl_target_ms > 0 ? cfg_.itl_target_ms : 2 * cost_.predict_ms(limit_.work);
}

int32_t scheduler_core::prefill_chunk(const sequence& s, int32_t budget) const {
  if (cfg_.whole_inputs) return s.n_tokens_uncomputed() <= budget ? s.n_tokens_uncomputed() : 0;
  int32_t n = std::min(s.n_tokens_uncomputed(), budget);
  if (cfg_.max_prefill_chunk > 0) n = std::min(n, cfg_.max_prefill_chunk);
  if (limit_.active) {
    const int32_t n_in_time = cost_.max_tokens_within(limit_.work, s.n_tokens_computed, n, limit_.target_ms);
    const int32_t n_floor = std::max(0, cfg_.min_prefill_with_decode - limit_.n_prefill);  // prompts never starve
    n = std::max(n_in_time, std::min(n, n_floor));
  }
  return n;
}

void scheduler_core::observe_step(const sched_plan& plan, double ms, double round_trip_ms) {
  if (round_trip_ms > 0 && std::isfinite(round_trip_ms) && std::isfinite(ms)) {
    const double overhead = std::max(0.0, round_trip_ms - std::max(0.0, ms));
    step_overhead_ms_ = overhead_seen_ ? 0.9 * step_overhead_ms_ + 0.1 * overhead : overhead;
    overhead_seen_ = true;
  }
  step_work work;
  for (const step_entry& e : plan.entries) work += step_work::entry(e.pos0, e.n_tokens());
  cost_.observe(work, ms);
}

int32_t scheduler_core::n_tokens_fitting(const sequence& s, int32_t n_want) const {
  if (cfg_.whole_inputs) return n_want == s.n_tokens_uncomputed() ? n_want : 0;  // no blocks: whole or nothing
  const int64_t n_blocks = static_cast<int64_t>(kv_.block_table(s.rid).size()) + kv_.n_rows_available();
  const int64_t n_slots = n_blocks * kv_.block_size() - s.n_tokens_computed;
  return static_cast<int32_t>(std::max<int64_t>(0, std::min<int64_t>(n_want, n_slots)));
}

void scheduler_core::add_entry(sequence& s, int32_t n_tokens, bool is_decode, sched_plan& plan, int32_t& budget,
                               const std::vector<int32_t>& draft) {
  if (!cfg_.whole_inputs) {
    const kv_alloc_plan alloc = kv_.plan_allocation({{s.rid, s.n_tokens_computed, n_tokens}});
    kv_.commit(alloc);  // fits: callers checked n_tokens_fitting against this same state
  }
  step_entry e;
  e.rid = s.rid;
  e.pos0 = s.n_tokens_computed;
  const int32_t n_known = std::min(n_tokens, s.n_tokens_uncomputed());
  e.tokens.assign(s.tokens.begin() + e.pos0, s.tokens.begin() + e.pos0 + n_known);
  e.n_draft = n_tokens - n_known;  // REQUIRES: <= draft.size()
  e.tokens.insert(e.tokens.end(), draft.begin(), draft.begin() + e.n_draft);
  e.block_table = kv_.block_table(s.rid);
  for (int32_t g = 1; g < kv_.n_groups(); ++g) e.more_block_tables.push_back(kv_.block_table(s.rid, g));
  e.sample = e.pos0 + n_known == s.n_tokens();
  e.is_decode = is_decode;
  e.embed = s.embed;
  plan.entries.push_back(std::move(e));
  in_flight_.insert(s.rid);
  budget -= n_tokens;
  if (limit_.active && !is_decode) {  // (decode entries were all planned before the limit started)
    limit_.work += step_work::entry(s.n_tokens_computed, n_tokens);
    limit_.n_prefill += n_tokens;
  }
}

void scheduler_core::schedule_running(sequence& s, int32_t n_want, bool is_decode, sched_plan& plan,
                                      int32_t& budget, const std::vector<int32_t>& draft) {
  for (;;) {
    const int32_t n = n_tokens_fitting(s, n_want);
    if (n > 0) {
      add_entry(s, n, is_decode, plan, budget, draft);
      return;
    }
    sequence& victim = pick_victim();  // running_ holds s at least
    if (victim.rid != s.rid) {
      preempt(victim, plan, budget);
      continue;
    }
    if (running_.size() == 1) {
      finish_now(s, finish_reason::error, fail(errc::internal, seq_error_kv_capacity));  // only running sequence, and still no room: larger than the pool (intake caps the context to it, so a bug)
    } else {
      preempt(s, plan, budget);
    }
    return;
  }
}

void scheduler_core::admit_waiting(sched_plan& plan, int32_t& budget) {
  std::sort(waiting_.begin(), waiting_.end(),
            [this](request_id a, request_id b) { return policy_.goes_before(seqs_.at(a), seqs_.at(b), step_); });
  while (!waiting_.empty() && budget > 0 && n_running() < cfg_.max_running) {
    sequence& s = seqs_.at(waiting_.front());
    s.n_tokens_cached = s.embed ? 0 : kv_.lookup_prefix(s.rid, s.tokens);  // see sequence::embed
    s.n_tokens_computed = s.n_tokens_cached;
    const int32_t n = n_tokens_fitting(s, prefill_chunk(s, budget));
    if (n == 0) {  // no room: the head waits, and no one passes it
      kv_.free(s.rid);
      s.n_tokens_computed = 0;
      s.n_tokens_cached = 0;
      return;
    }
    waiting_.erase(waiting_.begin());
    running_.push_back(s.rid);
    s.state = seq_state::running;
    add_entry(s, n, false, plan, budget);
  }
}

sequence& scheduler_core::pick_victim() {
  sequence* victim = nullptr;
  for (const request_id id : running_) {
    sequence& s = seqs_.at(id);
    if (victim == nullptr || policy_.preempted_before(s, *victim, step_)) victim = &s;
  }
  return *victim;
}

void scheduler_core::preempt(sequence& s, sched_plan& plan, int32_t& budget) {
  if (in_flight_.erase(s.rid) != 0) {
    const auto it = std::find_if(plan.entries.begin(), plan.entries.end(),
                                 [&](const step_entry& e) { return e.rid == s.rid; });
    budget += it->n_tokens();
    plan.entries.erase(it);
  }
  kv_.free(s.rid);
  s.n_tokens_computed = 0;
  s.n_tokens_cached = 0;
  s.state = seq_state::preempted;
  ++s.n_preemptions;
  ++totals_.n_preemptions;
  ++plan.stats.n_preemptions;
  erase_id(running_, s.rid);
  waiting_.push_back(s.rid);
}

void scheduler_core::update(const sched_plan& plan, const std::vector<sched_sampled>& sampled) {
  if (!step_in_flight_) return;
  for (const step_entry& e : plan.entries) {
    sequence* s = find_mut(e.rid);
    if (s == nullptr || s->state != seq_state::running || s->n_tokens_computed != e.pos0) continue;
    const int32_t n_known = e.n_tokens() - e.n_draft;
    const auto it = !e.sample ? sampled.end() : std::find_if(sampled.begin(), sampled.end(),
                                                             [&](const sched_sampled& t) { return t.rid == e.rid; });
    // A speculative entry's K/V is valid for its known tokens and the
    // accepted drafts: every answered token but the last is an accepted
    // draft. The rejected positions' blocks go back to the pool; stale K/V
    // left in a kept block lies beyond n_tokens_computed and is rewritten.
    int32_t n_accepted = 0;
    if (e.n_draft > 0 && it != sampled.end()) n_accepted = std::min(e.n_draft, static_cast<int32_t>(it->more.size()));
    s->n_tokens_computed += n_known + n_accepted;
    totals_.n_tokens_computed += static_cast<uint64_t>(e.n_tokens());
    if (e.is_decode && s->spec.on()) record_draft(s->spec_record, e.n_draft, n_accepted);
    if (e.n_draft > 0) {
      s->n_tokens_drafted += e.n_draft;
      s->n_tokens_accepted += n_accepted;
      totals_.n_tokens_drafted += static_cast<uint64_t>(e.n_draft);
      totals_.n_tokens_accepted += static_cast<uint64_t>(n_accepted);
      kv_.truncate(s->rid, s->n_tokens_computed);
    }
    if (e.sample && it == sampled.end()) {
      finish_deferred_.push_back({s->rid, finish_reason::error, fail(errc::internal, seq_error_no_token)});
    } else if (e.sample && s->embed) {  // prefill only: the answer was its embedding
      finish_deferred_.push_back({s->rid, finish_reason::stop, status::ok()});
    } else if (e.sample) {
      s->tokens.push_back(it->token);
      s->tokens.insert(s->tokens.end(), it->more.begin(), it->more.end());
      totals_.n_tokens_generated += 1 + it->more.size();
      if (it->finished) {
        finish_deferred_.push_back({s->rid, finish_reason::stop, status::ok()});
      } else if (length_reached(s->n_tokens_generated(), s->max_tokens)) {
        finish_deferred_.push_back({s->rid, finish_reason::length, status::ok()});
      }
    }
    // Only computed tokens that are known (accepted) ones enter the prefix
    // cache; then windowed layers give back what their windows have left.
    if (!cfg_.whole_inputs) {
      kv_.register_full_blocks(s->rid, s->tokens, s->n_tokens_computed);
      kv_.release_out_of_window(s->rid, s->n_tokens_computed);
    }
  }
  end_step();
}

std::vector<sched_sampled> scheduler_core::cut_sampled(engine_step_result& res, const token_stop_rule& ends_by_token) const {
  std::vector<sched_sampled> sampled;
  std::vector<sampled_output> kept;
  kept.reserve(res.outputs.size());
  bool cut = false;  // sampled.back() has reached its last token
  for (sampled_output& o : res.outputs) {
    const bool same = !sampled.empty() && sampled.back().rid == o.rid;
    if (same && cut) continue;
    const sequence* s = find(o.rid);
    const int64_t n_before = same ? 1 + static_cast<int64_t>(sampled.back().more.size()) : 0;
    const int64_t n_generated = s ? s->n_tokens_generated() + n_before + 1 : 0;
    const bool stop = s && ends_by_token(o.rid, o.token, static_cast<uint32_t>(n_generated));
    cut = stop || (s && length_reached(n_generated, s->max_tokens));
    if (same) {
      sampled.back().more.push_back(o.token);
      sampled.back().finished = stop;
    } else {
      sampled.push_back({o.rid, o.token, stop, {}});
    }
    kept.push_back(std::move(o));
  }
  res.outputs = std::move(kept);
  for (const embedding_output& e : res.embeddings) sampled.push_back({e.rid, 0, true, {}});
  return sampled;
}

void scheduler_core::abort_step(const sched_plan& plan) {
  if (!step_in_flight_) return;
  for (const step_entry& e : plan.entries) finish_deferred_.push_back({e.rid, finish_reason::error, fail(errc::internal, seq_error_step_failed)});
  end_step();
}

void scheduler_core::end_step() {
  step_in_flight_ = false;
  in_flight_.clear();
  std::vector<deferred_finish> deferred;
  deferred.swap(finish_deferred_);
  for (const deferred_finish& d : deferred) {  // the first reason recorded for a sequence wins
    if (sequence* s = find_mut(d.rid)) finish_now(*s, d.reason, d.error);
  }
}

bool scheduler_core::finish(request_id rid, finish_reason reason, status error) {
  sequence* s = find_mut(rid);
  if (s == nullptr) return false;
  if (in_flight_.count(rid) != 0) {
    finish_deferred_.push_back({rid, reason, std::move(error)});
  } else {
    finish_now(*s, reason, std::move(error));
  }
  return true;
}

void scheduler_core::finish_now(sequence& s, finish_reason reason, status error) {
  kv_.free(s.rid);
  erase_id(s.state == seq_state::running ? running_ : waiting_, s.rid);
  seq_finished f;
  f.rid = s.rid;
  f.reason = reason;
  f.error = std::move(error);
  f.n_tokens_prompt = s.n_tokens_prompt;
  f.n_tokens_generated = s.n_tokens_generated();
  f.n_tokens_cached = s.n_tokens_cached;
  f.n_preemptions = s.n_preemptions;
  f.n_tokens_drafted = s.n_tokens_drafted;
  f.n_tokens_accepted = s.n_tokens_accepted;
  finished_.push_back(f);
  ++totals_.n_finished;
  seqs_.erase(s.rid);
}

std::vector<seq_finished> scheduler_core::take_finished() {
  std::vector<seq_finished> out;
  out.swap(finished_);
  return out;
}

std::string scheduler_core::check_invariants() const {
  std::ostringstream err;
  err << kv_.check_invariants();
  std::unordered_map<request_id, int> listed;
  for (const request_id id : running_) {
    ++listed[id];
    const sequence* s = find(id);
    if (s == nullptr || s->state != seq_state::running) {
      err << "running list holds " << id << " which is not running; ";
      continue;
    }
    const int64_t slots = static_cast<int64_t>(kv_.block_table(id).size()) * kv_.block_size();
    if (cfg_.whole_inputs && slots > 0) err << "seq " << id << " of an encoder holds blocks; ";
    if (!cfg_.whole_inputs && slots < s->n_tokens_computed) err << "seq " << id << " computed " << s->n_tokens_computed << " tokens but has " << slots << " slots; ";
    if (s->n_tokens_computed >= s->n_tokens()) err << "running seq " << id << " has no token left to compute; ";
  }
  for (const request_id id : waiting_) {
    ++listed[id];
    const sequence* s = find(id);
    if (s == nullptr || (s->state != seq_state::waiting && s->state != seq_state::preempted)) {
      err << "waiting list holds " << id << " which is not waiting; ";
      continue;
    }
    if (!kv_.block_table(id).empty()) err << "waiting seq " << id << " holds blocks; ";
    if (s->n_tokens_computed != 0) err << "waiting seq " << id << " claims computed tokens; ";
  }
  for (const auto& [id, s] : seqs_) {
    if (listed[id] != 1) err << "seq " << id << " (" << to_string(s.state) << ") is listed " << listed[id] << " times; ";
  }
  int32_t n_holding = 0;
  for (const request_id id : running_) n_holding += kv_.block_table(id).empty() ? 0 : 1;
  if (kv_.stats().n_seqs != n_holding) {
    err << kv_.stats().n_seqs << " sequences hold blocks, " << n_holding << " of them running; ";
  }
  if (n_running() > cfg_.max_running) err << n_running() << " running > max_running " << cfg_.max_running << "; ";
  return err.str();
}

}  // namespace cortex
