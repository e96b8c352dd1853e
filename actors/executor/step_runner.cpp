#include "actors/executor/step_runner.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <thread>

#include "model/embedding.hpp"

namespace cortex {

sampling_params to_sampling_params(const request_params& p, uint64_t seed, uint32_t n_logprobs) {
  sampling_params s;
  s.temperature = p.temperature;
  s.top_k = p.top_k;
  s.top_p = p.top_p;
  s.min_p = p.min_p;
  s.repetition_penalty = p.repetition_penalty;
  s.presence_penalty = p.presence_penalty;
  s.frequency_penalty = p.frequency_penalty;
  s.penalty_last_n = p.penalty_last_n;
  s.seed = seed;
  for (size_t i = 0; i < p.logit_bias_ids.size() && i < p.logit_bias_values.size(); ++i) {
    s.logit_bias.emplace_back(p.logit_bias_ids[i], p.logit_bias_values[i]);
  }
  s.n_logprobs = static_cast<int>(n_logprobs);
  return s;
}

step_runner::step_runner(std::shared_ptr<const model> m, const executor_config& cfg)
    : model_(std::move(m)),
      cfg_(cfg),
      pool_(cfg.n_threads),
      fwd_(*model_, pool_, cfg.n_ctx_seq),
      kv_(model_->hparams(),
          cfg.kv_groups_by_window ? kv_group_layout::by_window(model_->hparams()) : kv_group_layout::single(model_->hparams()),
          cfg.n_kv_blocks, cfg.block_size, cfg.kv_type) {}

void step_runner::open(const sequence_open& o) {
  seqs_.erase(o.rid);
  open_seq q{sampler(to_sampling_params(o.params, o.seed, o.n_logprobs)), o.tokens_prompt, o.n_logprobs, nullptr, {}};
  if (!o.params.grammar.empty()) {
    for (auto it = contexts_.begin(); it != contexts_.end();) it = it->second.expired() ? contexts_.erase(it) : std::next(it);
    std::shared_ptr<grammar_context> ctx = contexts_[o.params.grammar].lock();
    if (!ctx) {
      if (auto g = grammar::compile(o.params.grammar)) {
        if (!trie_) trie_ = vocab_trie::from_tokenizer(model_->tokenizer());
        ctx = std::make_shared<grammar_context>(std::move(*g), trie_);
        contexts_[o.params.grammar] = ctx;
      } else {
        q.grammar_error = g.error();  // intake compiled it: a bug; the request's steps fail
      }
    }
    if (ctx) {
      q.grammar = std::make_unique<constraint>(constraint{ctx, ctx->matcher.initial(), {}, {}});
      for (size_t i = 0; i < o.params.logit_bias_ids.size() && i < o.params.logit_bias_values.size(); ++i) {
        const int32_t id = o.params.logit_bias_ids[i];
        if (o.params.logit_bias_values[i] <= -100.0f && id >= 0 && id < trie_->n_vocab()) q.grammar->banned.push_back(id);
      }
    }
  }
  seqs_.emplace(o.rid, std::move(q));
}

namespace {

status grammar_overflow_error(const grammar_matcher::state& s) {
  return fail(errc::invalid_param, "the grammar (params.grammar or params.json_schema) keeps " + std::to_string(s.stacks.size()) +
                                       " parses open at once after the output so far, more than the " +
                                       std::to_string(grammar_matcher::max_open_stacks) +
                                       " allowed: its alternatives multiply with the output; make alternatives differ in "
                                       "their first characters");
}

}  // namespace

void step_runner::compute_mask(constraint& c) {
  const auto bit = [](int32_t id) { return uint64_t{1} << (id & 63); };
  size_t n = c.ctx->masker.compute(c.state, c.mask);
  for (int32_t id : c.banned) {
    uint64_t& w = c.mask[static_cast<size_t>(id) >> 6];
    n -= (w & bit(id)) != 0;
    w &= ~bit(id);
  }
  if (n == 0) {
    for (int32_t id : trie_->eog_ids()) c.mask[static_cast<size_t>(id) >> 6] |= bit(id);
  }
}

status step_runner::check(const engine_step& step) const {
  const int n_vocab = model_->hparams().n_vocab;
  const auto bad = [](const std::string& what) { return fail(errc::internal, "bad step plan: " + what); };
  const auto& hp = model_->hparams();
  for (const auto& e : step.entries) {
    if (e.tokens.empty()) return bad("empty step entry for request " + std::to_string(e.rid));
    if (hp.encoder.enabled) {  // whole embed inputs only, no K/V (scheduler_config::whole_inputs)
      if (!e.embed || e.pos0 != 0 || !e.sample || e.n_draft != 0 || e.n_tokens() > hp.n_ctx_train) {
        return bad("request " + std::to_string(e.rid) + ": an encoder computes whole embed inputs of at most " +
                   std::to_string(hp.n_ctx_train) + " tokens in one step");
      }
      for (int32_t t : e.tokens) {
        if (t < 0 || t >= n_vocab) return bad("token id " + std::to_string(t) + " outside the vocabulary");
      }
      continue;
    }
    if (e.n_draft < 0 || e.n_draft >= e.n_tokens() || (e.n_draft > 0 && (!e.sample || e.embed))) {
      return bad("request " + std::to_string(e.rid) + " has " + std::to_string(e.n_draft) + " draft tokens of " +
                 std::to_string(e.n_tokens()));
    }
    if (e.sample && !e.embed && !seqs_.count(e.rid)) return bad("no sampler open for request " + std::to_string(e.rid));
    if (auto it = seqs_.find(e.rid); it != seqs_.end() && !it->second.grammar_error.is_ok()) {
      return bad("the grammar of request " + std::to_string(e.rid) + " does not compile: " + it->second.grammar_error.message);
    }
    if (e.embed && e.pos0 != 0) {  // a chunk after the first: the earlier rows must be in its sum
      const auto it = sums_.find(e.rid);
      if (it == sums_.end() || it->second.n_tokens != e.pos0) {
        return bad("embed request " + std::to_string(e.rid) + " continues at position " + std::to_string(e.pos0) +
                   " but its pooled sum covers " + std::to_string(it == sums_.end() ? 0 : it->second.n_tokens) + " tokens");
      }
    }
    if (model_->hparams().state_floats() > 0) {  // recurrent: the state must be exactly at pos0
      const auto it = states_.find(e.rid);
      const int32_t have = it == states_.end() ? 0 : it->second.n_tokens;
      if (e.n_draft > 0) return bad("request " + std::to_string(e.rid) + " has drafts, which a recurrent model cannot verify");
      if (e.pos0 != 0 && have != e.pos0) {
        return bad("request " + std::to_string(e.rid) + " continues at position " + std::to_string(e.pos0) +
                   " but its recurrent state covers " + std::to_string(have) + " tokens");
      }
    }
    const int64_t end = static_cast<int64_t>(e.pos0) + static_cast<int64_t>(e.tokens.size());
    const int n_groups = kv_.groups().n_groups();
    if (e.more_block_tables.size() + 1 != static_cast<size_t>(n_groups)) {
      return bad("request " + std::to_string(e.rid) + " has " + std::to_string(e.more_block_tables.size() + 1) +
                 " block tables for " + std::to_string(n_groups) + " K/V groups");
    }
    for (int g = 0; g < n_groups; ++g) {
      const std::vector<int32_t>& table = g == 0 ? e.block_table : e.more_block_tables[static_cast<size_t>(g - 1)];
      if (e.pos0 < 0 || (end + cfg_.block_size - 1) / cfg_.block_size > static_cast<int64_t>(table.size())) {
        return bad("block table of request " + std::to_string(e.rid) + " does not cover its positions");
      }
      // A released entry only where no query of the step looks.
      const int window = kv_.groups().groups[static_cast<size_t>(g)].window;
      const int64_t n_unseen = window > 0 ? std::max<int64_t>(0, int64_t{e.pos0} - window + 1) / cfg_.block_size : 0;
      for (size_t i = 0; i < table.size(); ++i) {
        const int32_t b = table[i];
        if (b == kv_block_released && static_cast<int64_t>(i) < n_unseen) continue;
        if (b < 0 || b >= kv_.n_blocks()) return bad("block id " + std::to_string(b) + " outside the arena");
      }
    }
    for (int32_t t : e.tokens) {
      if (t < 0 || t >= n_vocab) return bad("token id " + std::to_string(t) + " outside the vocabulary");
    }
  }
  return status::ok();
}

void step_runner::finish_encoded(size_t k, const step_entry& e, engine_step_result& res) {
  std::vector<float>& out = encoded_[k];
  const auto& hp = model_->hparams();
  // llama-server's normalisation: the pooled vector to unit length; rank
  // scores as they are.
  if (hp.encoder.pooling != pooling_kind::rank) l2_normalize(out.data(), static_cast<int>(out.size()));
  res.embeddings.push_back({e.rid, std::move(out)});
}

void step_runner::finish_embedding(const step_entry& e, engine_step_result& res) {
  const auto it = sums_.find(e.rid);
  it->second.n_tokens += static_cast<int32_t>(e.tokens.size());
  if (!e.sample) return;  // more of the prompt to come
  res.embeddings.push_back(
      {e.rid, pooled_embedding(it->second.sum.data(), model_->hparams().n_embd, it->second.n_tokens)});
  sums_.erase(it);
}

namespace {

sampled_output to_output(request_id rid, const sampled_token& tok) {
  sampled_output out;
  out.rid = rid;
  out.token = tok.id;
  out.logprob.id = tok.id;
  out.logprob.lp = tok.logprob;
  for (auto& [id, lp] : tok.top) {
    out.logprob.top_ids.push_back(id);
    out.logprob.top_lps.push_back(lp);
  }
  return out;
}

}  // namespace

void step_runner::sample_entry(const step_entry& e, open_seq& sq, int row0, std::vector<sampled_output>& out) {
  const int n_vocab = model_->hparams().n_vocab;
  constraint* c = sq.grammar.get();
  if (e.n_draft == 0) {
    out.push_back(to_output(e.rid, sq.smp.sample(fwd_.logits(row0), n_vocab, sq.history, c ? c->mask.data() : nullptr)));
    return;
  }
  // Position i verifies draft i against row row0 + i, under the history and
  // grammar state extended by the i tokens accepted before it; the first
  // rejection (or the row after the last draft) samples the final token.
  // The state is restored afterwards: run() advances it by every output.
  const int32_t* drafts = e.tokens.data() + (e.tokens.size() - static_cast<size_t>(e.n_draft));
  std::vector<int32_t> history = sq.history;
  const grammar_matcher::state saved = c ? c->state : grammar_matcher::state{};
  for (int32_t i = 0; i <= e.n_draft; ++i) {
    if (c && i > 0) compute_mask(*c);
    const uint64_t* mask = c ? c->mask.data() : nullptr;
    bool accepted = false;
    const sampled_token tok = i < e.n_draft ? sq.smp.verify(fwd_.logits(row0 + i), n_vocab, history, mask, drafts[i], accepted)
                                            : sq.smp.sample(fwd_.logits(row0 + i), n_vocab, history, mask);
    out.push_back(to_output(e.rid, tok));
    if (!accepted) break;
    history.push_back(tok.id);
    if (c) {
      if (trie_->is_eog(tok.id)) break;  // the document ended: nothing follows
      c->ctx->matcher.advance(c->state, trie_->token_bytes(tok.id));
      // Past the open-parse bound no further mask is computed: the tokens so
      // far stand, and the next step refuses the request (run()).
      if (c->state.stacks.size() > grammar_matcher::max_open_stacks) break;
    }
  }
  if (c) c->state = saved;  // (its mask is recomputed at the next step)
}

engine_step_result step_runner::run(const engine_step& step) {
  engine_step_result res;
  res.step_id = step.step_id;
  for (request_id rid : step.closed) close(rid);
  const auto t0 = std::chrono::steady_clock::now();
  if (step.step_id == cfg_.fault_stall_step && cfg_.fault_stall_step != 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(cfg_.fault_stall_ms));  // injected stall
  }
  if (fail_next_ > 0 || (step.step_id == cfg_.fault_fail_step && cfg_.fault_fail_step != 0)) {
    if (fail_next_ > 0) --fail_next_;
    res.error = fail(errc::internal, "injected executor failure");
    return res;
  }
  if (status s = check(step); !s) {
    res.error = std::move(s);
    return res;
  }
  batch_.clear();
  if (group_tables_.size() < step.entries.size()) group_tables_.resize(step.entries.size());
  const model_hparams& hp = model_->hparams();
  if (hp.encoder.enabled) encoded_.resize(step.entries.size());
  for (size_t k = 0; k < step.entries.size(); ++k) {
    const step_entry& e = step.entries[k];
    if (hp.encoder.enabled) {  // a whole input, pooled into encoded_[k]; no K/V
      batch_seq s;
      s.tokens = e.tokens.data();
      s.n_tokens = static_cast<int32_t>(e.tokens.size());
      s.logits = logits_mode::none;
      s.pooling = hp.encoder.pooling;
      encoded_[k].assign(static_cast<size_t>(pooled_size(hp, s.pooling, s.n_tokens)), 0.0f);
      s.embd = encoded_[k].data();
      batch_.push_back(s);
      continue;
    }
    batch_seq s;
    s.tokens = e.tokens.data();
    s.n_tokens = static_cast<int32_t>(e.tokens.size());
    s.pos0 = e.pos0;
    s.block_table = e.block_table.data();
    s.n_blocks = static_cast<int32_t>(e.block_table.size());
    if (!e.more_block_tables.empty()) {
      std::vector<const int32_t*>& tables = group_tables_[k];
      tables.assign(1, e.block_table.data());
      for (const auto& t : e.more_block_tables) tables.push_back(t.data());
      s.group_tables = tables.data();
    }
    // A speculative entry needs a row per position from its last known
    // token on (its known tokens are one decode token: all rows are those).
    s.logits = !e.sample || e.embed ? logits_mode::none : e.n_draft > 0 ? logits_mode::all : logits_mode::last;
    if (const size_t n_state = model_->hparams().state_floats(); n_state > 0) {
      recurrent_state& rs = states_[e.rid];
      rs.data.resize(n_state);  // zeroed by the pass at pos0 0
      s.state = rs.data.data();
    }
    if (e.embed) {
      pooled_sum& ps = sums_[e.rid];
      if (e.pos0 == 0) {  // the first chunk, or a recompute after preemption
        ps.sum.assign(static_cast<size_t>(model_->hparams().n_embd), 0.0f);
        ps.n_tokens = 0;
      }
      s.hidden_sum = ps.sum.data();
    }
    batch_.push_back(s);
  }
  try {
    fwd_.run(batch_, kv_);
    if (!states_.empty()) {
      for (const auto& e : step.entries) states_[e.rid].n_tokens = e.pos0 + e.n_tokens();
    }
    // Sequences that sample this step, in batch order, with their first
    // logits row (rows: one per `last` entry, one per token of an `all` one).
    std::vector<std::pair<const step_entry*, open_seq*>> todo;
    std::vector<int> row0;
    int n_rows = 0;
    for (size_t k = 0; k < step.entries.size(); ++k) {
      const step_entry& e = step.entries[k];
      if (hp.encoder.enabled) {
        finish_encoded(k, e, res);
      } else if (e.embed) {
        finish_embedding(e, res);
      } else if (e.sample) {
        todo.emplace_back(&e, &seqs_.at(e.rid));
        row0.push_back(n_rows);
        n_rows += e.n_draft > 0 ? e.n_tokens() : 1;
      }
    }
    // Grammar masks: one task per grammar context (its sequences share a
    // matcher), contexts in parallel.
    std::vector<std::vector<constraint*>> by_context;
    std::unordered_map<const grammar_context*, size_t> context_slot;
    for (auto& [e, sq] : todo) {
      if (!sq->grammar) continue;
      const auto slot = context_slot.emplace(sq->grammar->ctx.get(), by_context.size()).first->second;
      if (slot == by_context.size()) by_context.emplace_back();
      by_context[slot].push_back(sq->grammar.get());
    }
    if (!by_context.empty()) {  // most steps carry no grammar: no pool round trip for them
      pool_.parallel_for(static_cast<int>(by_context.size()), [&](int k, int) {
        for (constraint* c : by_context[static_cast<size_t>(k)]) {
          c->overflow = c->state.stacks.size() > grammar_matcher::max_open_stacks;
          if (!c->overflow) compute_mask(*c);
        }
      });
    }
    // Samplers are independent (own RNG, own history): sample them in
    // parallel on the compute pool; each task writes only its own slot. A
    // speculative entry with a grammar computes its later masks on the
    // shared matcher, so those run afterwards on this thread.
    std::vector<std::vector<sampled_output>> outs(todo.size());
    const auto serial = [&](size_t i) { return todo[i].first->n_draft > 0 && todo[i].second->grammar; };
    const auto refused = [&](size_t i) { return todo[i].second->grammar && todo[i].second->grammar->overflow; };
    pool_.parallel_for(static_cast<int>(todo.size()), [&](int i, int) {
      const auto k = static_cast<size_t>(i);
      if (!serial(k) && !refused(k)) sample_entry(*todo[k].first, *todo[k].second, row0[k], outs[k]);
    });
    for (size_t k = 0; k < todo.size(); ++k) {
      if (refused(k)) {
        res.failures.push_back({todo[k].first->rid, grammar_overflow_error(todo[k].second->grammar->state)});
      } else if (serial(k)) {
        sample_entry(*todo[k].first, *todo[k].second, row0[k], outs[k]);
      }
    }
    for (auto& o : outs) {
      for (auto& t : o) res.outputs.push_back(std::move(t));
    }
  } catch (const std::exception& ex) {
    for (const auto& e : step.entries) states_.erase(e.rid);  // partly advanced: unusable
    res.outputs.clear();
    res.embeddings.clear();
    res.error = fail(errc::internal, std::string("model step failed: ") + ex.what());
    return res;
  }
  // Only a successful step extends the histories.
  for (const auto& o : res.outputs) {
    open_seq& q = seqs_.at(o.rid);
    q.history.push_back(o.token);
    // A drawn token is one the mask allowed: its bytes keep the state viable.
    if (q.grammar && !trie_->is_eog(o.token)) q.grammar->ctx->matcher.advance(q.grammar->state, trie_->token_bytes(o.token));
  }
  res.compute_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace cortex
