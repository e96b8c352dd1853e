// Speculative decoding by prompt lookup through the real scheduler and
// executor on stories260K: greedy output is token for token the output
// without it (alone and batched), drafts do get accepted on prompts that
// repeat themselves, max_tokens / stop tokens / stop strings cut the
// accepted tokens, logprobs come one per token, and a grammar still holds.
// Expected outputs are the engine's own non-speculative runs (the property
// is equality), and first principles for the cuts.
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

#include "tests/support/golden.hpp"
#include "tests/support/runtime_harness.hpp"

namespace cortex {
namespace {

using testing::greedy_request;
using testing::runtime_fixture;

runtime_config stories_config(int spec_max_draft = 0) {
  runtime_config c;
  c.model_path = testing::shared_dir() + "/models/stories260K.gguf";
  c.threads = 2;
  c.kv_blocks = 1024;
  c.kv_type = kernels::kv_type::f32;
  c.max_batch_tokens = 256;
  c.spec_ngram = 2;
  c.spec_max_draft = spec_max_draft;
  c.log_level = std::getenv("CORTEX_TEST_LOG") ? std::getenv("CORTEX_TEST_LOG") : "warn";
  return c;
}

// Prompts that repeat themselves, so the drafter finds its n-grams.
std::vector<std::string> repeating_prompts() {
  const std::vector<std::string> seeds = {
      "Once upon a time", "Lily and Tom went to the park", "The little dog was sad because",
      "One day, a boy named Tim found a big red ball.", "The sun was", "Mom said", "A cat and a bird",
      "There was a big tree", "Ben liked to", "The girl", "Sam and his friend", "It was a rainy day",
      "The old man", "Sue found a box", "They played", "The boy was happy"};
  std::vector<std::string> out;
  for (const auto& s : seeds) out.push_back(s + ". " + s + ". " + s);
  return out;
}

generation_request spec_request(const std::string& id, const std::string& prompt, uint32_t max_tokens, int32_t max_draft) {
  generation_request r = greedy_request(id, prompt, max_tokens);
  r.want_token_ids = true;
  r.params.spec_given = true;
  r.params.spec_ngram = 2;
  r.params.spec_max_draft = max_draft;
  return r;
}

std::vector<int32_t> run_alone(runtime_fixture& fx, generation_request req) {
  const std::string id = req.client_id;
  fx.submit(std::move(req));
  EXPECT_TRUE(fx.log().wait_done({id})) << id;
  return fx.log().get(id).token_ids();
}

TEST(speculative_runtime, greedy_is_identical_alone_and_batched_on_16_prompts) {
  // Every draft found is verified (no governor), so the equality covers many accepted and rejected drafts.
  runtime_config cfg = stories_config();
  cfg.spec_adaptive = false;
  runtime_fixture fx(cfg);
  ASSERT_TRUE(fx.ok()) << fx.error();
  const auto prompts = repeating_prompts();
  std::vector<std::vector<int32_t>> plain(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    plain[i] = run_alone(fx, spec_request("plain" + std::to_string(i), prompts[i], 48 + 4 * i, 0));
    ASSERT_EQ(plain[i].size(), 48 + 4 * i) << "the model stopped early: pick a longer-running prompt";
  }
  uint64_t drafted = 0, accepted = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::string id = "spec_alone" + std::to_string(i);
    EXPECT_EQ(run_alone(fx, spec_request(id, prompts[i], 48 + 4 * i, 8)), plain[i]) << "prompt " << i << " alone";
    const auto& t = fx.log().get(id).finished->timings;
    drafted += t.spec_drafted_tokens;
    accepted += t.spec_accepted_tokens;
    EXPECT_LE(t.spec_accepted_tokens, t.spec_drafted_tokens);
  }
  EXPECT_GT(accepted, plain.size() * 8) << "drafts were hardly ever accepted (" << accepted << " of " << drafted << ")";
  std::vector<std::string> ids;
  for (size_t i = 0; i < prompts.size(); ++i) {
    ids.push_back("spec_batch" + std::to_string(i));
    fx.submit(spec_request(ids.back(), prompts[i], 48 + 4 * i, 8));
  }
  ASSERT_TRUE(fx.log().wait_done(ids));
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto r = fx.log().get(ids[i]);
    EXPECT_EQ(r.n_terminal, 1);
    EXPECT_EQ(r.token_ids(), plain[i]) << "prompt " << i << " batched";
  }
  const engine_stats s = fx.stats();
  EXPECT_GE(s.spec_drafted_tokens, drafted);
  EXPECT_GE(s.spec_accepted_tokens, accepted);
  EXPECT_LE(s.spec_accepted_tokens, s.spec_drafted_tokens);
}

TEST(speculative_runtime, server_flag_turns_it_on_and_a_request_can_turn_it_off) {
  runtime_fixture fx(stories_config(8));
  ASSERT_TRUE(fx.ok()) << fx.error();
  const std::string prompt = repeating_prompts()[0];
  generation_request on = greedy_request("on", prompt, 64);
  on.want_token_ids = true;
  const auto with = run_alone(fx, on);
  EXPECT_GT(fx.log().get("on").finished->timings.spec_drafted_tokens, 0u);
  const auto without = run_alone(fx, spec_request("off", prompt, 64, 0));
  EXPECT_EQ(fx.log().get("off").finished->timings.spec_drafted_tokens, 0u);
  EXPECT_EQ(with, without);
}

TEST(speculative_runtime, max_tokens_and_stops_cut_the_accepted_tokens) {
  runtime_fixture fx(stories_config());
  ASSERT_TRUE(fx.ok()) << fx.error();
  const std::string prompt = repeating_prompts()[1];
  const auto plain = run_alone(fx, spec_request("plain", prompt, 80, 0));
  ASSERT_EQ(plain.size(), 80u);
  // Every length: exactly max_tokens tokens, a prefix of the plain output,
  // finish reason length, however many drafts the last step accepted.
  for (uint32_t n = 1; n <= 40; ++n) {
    const std::string id = "len" + std::to_string(n);
    const auto got = run_alone(fx, spec_request(id, prompt, n, 8));
    EXPECT_EQ(got, std::vector<int32_t>(plain.begin(), plain.begin() + n)) << "max_tokens " << n;
    EXPECT_EQ(fx.log().get(id).finished->reason, finish_reason::length);
  }
  // A stop token in the middle of accepted drafts: the output ends at its
  // first occurrence (included), nothing after it arrives.
  for (size_t at : {20u, 33u, 57u}) {
    const int32_t stop_tok = plain[at];
    size_t first = 0;
    while (plain[first] != stop_tok) ++first;
    generation_request r = spec_request("stop" + std::to_string(at), prompt, 80, 8);
    r.params.stop_token_ids = {stop_tok};
    const auto got = run_alone(fx, r);
    EXPECT_EQ(got, std::vector<int32_t>(plain.begin(), plain.begin() + static_cast<long>(first) + 1)) << "stop token " << stop_tok;
    EXPECT_EQ(fx.log().get(r.client_id).finished->reason, finish_reason::stop);
  }
  // A stop string: the text ends before it, as without speculation.
  const std::string text = fx.log().get("plain").text();
  const std::string stop = text.substr(text.size() / 2, 6);
  generation_request a = spec_request("str_plain", prompt, 80, 0);
  a.params.stop = {stop};
  generation_request b = spec_request("str_spec", prompt, 80, 8);
  b.params.stop = {stop};
  run_alone(fx, a);
  run_alone(fx, b);
  EXPECT_EQ(fx.log().get("str_spec").text(), fx.log().get("str_plain").text());
  EXPECT_EQ(fx.log().get("str_spec").text(), text.substr(0, text.find(stop)));
}

TEST(speculative_runtime, logprobs_come_one_per_token_and_match) {
  runtime_fixture fx(stories_config());
  ASSERT_TRUE(fx.ok()) << fx.error();
  const std::string prompt = repeating_prompts()[2];
  generation_request a = spec_request("lp_plain", prompt, 60, 0);
  a.n_logprobs = 3;
  generation_request b = spec_request("lp_spec", prompt, 60, 8);
  b.n_logprobs = 3;
  run_alone(fx, a);
  run_alone(fx, b);
  std::vector<token_logprob> la, lb;
  for (const auto& c : fx.log().get("lp_plain").chunks) la.insert(la.end(), c.logprobs.begin(), c.logprobs.end());
  for (const auto& c : fx.log().get("lp_spec").chunks) lb.insert(lb.end(), c.logprobs.begin(), c.logprobs.end());
  ASSERT_EQ(la.size(), 60u);
  ASSERT_EQ(lb.size(), la.size());
  EXPECT_GT(fx.log().get("lp_spec").finished->timings.spec_accepted_tokens, 0u);
  for (size_t i = 0; i < la.size(); ++i) {
    EXPECT_EQ(lb[i].id, la[i].id) << i;
    EXPECT_NEAR(lb[i].lp, la[i].lp, 1e-3) << i;
    EXPECT_EQ(lb[i].top_ids, la[i].top_ids) << i;
  }
}

TEST(speculative_runtime, a_grammar_holds_with_drafts_greedy_and_sampled) {
  runtime_fixture fx(stories_config());
  ASSERT_TRUE(fx.ok()) << fx.error();
  // Lowercase words separated by single spaces, ending with a period: the
  // repeating prompt pushes drafts the grammar partly forbids (capitals, commas).
  const std::string g = R"(root ::= [a-z]+ (" " [a-z]+)* ".")";
  const std::regex doc("[a-z]+( [a-z]+)*\\.");
  for (int k = 0; k < 6; ++k) {
    generation_request r = spec_request("g" + std::to_string(k), repeating_prompts()[static_cast<size_t>(k)], 60, 8);
    r.params.grammar = g;
    if (k % 2 == 1) {
      r.params.temperature = 1.0f;
      r.params.seed = 42 + static_cast<uint64_t>(k);
      r.params.has_seed = true;
    }
    run_alone(fx, r);
    const auto rec = fx.log().get(r.client_id);
    ASSERT_TRUE(rec.finished);
    const std::string text = rec.text();
    if (rec.finished->reason == finish_reason::stop) {
      EXPECT_TRUE(std::regex_match(text, doc)) << "'" << text << "'";
    } else {
      EXPECT_TRUE(std::regex_match(text + "a.", doc)) << "a prefix that cannot continue: '" << text << "'";
    }
  }
}

}  // namespace
}  // namespace cortex
