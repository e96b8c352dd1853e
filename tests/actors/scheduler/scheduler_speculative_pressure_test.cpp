// scheduler_core with speculative decoding under KV pressure and with the
// prefix cache: sequences that draft are preempted and resumed, later
// requests reuse blocks written by earlier ones' accepted and rejected
// drafts, and still every output is the fake model's own greedy text.
//
// The fake model reads the K/V: the token after position q is a hash of the
// tokens in the KV slots of positions q - 2..q (written by whichever step,
// sequence or cached block put them there), and the verifier accepts a
// draft exactly when it equals that token, as greedy verification does. So
// a slot holding a rejected draft (registered in the prefix cache, counted
// as computed, left behind by a preemption) changes the output. Expected
// outputs come from iterating the hash over the tokens alone (first
// principles), with speculation on and off, prefix cache on and off.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

#include "actors/scheduler/prompt_lookup.hpp"
#include "actors/scheduler/scheduler_core.hpp"
#include "tests/support/engine_configs.hpp"
#include "tests/support/shadow_kv.hpp"

namespace cortex {
namespace {

using testing::kv_cfg;
using testing::sched_cfg;
using tokens = std::vector<int32_t>;

constexpr int32_t k_alphabet = 7;   // tokens 1..11: short cycles, so prompt lookup finds n-grams
constexpr int32_t k_stop = 5;       // a stop token for the requests that stop (see stops_at)

// The next token after c2 c1 c0 (c0 last): a hash with a 3-token state, so a
// 2-gram lookup is right only part of the time.
int32_t next_token(int32_t c2, int32_t c1, int32_t c0) {
  return static_cast<int32_t>((c0 * 73 + c1 * 151 + c2 * 31 + 17) % 1009 % k_alphabet + 1);
}
int32_t next_after(const tokens& t, size_t n) {  // the token after t[0, n)
  const auto at = [&](size_t back) { return n > back ? t[n - 1 - back] : 0; };
  return next_token(at(2), at(1), at(0));
}

// Requests with odd ids stop at the first k_stop among their generated
// tokens from the 16th on (the session's decision, outside the scheduler).
bool stops_at(request_id rid, int32_t n_generated, int32_t tok) { return rid % 2 == 1 && n_generated >= 16 && tok == k_stop; }

// What the request must produce: the hash iterated from the prompt.
tokens expected_output(request_id rid, tokens t, int32_t max_tokens) {
  tokens out;
  while (static_cast<int32_t>(out.size()) < max_tokens) {
    const int32_t tok = next_after(t, t.size());
    t.push_back(tok);
    out.push_back(tok);
    if (stops_at(rid, static_cast<int32_t>(out.size()), tok)) break;
  }
  return out;
}

// The executor over a shadow K/V arena: writes each entry's tokens into its
// slots, checks the positions before pos0 hold the sequence's tokens, and
// answers from the slots (never from the scheduler's token lists).
class kv_reading_model {
 public:
  kv_reading_model(const scheduler_core& core, int32_t n_blocks, int32_t block_size)
      : core_(core), kv_(n_blocks, block_size) {}

  std::vector<sched_sampled> run(const sched_plan& plan) {
    std::vector<sched_sampled> out;
    for (const step_entry& e : plan.entries) {
      const sequence* s = core_.find(e.rid);
      EXPECT_NE(s, nullptr);
      if (s == nullptr) continue;
      kv_.read_and_write(e, *s);
      if (!e.sample) continue;
      // Row i predicts the token after position q = first row + i; drafts
      // start at e.tokens[n_known]. Accept while the prediction is the draft.
      const int32_t n_known = e.n_tokens() - e.n_draft;
      int32_t n_generated = s->n_tokens_generated();
      sched_sampled answer{e.rid, 0, false, {}};
      for (int32_t i = 0; i <= e.n_draft; ++i) {
        const int32_t q = e.pos0 + n_known - 1 + i;
        const int32_t tok = next_token(kv_.at(e, q - 2), kv_.at(e, q - 1), kv_.at(e, q));
        if (i == 0) answer.token = tok;
        else answer.more.push_back(tok);
        ++n_generated;
        if (stops_at(e.rid, n_generated, tok)) {
          answer.finished = true;
          break;
        }
        if (i == e.n_draft || tok != e.tokens[static_cast<size_t>(n_known + i)]) break;
      }
      EXPECT_LE(n_generated, s->max_tokens) << "drafts passed max_tokens";
      out.push_back(answer);
    }
    return out;
  }

 private:
  const scheduler_core& core_;
  testing::shadow_kv kv_;
};

struct run_result {
  std::map<request_id, seq_finished> finished;
  std::map<request_id, tokens> outputs;  // every answer's tokens, in order (prompt excluded)
  scheduler_totals totals;
  uint64_t n_prefix_hit = 0;
  int n_preempted_drafters = 0;  // sequences preempted after they had drafted and accepted
};

struct workload_request {
  request_id rid;
  tokens prompt;
  int32_t max_tokens;
  int arrival;  // step index at which it is added
};

// Runs the workload to the end: invariants after every call, every running
// sequence's table exactly covers its computed tokens after each update
// (the spare blocks of rejected drafts went back), every sequence ends once.
run_result run(const std::vector<workload_request>& work, bool spec, bool adaptive, bool caching, int32_t n_blocks) {
  constexpr int32_t bs = 4;
  kv_cache_manager kv(kv_cfg(n_blocks, bs, caching));
  scheduler_config cfg = sched_cfg(48, 8);
  cfg.adaptive_drafts = adaptive;
  scheduler_core core(cfg, kv);
  kv_reading_model model(core, n_blocks, bs);
  run_result res;
  size_t next = 0;
  for (int step = 0; step < 20000 && (next < work.size() || core.has_work()); ++step) {
    for (; next < work.size() && work[next].arrival <= step; ++next) {
      const workload_request& w = work[next];
      seq_request r;
      r.rid = w.rid;
      r.tokens_prompt = w.prompt;
      r.max_tokens = w.max_tokens;
      if (spec) r.spec = {2, 6};
      EXPECT_TRUE(core.add(r).is_ok());
    }
    const sched_plan plan = core.schedule();
    EXPECT_EQ(core.check_invariants(), "") << "after schedule, step " << step;
    const std::vector<sched_sampled> answers = model.run(plan);
    for (const sched_sampled& a : answers) {
      tokens& o = res.outputs[a.rid];
      o.push_back(a.token);
      o.insert(o.end(), a.more.begin(), a.more.end());
    }
    core.update(plan, answers);
    EXPECT_EQ(core.check_invariants(), "") << "after update, step " << step;
    for (const step_entry& e : plan.entries) {
      const sequence* s = core.find(e.rid);
      if (s == nullptr || s->state != seq_state::running) continue;
      EXPECT_EQ(static_cast<int32_t>(kv.block_table(e.rid).size()), (s->n_tokens_computed + bs - 1) / bs)
          << "seq " << e.rid << " keeps blocks beyond its computed tokens, step " << step;
      EXPECT_EQ(tokens(s->tokens.begin() + s->n_tokens_prompt, s->tokens.end()), res.outputs[e.rid]) << "seq " << e.rid;
    }
    for (const seq_finished& f : core.take_finished()) {
      EXPECT_EQ(res.finished.count(f.rid), 0u) << "seq " << f.rid << " ended twice";
      res.finished[f.rid] = f;
      if (f.n_preemptions > 0 && f.n_tokens_accepted > 0) ++res.n_preempted_drafters;
    }
  }
  EXPECT_FALSE(core.has_work()) << "stalled";
  const kv_cache_stats st = kv.stats();
  EXPECT_EQ(st.n_blocks_used, 0) << "blocks leaked";
  EXPECT_EQ(st.n_seqs, 0);
  EXPECT_EQ(st.n_blocks_free + st.n_blocks_cached_idle, n_blocks);
  res.totals = core.totals();
  res.n_prefix_hit = st.n_tokens_hit;
  return res;
}

tokens random_tokens(std::mt19937& rng, size_t n) {
  tokens t(n);
  for (auto& x : t) x = static_cast<int32_t>(rng() % k_alphabet) + 1;
  return t;
}

// 12 requests at once on two shared 24-token prefixes, then, once those
// are done, 8 whose prompts are the earlier requests' prompt and output
// (their cached blocks hold generated tokens, where drafts were accepted
// and rejected) plus a token, and 12 that follow a draft (below).
std::vector<workload_request> workload(uint32_t seed) {
  std::mt19937 rng(seed);
  const tokens prefixes[2] = {random_tokens(rng, 24), random_tokens(rng, 24)};
  std::vector<workload_request> w;
  for (request_id id = 0; id < 12; ++id) {
    tokens p = prefixes[id % 2];
    const tokens tail = random_tokens(rng, 3 + rng() % 20);
    p.insert(p.end(), tail.begin(), tail.end());
    w.push_back({id, p, 40 + static_cast<int32_t>(rng() % 60), 0});
  }
  for (request_id id = 12; id < 20; ++id) {
    const workload_request& earlier = w[static_cast<size_t>(id - 12)];
    tokens p = earlier.prompt;
    const tokens out = expected_output(earlier.rid, p, earlier.max_tokens);
    p.insert(p.end(), out.begin(), out.end());
    p.push_back(static_cast<int32_t>(rng() % k_alphabet) + 1);
    w.push_back({id, p, 30, 400});
  }
  // And 12 whose prompts leave an earlier request's text where the lookup
  // drafted: if a block registered the draft's tokens, these find it.
  for (request_id id = 20; id < 32; ++id) {
    const workload_request& earlier = w[static_cast<size_t>(id - 20)];
    tokens p = earlier.prompt;
    const tokens out = expected_output(earlier.rid, p, earlier.max_tokens);
    p.insert(p.end(), out.begin(), out.begin() + 1 + static_cast<long>(rng() % (out.size() - 1)));
    const tokens draft = prompt_lookup_draft(p, {2, 6});
    p.insert(p.end(), draft.begin(), draft.end());
    w.push_back({id, p, 20, 400});
  }
  return w;
}

void expect_exact_outputs(const std::vector<workload_request>& work, const run_result& r, const std::string& what) {
  for (const workload_request& w : work) {
    ASSERT_EQ(r.finished.count(w.rid), 1u) << what << ": seq " << w.rid << " never ended";
    const seq_finished& f = r.finished.at(w.rid);
    const tokens want = expected_output(w.rid, w.prompt, w.max_tokens);
    EXPECT_NE(f.reason, finish_reason::error) << what << ": seq " << w.rid;
    const bool stopped = stops_at(w.rid, static_cast<int32_t>(want.size()), want.back());
    EXPECT_EQ(f.reason, stopped ? finish_reason::stop : finish_reason::length) << what << ": seq " << w.rid;
    EXPECT_EQ(r.outputs.count(w.rid) ? r.outputs.at(w.rid) : tokens{}, want) << what << ": seq " << w.rid;
    EXPECT_EQ(f.n_tokens_generated, static_cast<int32_t>(want.size())) << what << ": seq " << w.rid;
  }
}

TEST(scheduler_speculative_pressure, preempted_drafters_resume_to_the_same_greedy_output) {
  for (const uint32_t seed : {3u, 4u}) {
    const auto work = workload(seed);
    for (const bool caching : {false, true}) {
      const std::string what = "seed " + std::to_string(seed) + (caching ? " cache on" : " cache off");
      // 40 blocks of 4 = 160 slots for 8 running sequences of 50 to 190 tokens: preemption.
      const run_result off = run(work, false, false, caching, 40);
      const run_result on = run(work, true, false, caching, 40);
      const run_result governed = run(work, true, true, caching, 40);
      expect_exact_outputs(work, off, what + " spec off");
      expect_exact_outputs(work, on, what + " spec on");
      expect_exact_outputs(work, governed, what + " spec with the governor");
      EXPECT_EQ(off.totals.n_tokens_drafted, 0u);
      EXPECT_GT(on.totals.n_preemptions, 0u) << what;
      EXPECT_GT(on.n_preempted_drafters, 0) << what << ": no sequence was preempted after drafting";
      EXPECT_GT(on.totals.n_tokens_accepted, 50u) << what;
      EXPECT_LT(on.totals.n_tokens_accepted, on.totals.n_tokens_drafted) << what << ": some drafts must be rejected";
      if (caching) {
        EXPECT_GT(on.n_prefix_hit, 0u) << what;
      }
    }
  }
}

// No preemption (a pool large enough), so the later requests find every
// block of their earlier twin's prompt and output in the cache: blocks whose
// slots drafts wrote, accepted or rejected. The cache must give them only
// accepted tokens: the same outputs as with the cache off, and hits that
// reach into the generated part.
TEST(scheduler_speculative_pressure, cached_blocks_written_by_drafts_hold_only_accepted_tokens) {
  for (const uint32_t seed : {5u, 6u, 7u}) {
    const auto work = workload(seed);
    const std::string what = "seed " + std::to_string(seed);
    const run_result cached = run(work, true, false, true, 512);
    const run_result plain = run(work, true, false, false, 512);
    expect_exact_outputs(work, cached, what + " cache on");
    expect_exact_outputs(work, plain, what + " cache off");
    EXPECT_EQ(cached.totals.n_preemptions, 0u);
    EXPECT_GT(cached.totals.n_tokens_accepted, 50u) << what;
    EXPECT_LT(cached.totals.n_tokens_accepted, cached.totals.n_tokens_drafted) << what;
    // Each later request's cached tokens cover its twin's prompt and most of its output.
    for (request_id id = 12; id < 20; ++id) {
      const workload_request& twin = work[static_cast<size_t>(id - 12)];
      EXPECT_GT(cached.finished.at(id).n_tokens_cached, static_cast<int32_t>(twin.prompt.size()) + 8)
          << what << ": seq " << id << " did not reuse its twin's generated blocks";
    }
  }
}

}  // namespace
}  // namespace cortex
