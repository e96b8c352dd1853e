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

#include "tests/actors/stories_tokenizer.hpp"
#include "tests/support/golden.hpp"
#include "tests/support/runtime_harness.hpp"

namespace cortex {
namespace {

using testing::greedy_request;
using testing::runtime_fixture;

runtime_config stories_config(int spec_max_draft = 0) {
  runtime_config c;
  c.model_path = testing::stories260k_path();
  c.threads = 2;
  c.kv_blocks = 1024;
  c.kv_type = kernels::kv_type::f32;
  c.scheduler.max_batch_tokens = 256;
  c.scheduler.speculative.ngram = 2;
  c.scheduler.speculative.max_draft = spec_max_draft;
  // Every draft found is verified: the draft governor sizes drafts from
  // measured step times, so on a loaded machine it may draft nothing and
  // these tests would check nothing (logprobs_come_one_per_token_and_match
  // failed so, 1 run in 8, with 0 accepted). The governor has its own tests.
  c.scheduler.adaptive_drafts = false;
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

// A greedy request on prompt token ids that runs to max_tokens (ignore_eos).
generation_request token_request(const std::string& id, const std::vector<int32_t>& prompt, uint32_t max_tokens,
                                 int32_t max_draft) {
  generation_request r = spec_request(id, "", max_tokens, max_draft);
  r.prompt.clear();
  r.tokens = prompt;
  r.use_tokens = true;
  r.params.ignore_eos = true;
  return r;
}

std::vector<int32_t> run_alone(runtime_fixture& fx, generation_request req) {
  const std::string id = req.client_id;
  fx.submit(std::move(req));
  EXPECT_TRUE(fx.log().wait_done({id})) << id;
  return fx.log().get(id).token_ids();
}

TEST(speculative_runtime, greedy_is_identical_alone_and_batched_on_16_prompts) {
  // Every draft found is verified, so the equality covers many accepted and rejected drafts.
  runtime_fixture fx(stories_config());
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
    const auto record = fx.log().get(id);  // a copy: timings must not point into a temporary
    ASSERT_TRUE(record.finished) << id;
    const auto& t = record.finished->timings;
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

// Preemption and the prefix cache with every draft verified. Round 1: the
// 16 prompts at once on a pool of 40 blocks (16 x ~8 needed), so drafting
// sequences are preempted and recompute. Round 2, on a large pool with the
// cache on: prompts that are a round-1 prompt plus part of its output, so
// they reuse blocks whose positions drafts wrote (accepted and rejected).
// Both must give the greedy tokens of runs without speculation, without
// preemption and without the cache; each request ends once and no block
// stays held.
TEST(speculative_runtime, preemption_and_prefix_cache_keep_greedy_output) {
  const tokenizer* tok = testing_support::stories_tokenizer();
  ASSERT_TRUE(tok);
  constexpr uint32_t n_out = 96;
  const auto texts = repeating_prompts();
  std::vector<std::vector<int32_t>> prompts, plain, followups, followup_plain;
  {
    runtime_config cfg = stories_config();
    cfg.prefix_cache = false;
    runtime_fixture ref(cfg);
    ASSERT_TRUE(ref.ok()) << ref.error();
    for (size_t i = 0; i < texts.size(); ++i) {
      prompts.push_back(tok->encode(texts[i], true));
      plain.push_back(run_alone(ref, token_request("p" + std::to_string(i), prompts[i], n_out, 0)));
      ASSERT_EQ(plain[i].size(), n_out);
      std::vector<int32_t> f = prompts[i];
      f.insert(f.end(), plain[i].begin(), plain[i].begin() + 40 + static_cast<long>(i));  // cuts at every block offset
      followups.push_back(f);
      followup_plain.push_back(run_alone(ref, token_request("f" + std::to_string(i), f, 32, 0)));
    }
  }
  const auto submit_all = [&](runtime_fixture& fx, const std::string& tag, const std::vector<std::vector<int32_t>>& ps,
                              uint32_t max_tokens) {
    std::vector<std::string> ids;
    for (size_t i = 0; i < ps.size(); ++i) {
      ids.push_back(tag + std::to_string(i));
      fx.submit(token_request(ids.back(), ps[i], max_tokens, 8));
    }
    EXPECT_TRUE(fx.log().wait_done(ids, std::chrono::seconds(300))) << tag;
    return ids;
  };
  runtime_config small = stories_config();
  small.scheduler.adaptive_drafts = false;
  small.kv_blocks = 40;
  runtime_fixture fx(small);
  ASSERT_TRUE(fx.ok()) << fx.error();
  const auto ids = submit_all(fx, "pre", prompts, n_out);
  uint32_t preempted_drafters = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto r = fx.log().get(ids[i]);
    ASSERT_TRUE(r.finished) << ids[i];
    EXPECT_EQ(r.n_terminal, 1) << ids[i];
    EXPECT_EQ(r.finished->reason, finish_reason::length) << ids[i];
    EXPECT_EQ(r.token_ids(), plain[i]) << ids[i] << " differs after preemption with drafts";
    if (r.finished->preemptions > 0 && r.finished->timings.spec_accepted_tokens > 0) ++preempted_drafters;
  }
  EXPECT_GT(fx.stats().preemptions, 0u);
  EXPECT_GT(preempted_drafters, 0u) << "no sequence that drafted was preempted";
  EXPECT_TRUE(fx.wait_idle()) << "blocks still held when idle";

  runtime_config large = stories_config();
  large.scheduler.adaptive_drafts = false;
  runtime_fixture cached(large);
  ASSERT_TRUE(cached.ok()) << cached.error();
  const auto firsts = submit_all(cached, "first", prompts, n_out);
  uint64_t accepted = 0, drafted = 0;
  for (size_t i = 0; i < firsts.size(); ++i) {
    const auto r = cached.log().get(firsts[i]);
    EXPECT_EQ(r.token_ids(), plain[i]) << firsts[i];
    accepted += r.finished->timings.spec_accepted_tokens;
    drafted += r.finished->timings.spec_drafted_tokens;
  }
  EXPECT_GT(accepted, 0u);
  EXPECT_LT(accepted, drafted) << "the blocks must have seen rejected drafts too";
  const auto seconds = submit_all(cached, "second", followups, 32);
  for (size_t i = 0; i < seconds.size(); ++i) {
    const auto r = cached.log().get(seconds[i]);
    ASSERT_TRUE(r.finished) << seconds[i];
    EXPECT_EQ(r.n_terminal, 1) << seconds[i];
    EXPECT_EQ(r.token_ids(), followup_plain[i]) << seconds[i] << " differs over cached blocks drafts wrote";
    // Every full block but the one holding the last prompt token comes from the cache.
    EXPECT_EQ(r.finished->cached_tokens, (followups[i].size() - 1) / 16 * 16) << seconds[i];
  }
  EXPECT_TRUE(cached.wait_idle()) << "blocks still held when idle";
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
