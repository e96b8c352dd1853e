// request_slots (the scheduler actor's per-request bookkeeping) over a real
// scheduler_core: one started note and one sampler open per request, prefill
// done told once, samplers closed with the next step after a finish, errors
// keep their code, a session that ended is not told again, duplicate ids.
// Sessions are ints here (0 = ended).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "actors/scheduler/request_slots.hpp"
#include "tests/support/engine_configs.hpp"

namespace cortex {
namespace {

using slots_t = request_slots<int>;

sequence_admission admission_of(request_id rid, std::vector<int32_t> prompt, uint64_t seed) {
  sequence_admission a;
  a.rid = rid;
  a.tokens_prompt = std::move(prompt);
  a.params.max_tokens = 3;
  a.params.temperature = 0.5f;
  a.seed = seed;
  a.n_logprobs = 1;
  return a;
}

struct fixture {
  kv_cache_manager kv{testing::kv_cfg(16, 4, true)};
  scheduler_core core{testing::sched_cfg(64, 4), kv};
  slots_t slots;

  void admit(request_id rid, int session, std::vector<int32_t> prompt) {
    seq_request req;
    req.rid = rid;
    req.tokens_prompt = prompt;
    req.max_tokens = 3;
    ASSERT_TRUE(core.add(req).is_ok());
    ASSERT_TRUE(slots.add(rid, session, admission_of(rid, std::move(prompt), 100 + rid)).is_ok());
  }
  // One token per sampling entry, as the executor would.
  std::vector<sampled_output> outputs_for(const sched_plan& plan, int32_t token) const {
    std::vector<sampled_output> out;
    for (const auto& e : plan.entries) {
      if (!e.sample) continue;
      sampled_output o;
      o.rid = e.rid;
      o.token = token;
      out.push_back(o);
    }
    return out;
  }
  std::vector<sched_sampled> sampled_of(const std::vector<sampled_output>& outs) const {
    std::vector<sched_sampled> s;
    for (const auto& o : outs) s.push_back({o.rid, o.token, false});
    return s;
  }
};

TEST(request_slots, a_live_rid_is_refused_as_internal) {
  slots_t slots;
  ASSERT_TRUE(slots.add(5, 50, admission_of(5, {1, 2}, 1)).is_ok());
  const status again = slots.add(5, 51, admission_of(5, {3}, 2));
  EXPECT_EQ(again.code, errc::internal);
  EXPECT_NE(again.message.find("5"), std::string::npos) << again.message;
  EXPECT_EQ(slots.size(), 1u);
}

TEST(request_slots, first_step_opens_and_starts_once_then_prefill_done_once) {
  fixture f;
  f.admit(1, 10, {1, 2, 3, 4, 5});
  f.admit(2, 20, {7, 8});
  sched_plan plan = f.core.schedule();
  ASSERT_EQ(plan.entries.size(), 2u);
  auto start = f.slots.begin_step(plan, f.core);
  ASSERT_EQ(start.started.size(), 2u);
  ASSERT_EQ(start.opens.size(), 2u);
  EXPECT_EQ(start.started[0].first, 10);
  EXPECT_TRUE(start.started[0].second.started);
  EXPECT_EQ(start.started[0].second.rid, 1u);
  EXPECT_EQ(start.opens[0].rid, 1u);
  EXPECT_EQ(start.opens[0].seed, 101u);
  EXPECT_EQ(start.opens[0].tokens_prompt, (std::vector<int32_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(start.opens[1].n_logprobs, 1u);
  EXPECT_FLOAT_EQ(start.opens[1].params.temperature, 0.5f);
  ASSERT_EQ(start.step.entries.size(), 2u);
  EXPECT_EQ(start.step.entries[0].tokens, plan.entries[0].tokens);
  EXPECT_EQ(start.step.entries[1].block_table, plan.entries[1].block_table);
  EXPECT_TRUE(start.step.closed.empty());

  auto outs = f.outputs_for(plan, 42);
  std::vector<embedding_output> no_embeddings;
  auto notes = f.slots.progress(plan, outs, no_embeddings, f.core);
  ASSERT_EQ(notes.size(), 2u);
  for (const auto& [session, u] : notes) {
    EXPECT_TRUE(u.prefill_done) << "rid " << u.rid;
    ASSERT_EQ(u.tokens.size(), 1u);
    EXPECT_EQ(u.tokens[0].token, 42);
    EXPECT_EQ(session, u.rid == 1 ? 10 : 20);
  }
  f.core.update(plan, f.sampled_of(outs));

  plan = f.core.schedule();  // decode step: nothing new to open or start
  ASSERT_EQ(plan.entries.size(), 2u);
  start = f.slots.begin_step(plan, f.core);
  EXPECT_TRUE(start.started.empty());
  EXPECT_TRUE(start.opens.empty());
  outs = f.outputs_for(plan, 43);
  notes = f.slots.progress(plan, outs, no_embeddings, f.core);
  ASSERT_EQ(notes.size(), 2u);
  for (const auto& [session, u] : notes) EXPECT_FALSE(u.prefill_done) << "told twice, rid " << u.rid;
}

TEST(request_slots, finish_closes_opened_samplers_with_the_next_step_and_keeps_error_codes) {
  fixture f;
  f.admit(1, 10, {1, 2, 3});
  sched_plan plan = f.core.schedule();
  f.slots.begin_step(plan, f.core);  // rid 1 opened
  f.admit(2, 20, {4, 5});           // never scheduled: no sampler to close
  f.core.abort_step(plan);          // rid 1 ends with error (internal)
  ASSERT_TRUE(f.core.finish(2, finish_reason::cancelled));
  const auto notes = f.slots.finish(f.core.take_finished());
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0].session, 10);
  EXPECT_EQ(notes[0].reason, finish_reason::error);
  EXPECT_EQ(notes[0].error.code, errc::internal);
  EXPECT_EQ(notes[0].error.message, seq_error_step_failed);
  EXPECT_EQ(notes[1].session, 20);
  EXPECT_EQ(notes[1].reason, finish_reason::cancelled);
  EXPECT_TRUE(notes[1].error.is_ok());
  EXPECT_EQ(f.slots.size(), 0u);

  f.admit(3, 30, {6, 7});
  plan = f.core.schedule();
  const auto start = f.slots.begin_step(plan, f.core);
  EXPECT_EQ(start.step.closed, std::vector<request_id>{1});  // only the opened one, once
  EXPECT_TRUE(f.slots.begin_step(plan, f.core).step.closed.empty());
}

TEST(request_slots, a_finish_error_keeps_its_code_and_message) {
  seq_finished rec;
  rec.rid = 4;
  rec.reason = finish_reason::error;
  rec.error = fail(errc::invalid_param, seq_error_kv_capacity);
  slots_t slots;
  ASSERT_TRUE(slots.add(4, 40, admission_of(4, {1}, 1)).is_ok());
  const auto notes = slots.finish({rec});
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].error.code, errc::invalid_param);
  EXPECT_EQ(notes[0].error.message, seq_error_kv_capacity);
}

TEST(request_slots, a_session_that_ended_is_not_told_again) {
  fixture f;
  f.admit(1, 10, {1, 2, 3});
  f.slots.forget_session(1);
  ASSERT_TRUE(f.core.finish(1, finish_reason::stop));
  const auto notes = f.slots.finish(f.core.take_finished());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].session, 0);  // the actor sends nothing to an empty handle
  // Records of unknown requests are skipped.
  seq_finished unknown;
  unknown.rid = 77;
  EXPECT_TRUE(f.slots.finish({unknown}).empty());
}

TEST(request_slots, ids_lists_every_live_request) {
  fixture f;
  f.admit(3, 30, {1});
  f.admit(9, 90, {2});
  std::vector<request_id> ids = f.slots.ids();
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<request_id>{3, 9}));
  EXPECT_TRUE(f.slots.contains(9));
  EXPECT_FALSE(f.slots.contains(4));
  ASSERT_NE(f.slots.admission(9), nullptr);
  EXPECT_EQ(f.slots.admission(9)->tokens_prompt, std::vector<int32_t>{2});
  EXPECT_EQ(f.slots.admission(4), nullptr);
}

}  // namespace
}  // namespace cortex
