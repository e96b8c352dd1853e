// scheduler_core::cut_sampled: a step's answers grouped per sequence and cut
// after the token that ends the sequence (a stop token, or max_tokens), so
// nothing past the end reaches update() or a session.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "actors/scheduler/scheduler_core.hpp"
#include "tests/support/engine_configs.hpp"

namespace cortex {
namespace {

using testing::kv_cfg;
using testing::sched_cfg;
using v = std::vector<int32_t>;

// Sequence 1, a 4-token prompt, prefilled and answered with token 4: one
// generated token, `max_tokens` at most.
struct cut_harness {
  explicit cut_harness(int32_t max_tokens) : kv(kv_cfg(32, 4, true)), core(sched_cfg(64, 8), kv) {
    seq_request r;
    r.rid = 1;
    r.tokens_prompt = {1, 2, 3, 5};
    r.max_tokens = max_tokens;
    EXPECT_TRUE(core.add(r));
    const sched_plan p = core.schedule();
    EXPECT_EQ(p.entries.size(), 1u);
    core.update(p, {{1, 4, false, {}}});
    EXPECT_EQ(core.find(1)->n_tokens_generated(), 1);
  }
  kv_cache_manager kv;
  scheduler_core core;
};

engine_step_result answers(std::vector<std::pair<request_id, int32_t>> tokens) {
  engine_step_result res;
  for (const auto& [rid, token] : tokens) res.outputs.push_back({rid, token, {}});
  return res;
}

v tokens_of(const engine_step_result& res) {
  v out;
  for (const sampled_output& o : res.outputs) out.push_back(o.token);
  return out;
}

TEST(scheduler_cut_sampled, a_stop_token_ends_a_speculative_answer_and_what_follows_is_dropped) {
  cut_harness h(100);
  engine_step_result res = answers({{1, 5}, {1, 6}, {1, 7}, {1, 8}});
  std::vector<std::pair<int32_t, uint32_t>> asked;  // (token, n_generated) the rule was asked about
  const auto sampled = h.core.cut_sampled(res, [&](request_id rid, int32_t token, uint32_t n_generated) {
    EXPECT_EQ(rid, 1u);
    asked.emplace_back(token, n_generated);
    return token == 6;
  });
  ASSERT_EQ(sampled.size(), 1u);
  EXPECT_EQ(sampled[0].rid, 1u);
  EXPECT_EQ(sampled[0].token, 5);
  EXPECT_EQ(sampled[0].more, (v{6}));
  EXPECT_TRUE(sampled[0].finished);
  EXPECT_EQ(tokens_of(res), (v{5, 6}));
  EXPECT_EQ(asked, (std::vector<std::pair<int32_t, uint32_t>>{{5, 2}, {6, 3}}));  // counts the token itself
}

TEST(scheduler_cut_sampled, max_tokens_ends_an_answer_by_length_not_as_stopped) {
  cut_harness h(3);  // one generated: two more
  engine_step_result res = answers({{1, 5}, {1, 6}, {1, 7}});
  const auto sampled = h.core.cut_sampled(res, [](request_id, int32_t, uint32_t) { return false; });
  ASSERT_EQ(sampled.size(), 1u);
  EXPECT_EQ(sampled[0].token, 5);
  EXPECT_EQ(sampled[0].more, (v{6}));
  EXPECT_FALSE(sampled[0].finished);  // update() ends it with length
  EXPECT_EQ(tokens_of(res), (v{5, 6}));
}

TEST(scheduler_cut_sampled, update_ends_a_cut_answer_with_the_reason_it_was_cut_for) {
  for (const bool by_stop_token : {true, false}) {
    cut_harness h(by_stop_token ? 100 : 2);
    const sched_plan p = h.core.schedule();
    ASSERT_EQ(p.entries.size(), 1u);
    engine_step_result res = answers({{1, 7}, {1, 8}});
    const auto sampled = h.core.cut_sampled(res, [&](request_id, int32_t token, uint32_t) { return by_stop_token && token == 7; });
    h.core.update(p, sampled);
    const auto finished = h.core.take_finished();
    ASSERT_EQ(finished.size(), 1u);
    EXPECT_EQ(finished[0].reason, by_stop_token ? finish_reason::stop : finish_reason::length);
    EXPECT_EQ(finished[0].n_tokens_generated, 2);  // 4 and 7: never 8
  }
}

TEST(scheduler_cut_sampled, sequences_are_grouped_and_unknown_ones_kept_as_they_are) {
  cut_harness h(100);
  engine_step_result res = answers({{1, 5}, {1, 6}, {9, 3}, {9, 4}});
  int n_asked = 0;
  const auto sampled = h.core.cut_sampled(res, [&](request_id rid, int32_t, uint32_t) {
    EXPECT_EQ(rid, 1u);  // sequence 9 is not the core's: its tokens are not judged
    ++n_asked;
    return false;
  });
  ASSERT_EQ(sampled.size(), 2u);
  EXPECT_EQ(sampled[0].rid, 1u);
  EXPECT_EQ(sampled[0].more, (v{6}));
  EXPECT_EQ(sampled[1].rid, 9u);
  EXPECT_EQ(sampled[1].token, 3);
  EXPECT_EQ(sampled[1].more, (v{4}));
  EXPECT_FALSE(sampled[1].finished);
  EXPECT_EQ(n_asked, 2);
  EXPECT_EQ(tokens_of(res), (v{5, 6, 3, 4}));
}

TEST(scheduler_cut_sampled, an_embedding_is_a_finished_answer_without_tokens) {
  cut_harness h(100);
  engine_step_result res;
  res.embeddings.push_back({7, {0.6f, 0.8f}});
  const auto sampled = h.core.cut_sampled(res, [](request_id, int32_t, uint32_t) { return false; });
  ASSERT_EQ(sampled.size(), 1u);
  EXPECT_EQ(sampled[0].rid, 7u);
  EXPECT_TRUE(sampled[0].finished);
  EXPECT_TRUE(sampled[0].more.empty());
}

}  // namespace
}  // namespace cortex
