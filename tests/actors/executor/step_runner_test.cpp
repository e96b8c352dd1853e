// step_runner on the real stories260K model: every bad plan (block ids
// outside the arena, a table that does not cover its positions, token ids
// outside the vocabulary, empty entries, a sample without a sampler) fails
// its step with an internal error that names the problem; a failed step
// leaves samplers, histories and the K/V arena as they were, so the run
// continues exactly as a reference run that never saw the failure.
#include <gtest/gtest.h>

#include <cctype>
#include <memory>
#include <string>
#include <vector>

#include "actors/executor/step_runner.hpp"
#include "model/model.hpp"
#include "text/tokenizer.hpp"
#include "tests/actors/stories_model.hpp"

namespace cortex {
namespace {

constexpr int k_block_size = 16;
constexpr int k_n_blocks = 8;
constexpr int32_t k_n_vocab = 512;  // stories260K

std::shared_ptr<const model> stories() { return testing_support::stories_model(); }

executor_config small_arena() {
  executor_config c;
  c.n_threads = 1;
  c.n_kv_blocks = k_n_blocks;
  c.block_size = k_block_size;
  return c;
}

// A sampler whose output depends on its RNG (temperature) and on its history
// (repetition penalty, and a frequency penalty that counts repeats), so a
// changed state shows in the tokens or their log-probabilities.
sequence_open open_of(request_id rid, std::vector<int32_t> prompt, uint64_t seed) {
  sequence_open o;
  o.rid = rid;
  o.params.temperature = 0.9f;
  o.params.top_k = 40;
  o.params.repetition_penalty = 1.3f;
  o.params.frequency_penalty = 0.8f;
  o.seed = seed;
  o.n_logprobs = 2;
  o.tokens_prompt = std::move(prompt);
  return o;
}

step_entry entry(request_id rid, std::vector<int32_t> tokens, int32_t pos0, std::vector<int32_t> blocks, bool sample) {
  step_entry e;
  e.rid = rid;
  e.tokens = std::move(tokens);
  e.pos0 = pos0;
  e.block_table = std::move(blocks);
  e.sample = sample;
  return e;
}

// Two sequences in blocks {0, 1} and {2, 3}: prefill both, then decode each
// step with the token it sampled last.
struct two_sequences {
  const std::vector<int32_t> prompt_a{1, 400, 86, 31, 9};
  const std::vector<int32_t> prompt_b{1, 70, 300, 12};
  std::vector<int32_t> known_a = prompt_a, known_b = prompt_b;
  uint64_t next_step = 1;

  void open(step_runner& r) const {
    r.open(open_of(1, prompt_a, 11));
    r.open(open_of(2, prompt_b, 22));
  }
  engine_step prefill() {
    engine_step s;
    s.step_id = next_step++;
    s.entries = {entry(1, prompt_a, 0, {0, 1}, true), entry(2, prompt_b, 0, {2, 3}, true)};
    return s;
  }
  engine_step decode() {
    engine_step s;
    s.step_id = next_step++;
    const auto a = static_cast<int32_t>(known_a.size()) - 1, b = static_cast<int32_t>(known_b.size()) - 1;
    s.entries = {entry(1, {known_a.back()}, a, {0, 1}, true), entry(2, {known_b.back()}, b, {2, 3}, true)};
    return s;
  }
  // Appends the sampled tokens; false if the step did not give one per sequence.
  bool apply(const engine_step_result& r) {
    if (r.failed() || r.outputs.size() != 2) return false;
    for (const auto& o : r.outputs) (o.rid == 1 ? known_a : known_b).push_back(o.token);
    return true;
  }
};

void expect_same_outputs(const engine_step_result& got, const engine_step_result& want, int step) {
  ASSERT_FALSE(got.failed()) << "step " << step << ": " << got.error.message;
  ASSERT_EQ(got.outputs.size(), want.outputs.size()) << "step " << step;
  for (size_t i = 0; i < got.outputs.size(); ++i) {
    EXPECT_EQ(got.outputs[i].rid, want.outputs[i].rid) << "step " << step;
    EXPECT_EQ(got.outputs[i].token, want.outputs[i].token) << "step " << step << " rid " << got.outputs[i].rid;
    EXPECT_EQ(got.outputs[i].logprob.lp, want.outputs[i].logprob.lp) << "step " << step;
    EXPECT_EQ(got.outputs[i].logprob.top_ids, want.outputs[i].logprob.top_ids) << "step " << step;
  }
}

// Runs `n_decode` decode steps on `r` and on a fresh reference runner that
// replays only the successful history; `r` has already run `seq.prefill()`
// (and maybe failed steps) as the caller arranged.
void expect_continues_like_reference(step_runner& r, two_sequences seq_r, int n_decode) {
  step_runner ref(stories(), small_arena());
  two_sequences seq_ref;
  seq_ref.open(ref);
  ASSERT_TRUE(seq_ref.apply(ref.run(seq_ref.prefill())));
  ASSERT_EQ(seq_ref.known_a, seq_r.known_a);
  ASSERT_EQ(seq_ref.known_b, seq_r.known_b);
  for (int i = 0; i < n_decode; ++i) {
    const engine_step_result want = ref.run(seq_ref.decode());
    const engine_step_result got = r.run(seq_r.decode());
    expect_same_outputs(got, want, i);
    ASSERT_TRUE(seq_ref.apply(want));
    ASSERT_TRUE(seq_r.apply(got));
  }
  EXPECT_EQ(seq_r.known_a, seq_ref.known_a);
}

struct bad_plan {
  const char* name;
  step_entry bad;
  const char* mentions;
};

TEST(step_runner, bad_plans_fail_with_a_named_error_and_corrupt_nothing) {
  ASSERT_TRUE(stories());
  ASSERT_EQ(stories()->hparams().n_vocab, k_n_vocab);
  const std::vector<bad_plan> cases = {
      {"block id past the arena", entry(1, {5}, 5, {0, k_n_blocks}, false), "block id 8 outside the arena"},
      {"negative block id", entry(1, {5}, 5, {-1}, false), "block id -1 outside the arena"},
      {"table too short", entry(1, std::vector<int32_t>(20, 5), 0, {4}, false), "does not cover its positions"},
      {"negative pos0", entry(1, {5}, -1, {4}, false), "does not cover its positions"},
      {"token id = n_vocab", entry(1, {k_n_vocab}, 5, {0}, false), "token id 512 outside the vocabulary"},
      {"negative token id", entry(1, {-3}, 5, {0}, false), "token id -3 outside the vocabulary"},
      {"empty entry", entry(1, {}, 5, {0}, false), "empty step entry for request 1"},
      {"sample without a sampler", entry(9, {5}, 0, {5}, true), "no sampler open for request 9"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    step_runner r(stories(), small_arena());
    two_sequences seq;
    seq.open(r);
    ASSERT_TRUE(seq.apply(r.run(seq.prefill())));
    // A good entry that samples next to the bad one: the whole step fails,
    // and neither the good entry's K/V nor its sampler moves.
    engine_step step = seq.decode();
    step.entries[1] = c.bad;
    const engine_step_result res = r.run(step);
    ASSERT_TRUE(res.failed());
    EXPECT_EQ(res.error.code, errc::internal);
    EXPECT_NE(res.error.message.find(c.mentions), std::string::npos) << res.error.message;
    EXPECT_TRUE(res.outputs.empty());
    EXPECT_EQ(res.step_id, step.step_id);
    EXPECT_EQ(r.n_open(), 2u);
    expect_continues_like_reference(r, seq, 3);
  }
}

TEST(step_runner, an_injected_failure_leaves_samplers_and_histories_unchanged) {
  ASSERT_TRUE(stories());
  step_runner r(stories(), small_arena());
  two_sequences seq;
  seq.open(r);
  ASSERT_TRUE(seq.apply(r.run(seq.prefill())));
  r.fail_next(2);
  for (int i = 0; i < 2; ++i) {
    const engine_step_result res = r.run(seq.decode());
    ASSERT_TRUE(res.failed());
    EXPECT_EQ(res.error.code, errc::internal);
    EXPECT_NE(res.error.message.find("injected"), std::string::npos) << res.error.message;
    EXPECT_TRUE(res.outputs.empty());
  }
  expect_continues_like_reference(r, seq, 4);
}

TEST(step_runner, closed_samplers_are_dropped_before_the_step) {
  ASSERT_TRUE(stories());
  step_runner r(stories(), small_arena());
  two_sequences seq;
  seq.open(r);
  ASSERT_TRUE(seq.apply(r.run(seq.prefill())));
  engine_step step = seq.decode();
  step.closed = {2};
  const engine_step_result res = r.run(step);  // entry 2 samples, but its sampler was just closed
  ASSERT_TRUE(res.failed());
  EXPECT_NE(res.error.message.find("no sampler open for request 2"), std::string::npos) << res.error.message;
  EXPECT_EQ(r.n_open(), 1u);
  step.closed.clear();
  step.entries.pop_back();
  const engine_step_result ok = r.run(step);  // the runner stays usable
  ASSERT_FALSE(ok.failed()) << ok.error.message;
  ASSERT_EQ(ok.outputs.size(), 1u);
  EXPECT_EQ(ok.outputs[0].rid, 1u);
  EXPECT_GE(ok.outputs[0].token, 0);
  EXPECT_LT(ok.outputs[0].token, k_n_vocab);
}

// A sequence with a grammar samples only what the grammar allows, ends with
// an end-of-generation token once it completes, and a failed step does not
// advance its grammar; the unconstrained sequence beside it is untouched.
TEST(step_runner, a_grammar_constrains_its_sequence_only) {
  ASSERT_TRUE(stories());
  const tokenizer& tok = stories()->tokenizer();
  step_runner r(stories(), small_arena());
  two_sequences seq;
  sequence_open a = open_of(1, seq.prompt_a, 11);
  a.params.grammar = "root ::= \"{\\\"n\\\": \" [0-9] [0-9]? \"}\"";  // {"n": 7} or {"n": 42}
  r.open(a);
  r.open(open_of(2, seq.prompt_b, 22));
  ASSERT_TRUE(seq.apply(r.run(seq.prefill())));
  bool ended = false;
  for (int i = 0; i < 24 && !ended; ++i) {
    if (i == 3) {
      r.fail_next(1);
      ASSERT_TRUE(r.run(seq.decode()).failed());  // nothing moves
    }
    const engine_step_result res = r.run(seq.decode());
    ASSERT_TRUE(seq.apply(res)) << res.error.message;
    ended = tok.is_eog(seq.known_a.back());
  }
  ASSERT_TRUE(ended) << "the grammar's document never ended";
  std::string text;
  for (size_t k = seq.prompt_a.size(); k + 1 < seq.known_a.size(); ++k) text += tok.rendered_piece(seq.known_a[k]);
  EXPECT_TRUE(text == "{\"n\": " + text.substr(6, text.size() - 7) + "}" && text.size() >= 8 && text.size() <= 9 &&
              std::isdigit(static_cast<unsigned char>(text[6])))
      << text;
}

// A logit_bias that bans every token the grammar allows leaves only the
// end of generation (the request ends with a prefix), never a token outside
// the grammar.
TEST(step_runner, a_bias_banning_what_the_grammar_needs_ends_the_sequence) {
  ASSERT_TRUE(stories());
  const tokenizer& tok = stories()->tokenizer();
  step_runner r(stories(), small_arena());
  two_sequences seq;
  sequence_open a = open_of(1, seq.prompt_a, 11);
  a.params.grammar = "root ::= \"{}\"";
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    if (!tok.rendered_piece(id).empty() && tok.rendered_piece(id)[0] == '{') {
      a.params.logit_bias_ids.push_back(id);
      a.params.logit_bias_values.push_back(-100.0f);
    }
  }
  ASSERT_FALSE(a.params.logit_bias_ids.empty());
  r.open(a);
  r.open(open_of(2, seq.prompt_b, 22));
  ASSERT_TRUE(seq.apply(r.run(seq.prefill())));
  EXPECT_TRUE(tok.is_eog(seq.known_a.back())) << seq.known_a.back();
}

}  // namespace
}  // namespace cortex
