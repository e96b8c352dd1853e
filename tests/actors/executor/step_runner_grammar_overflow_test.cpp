// A grammar whose open parses multiply with the output (each letter doubles
// them) is refused by the executor once its state passes
// grammar_matcher::max_open_stacks: that request gets an invalid_param
// failure of its own and no token, the step does not fail, and the plain
// request beside it in the same steps goes on. Without the bound each
// step's mask would cost twice the last. On stories260K.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "actors/executor/step_runner.hpp"
#include "grammar/grammar_matcher.hpp"
#include "model/model.hpp"
#include "tests/actors/stories_model.hpp"

namespace cortex {
namespace {

using tokens = std::vector<int32_t>;

constexpr int k_block_size = 16;

executor_config arena() {
  executor_config c;
  c.n_threads = 1;
  c.n_kv_blocks = 32;
  c.block_size = k_block_size;
  c.kv_type = kernels::kv_type::f32;
  return c;
}

step_entry entry(request_id rid, const tokens& known, int32_t n_computed) {
  step_entry e;
  e.rid = rid;
  e.pos0 = n_computed;
  for (int32_t b = 0; b * k_block_size < static_cast<int32_t>(known.size()); ++b) e.block_table.push_back(b + (rid == 1 ? 0 : 16));
  e.tokens.assign(known.begin() + n_computed, known.end());
  e.sample = true;
  return e;
}

// Request 1, greedy under a ::= letter a "." | letter a "!" | "": after n
// letters, 2^n stacks (one per choice of closers still to come).
sequence_open multiplying_request() {
  sequence_open g;
  g.rid = 1;
  g.params.grammar = "root ::= a\na ::= [a-z ] a \".\" | [a-z ] a \"!\" | \"\"";
  g.params.temperature = 0.0f;
  g.tokens_prompt = {1, 403};
  return g;
}

TEST(step_runner_grammar_overflow, multiplying_parses_end_only_that_request) {
  step_runner r(testing_support::stories_model(), arena());
  const sequence_open g = multiplying_request();
  r.open(g);
  sequence_open plain = g;
  plain.rid = 2;
  plain.params.grammar.clear();
  r.open(plain);

  tokens known1 = g.tokens_prompt, known2 = plain.tokens_prompt;
  int32_t done1 = 0, done2 = 0;
  bool refused = false;
  uint64_t step_id = 1;
  for (int i = 0; i < 60 && !refused; ++i) {
    engine_step s;
    s.step_id = step_id++;
    s.entries.push_back(entry(1, known1, done1));
    s.entries.push_back(entry(2, known2, done2));
    const engine_step_result res = r.run(s);
    ASSERT_FALSE(res.failed()) << res.error.message;
    bool got1 = false, got2 = false;
    for (const auto& o : res.outputs) {
      (o.rid == 1 ? got1 : got2) = true;
      (o.rid == 1 ? known1 : known2).push_back(o.token);
    }
    ASSERT_TRUE(got2) << "the plain request must go on at step " << i;
    done2 = static_cast<int32_t>(known2.size()) - 1;
    if (!res.failures.empty()) {
      ASSERT_EQ(res.failures.size(), 1u);
      EXPECT_EQ(res.failures[0].rid, 1u);
      EXPECT_EQ(res.failures[0].error.code, errc::invalid_param);
      EXPECT_NE(res.failures[0].error.message.find("parses open"), std::string::npos) << res.failures[0].error.message;
      EXPECT_FALSE(got1) << "a refused request gets no token";
      refused = true;
    } else {
      ASSERT_TRUE(got1) << "step " << i;
      done1 = static_cast<int32_t>(known1.size()) - 1;
    }
  }
  EXPECT_TRUE(refused) << "13 letters open 8192 parses; 60 steps wrote " << known1.size() - 2 << " tokens";
}

// A verify step stops at the draft that carries the state past the bound:
// no mask is computed beyond it (each further one would cost twice the
// last), the drafts up to it stand, and the next step refuses the request.
TEST(step_runner_grammar_overflow, a_verify_step_stops_at_the_bound) {
  const sequence_open g = multiplying_request();
  // The constrained greedy tokens up to the refusal, one step each.
  tokens greedy;
  {
    step_runner r(testing_support::stories_model(), arena());
    r.open(g);
    tokens known = g.tokens_prompt;
    int32_t done = 0;
    uint64_t step_id = 1;
    for (int i = 0; i < 60; ++i) {
      engine_step s;
      s.step_id = step_id++;
      s.entries.push_back(entry(1, known, done));
      const engine_step_result res = r.run(s);
      ASSERT_FALSE(res.failed()) << res.error.message;
      if (!res.failures.empty()) break;
      ASSERT_EQ(res.outputs.size(), 1u);
      done = static_cast<int32_t>(known.size());
      known.push_back(res.outputs[0].token);
      greedy.push_back(res.outputs[0].token);
    }
  }
  ASSERT_GE(greedy.size(), 2u);
  ASSERT_LT(greedy.size(), 60u) << "the grammar never passed the bound";
  // The same tokens as drafts of one verify step after the prompt: greedy
  // accepts each; the last one passes the bound, so nothing is sampled
  // after it.
  step_runner r(testing_support::stories_model(), arena());
  r.open(g);
  tokens known = g.tokens_prompt;
  engine_step pre;
  pre.step_id = 1;
  pre.entries.push_back(entry(1, {known[0]}, 0));
  pre.entries[0].sample = false;
  ASSERT_FALSE(r.run(pre).failed());
  tokens verify{known[1]};
  verify.insert(verify.end(), greedy.begin(), greedy.end());
  engine_step s;
  s.step_id = 2;
  s.entries.push_back(entry(1, tokens{known[0]}, 0));
  s.entries[0].pos0 = 1;
  s.entries[0].tokens = verify;
  s.entries[0].n_draft = static_cast<int32_t>(greedy.size());
  s.entries[0].block_table.clear();
  for (int32_t b = 0; b * k_block_size < 1 + static_cast<int32_t>(verify.size()); ++b) s.entries[0].block_table.push_back(b);
  const engine_step_result res = r.run(s);
  ASSERT_FALSE(res.failed()) << res.error.message;
  EXPECT_TRUE(res.failures.empty());
  tokens out;
  for (const auto& o : res.outputs) out.push_back(o.token);
  EXPECT_EQ(out, greedy) << "every draft accepted, and no token sampled past the bound";
}

}  // namespace
}  // namespace cortex
