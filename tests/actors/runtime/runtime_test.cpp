// The engine graph on real actors and the trained stories260K model: many
// requests at once give exactly what each gives alone, the prefix cache,
// preemption under a small KV pool, cancel, priority, deadlines, seeded
// sampling and executor failures. Threaded: every wait has a timeout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>

#include "text/tokenizer.hpp"
#include "tests/support/golden.hpp"
#include "tests/support/runtime_harness.hpp"

namespace cortex {
namespace {

using testing::greedy_request;
using testing::runtime_fixture;

runtime_config stories_config() {
  runtime_config c = testing::test_runtime_config(testing::stories260k_path());
  c.kv_blocks = 1024;
  c.scheduler.max_batch_tokens = 256;
  return c;
}

const std::vector<std::string> k_prompts = {
    "Once upon a time", "Lily and Tom went to the park", "The little dog was sad because",
    "One day, a boy named Tim found a big red ball. He", "The sun was", "Mom said", "A cat and a bird",
    "There was a big tree", "Ben liked to", "The girl", "Sam and his friend", "It was a rainy day",
    "The old man", "Sue found a box", "They played", "The boy was happy"};

// Runs one request alone and returns its record.
testing::request_record run_alone(runtime_fixture& fx, generation_request req) {
  const std::string id = req.client_id;
  fx.submit(std::move(req));
  EXPECT_TRUE(fx.log().wait_done({id})) << id << " did not finish";
  return fx.log().get(id);
}

TEST(runtime, sixteen_concurrent_greedy_requests_match_alone_and_golden) {
  const std::string golden_file = testing::reference_file("generation/stories260K.json");
  CORTEX_NEEDS_REFERENCE_FILE(golden_file);
  runtime_fixture fx(stories_config());
  ASSERT_TRUE(fx.ok()) << fx.error();
  std::vector<std::string> alone(k_prompts.size());
  for (size_t i = 0; i < k_prompts.size(); ++i) {
    alone[i] = run_alone(fx, greedy_request("alone" + std::to_string(i), k_prompts[i], 40 + 6 * i)).text();
  }
  std::vector<std::string> ids;
  for (size_t i = 0; i < k_prompts.size(); ++i) {
    ids.push_back("conc" + std::to_string(i));
    fx.submit(greedy_request(ids.back(), k_prompts[i], 40 + 6 * i));
  }
  ASSERT_TRUE(fx.log().wait_done(ids));
  for (size_t i = 0; i < ids.size(); ++i) {
    auto r = fx.log().get(ids[i]);
    ASSERT_TRUE(r.finished) << ids[i];
    EXPECT_EQ(r.n_terminal, 1);
    EXPECT_EQ(r.text(), alone[i]) << "prompt '" << k_prompts[i] << "' differs when batched";
  }
  // The golden continuations (llama.cpp, 128 greedy tokens).
  auto golden = testing::load_json(golden_file);
  std::vector<std::string> gids;
  int n = 0;
  for (const auto& c : golden["cases"]) {
    if (!c.contains("text")) continue;
    auto req = greedy_request("golden" + std::to_string(n++), c["text"].get<std::string>(), 128);
    gids.push_back(req.client_id);
    fx.submit(std::move(req));
  }
  ASSERT_TRUE(fx.log().wait_done(gids));
  n = 0;
  for (const auto& c : golden["cases"]) {
    if (!c.contains("text")) continue;
    auto r = fx.log().get(gids[static_cast<size_t>(n++)]);
    EXPECT_EQ(r.text(), testing::hex_to_bytes(c["greedy_bytes_hex"].get<std::string>())) << c["text"];
    EXPECT_EQ(r.finished->completion_tokens, 128u);
  }
  auto st = fx.stats();
  EXPECT_GT(st.step_seqs_max, 4u) << "concurrent requests must share steps";
  EXPECT_GT(st.step_seqs_mean, 1.0);
  EXPECT_TRUE(fx.wait_idle());
}

TEST(runtime, late_request_gets_first_token_before_running_ones_finish) {
  runtime_fixture fx(stories_config());
  ASSERT_TRUE(fx.ok()) << fx.error();
  std::vector<std::string> ids;
  for (int i = 0; i < 8; ++i) {
    auto req = greedy_request("long" + std::to_string(i), k_prompts[static_cast<size_t>(i)], 400);
    req.params.ignore_eos = true;
    ids.push_back(req.client_id);
    fx.submit(std::move(req));
  }
  ASSERT_TRUE(fx.log().wait_for([&](const auto& recs) {
    for (auto& id : ids) {
      auto it = recs.find(id);
      if (it == recs.end() || it->second.first_token_order == 0) return false;
    }
    return true;
  }));
  fx.submit(greedy_request("late", "The cat", 8));
  ids.push_back("late");
  ASSERT_TRUE(fx.log().wait_done(ids));
  auto late = fx.log().get("late");
  ASSERT_GT(late.first_token_order, 0u);
  for (int i = 0; i < 8; ++i) {
    auto r = fx.log().get("long" + std::to_string(i));
    EXPECT_LT(late.first_token_order, r.finished_order) << "the late request waited for long" << i;
    EXPECT_EQ(r.finished->completion_tokens, 400u);
  }
  EXPECT_GT(fx.stats().step_seqs_max, 4u);
}

std::vector<int32_t> random_tokens(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t = {1};  // BOS
  while (static_cast<int>(t.size()) < n) t.push_back(static_cast<int32_t>(259 + rng() % 250));  // ordinary pieces
  return t;
}

generation_request token_request(const std::string& id, std::vector<int32_t> tokens, uint32_t max_tokens) {
  generation_request r;
  r.client_id = id;
  r.tokens = std::move(tokens);
  r.use_tokens = true;
  r.want_token_ids = true;
  r.params.temperature = 0;
  r.params.max_tokens = max_tokens;
  r.params.ignore_eos = true;
  return r;
}

TEST(runtime, shared_prefix_is_served_from_the_cache_with_identical_output) {
  auto prefix = random_tokens(200, 7);
  auto a = prefix, b = prefix;
  for (int i = 0; i < 12; ++i) a.push_back(300 + i), b.push_back(400 + i);
  std::vector<int32_t> with_cache, without_cache;
  for (bool cache : {true, false}) {
    auto cfg = stories_config();
    cfg.prefix_cache = cache;
    runtime_fixture fx(cfg);
    ASSERT_TRUE(fx.ok()) << fx.error();
    auto ra = run_alone(fx, token_request("a", a, 24));
    auto rb = run_alone(fx, token_request("b", b, 24));
    ASSERT_TRUE(ra.finished && rb.finished);
    if (cache) {
      EXPECT_GE(rb.finished->cached_tokens, 192u) << "the 200-token prefix (12 full blocks) must be reused";
      EXPECT_EQ(rb.finished->cached_tokens % 16, 0u);
      with_cache = rb.token_ids();
      EXPECT_GT(fx.stats().prefix_cache_hit_rate, 0.0);
    } else {
      EXPECT_EQ(rb.finished->cached_tokens, 0u);
      without_cache = rb.token_ids();
    }
    EXPECT_TRUE(fx.wait_idle());
  }
  ASSERT_EQ(with_cache.size(), 24u);
  EXPECT_EQ(with_cache, without_cache);
}

TEST(runtime, small_kv_pool_preempts_and_everyone_finishes_correctly) {
  // 16 requests x (~10 prompt + 300 generated) tokens = 20 blocks each; 64 blocks in all.
  std::vector<generation_request> reqs;
  for (int i = 0; i < 16; ++i) {
    auto r = greedy_request("kv" + std::to_string(i), k_prompts[static_cast<size_t>(i)], 300);
    r.params.ignore_eos = true;
    r.want_token_ids = true;
    reqs.push_back(r);
  }
  std::vector<std::vector<int32_t>> expected;
  {
    runtime_fixture big(stories_config());
    ASSERT_TRUE(big.ok()) << big.error();
    for (auto r : reqs) expected.push_back(run_alone(big, r).token_ids());
  }
  auto cfg = stories_config();
  cfg.kv_blocks = 64;
  runtime_fixture fx(cfg);
  ASSERT_TRUE(fx.ok()) << fx.error();
  std::vector<std::string> ids;
  for (auto r : reqs) {
    ids.push_back(r.client_id);
    fx.submit(r);
  }
  ASSERT_TRUE(fx.log().wait_done(ids, std::chrono::seconds(300))) << "deadlock or starvation under preemption";
  uint32_t preempted = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    auto r = fx.log().get(ids[i]);
    ASSERT_TRUE(r.finished) << ids[i];
    EXPECT_EQ(r.finished->reason, finish_reason::length);
    EXPECT_EQ(r.token_ids(), expected[i]) << ids[i] << " differs after preemption";
    preempted += r.finished->preemptions;
  }
  auto st = fx.stats();
  EXPECT_GT(st.preemptions, 0u);
  EXPECT_GT(preempted, 0u);
  EXPECT_TRUE(fx.wait_idle()) << "blocks still held when idle";
}

TEST(runtime, cancel_while_queued_in_prefill_and_in_decode) {
  auto cfg = stories_config();
  cfg.scheduler.max_running = 3;
  cfg.scheduler.max_batch_tokens = 16;  // a long prompt takes many steps to prefill
  runtime_fixture fx(cfg);
  ASSERT_TRUE(fx.ok()) << fx.error();
  auto keep = greedy_request("keep", "Once upon a time", 60);
  keep.params.ignore_eos = true;
  const std::string keep_alone = run_alone(fx, keep).text();
  keep.client_id = "keep2";

  auto decoding = greedy_request("decoding", "The sun was", 1500);
  decoding.params.ignore_eos = true;
  fx.submit(decoding);
  fx.submit(keep);
  auto prefilling = token_request("prefilling", random_tokens(1000, 3), 10);
  fx.submit(prefilling);
  auto queued = greedy_request("queued", "The girl", 10);
  fx.submit(queued);  // max_running = 3: waits
  // Decoding: cancel once it has streamed tokens.
  ASSERT_TRUE(fx.log().wait_for([](const auto& r) {
    auto it = r.find("decoding");
    return it != r.end() && it->second.chunks.size() >= 2;
  }));
  auto rid_of = [&](const std::string& id) {
    EXPECT_TRUE(fx.log().wait_for([&](const auto& r) { auto it = r.find(id); return it != r.end() && it->second.accepted; }));
    return fx.log().get(id).accepted->rid;
  };
  fx.cancel(rid_of("queued"));
  fx.cancel(rid_of("prefilling"));
  fx.cancel(rid_of("decoding"));
  ASSERT_TRUE(fx.log().wait_done({"decoding", "prefilling", "queued", "keep2"}));
  for (const char* id : {"decoding", "prefilling", "queued"}) {
    auto r = fx.log().get(id);
    ASSERT_TRUE(r.finished) << id;
    EXPECT_EQ(r.finished->reason, finish_reason::cancelled) << id;
    EXPECT_EQ(r.n_terminal, 1) << id;
  }
  EXPECT_EQ(fx.log().get("prefilling").finished->completion_tokens, 0u);
  EXPECT_EQ(fx.log().get("queued").finished->completion_tokens, 0u);
  EXPECT_LT(fx.log().get("decoding").finished->completion_tokens, 1500u);
  EXPECT_EQ(fx.log().get("keep2").text(), keep_alone) << "a cancel disturbed another request";
  EXPECT_TRUE(fx.wait_idle());
}

TEST(runtime, high_priority_goes_first_and_low_priority_still_finishes) {
  auto cfg = stories_config();
  cfg.scheduler.max_running = 2;
  runtime_fixture fx(cfg);
  ASSERT_TRUE(fx.ok()) << fx.error();
  std::vector<std::string> ids;
  for (int i = 0; i < 2; ++i) {
    auto r = greedy_request("busy" + std::to_string(i), k_prompts[static_cast<size_t>(i)], 300);
    r.params.ignore_eos = true;
    ids.push_back(r.client_id);
    fx.submit(r);
  }
  ASSERT_TRUE(fx.log().wait_for([](const auto& r) {
    auto a = r.find("busy0"), b = r.find("busy1");
    return a != r.end() && b != r.end() && a->second.first_token_order && b->second.first_token_order;
  }));
  for (int i = 0; i < 4; ++i) {
    auto r = greedy_request("low" + std::to_string(i), k_prompts[static_cast<size_t>(4 + i)], 20);
    r.priority = -1;
    ids.push_back(r.client_id);
    fx.submit(r);
  }
  auto high = greedy_request("high", "The little dog", 20);
  high.priority = 10;
  ids.push_back("high");
  fx.submit(high);
  ASSERT_TRUE(fx.log().wait_done(ids));
  const auto h = fx.log().get("high");
  for (int i = 0; i < 4; ++i) {
    auto r = fx.log().get("low" + std::to_string(i));
    ASSERT_TRUE(r.finished) << "low-priority request starved";
    EXPECT_NE(r.finished->reason, finish_reason::error);
    EXPECT_LT(h.first_token_order, r.first_token_order) << "low" << i << " got a token before the high-priority request";
  }
}

// kv-memory-mb is bytes: the block count follows from the element type, and
// stats report it. stories260K: 5 layers x (K, V) x 4 KV heads x head_dim 8
// = 320 values per token; 1 MiB / (bytes per token x 16-token blocks).
TEST(runtime, kv_memory_holds_more_tokens_in_smaller_types_and_stats_say_so) {
  struct expect_row { kernels::kv_type type; const char* name; uint32_t bytes_per_token; };
  for (const auto& e : {expect_row{kernels::kv_type::f32, "f32", 1280}, expect_row{kernels::kv_type::f16, "f16", 640},
                        expect_row{kernels::kv_type::bf16, "bf16", 640}}) {
    auto cfg = stories_config();
    cfg.kv_blocks = 0;
    cfg.kv_memory_mb = 1;
    cfg.kv_type = e.type;
    runtime_fixture fx(cfg);
    ASSERT_TRUE(fx.ok()) << fx.error();
    const auto s = fx.stats();
    EXPECT_EQ(s.kv_type, e.name);
    EXPECT_EQ(s.kv_bytes_per_token, e.bytes_per_token);
    EXPECT_EQ(s.kv_blocks_total, (1u << 20) / (e.bytes_per_token * 16)) << e.name;
    // And it still generates the golden text's start (f16 / bf16 round the cache).
    fx.submit(greedy_request("kv", "Once upon a time", 12));
    ASSERT_TRUE(fx.log().wait_done({"kv"}));
    EXPECT_EQ(fx.log().get("kv").text().rfind(", there was a little girl", 0), 0u) << e.name << ": " << fx.log().get("kv").text();
  }
}

TEST(runtime, q8_0_kv_on_a_model_whose_heads_are_not_blocks_of_32_is_refused) {
  auto cfg = stories_config();
  cfg.kv_type = kernels::kv_type::q8_0;  // stories260K's head_dim is 8
  runtime_fixture fx(cfg);
  ASSERT_FALSE(fx.ok());
  EXPECT_NE(fx.error().find("kv-type q8_0"), std::string::npos) << fx.error();
  EXPECT_NE(fx.error().find("head_dim is 8"), std::string::npos) << fx.error();
}

TEST(runtime, deadline_ends_a_request) {
  runtime_fixture fx(stories_config());
  ASSERT_TRUE(fx.ok()) << fx.error();
  auto r = greedy_request("late", "Once upon a time", 100000);
  r.params.ignore_eos = true;
  r.deadline_ms = 30;
  fx.submit(r);
  ASSERT_TRUE(fx.log().wait_done({"late"}));
  auto rec = fx.log().get("late");
  ASSERT_TRUE(rec.finished);
  EXPECT_EQ(rec.finished->reason, finish_reason::deadline);
  EXPECT_EQ(rec.n_terminal, 1);
  EXPECT_TRUE(fx.wait_idle());
}

TEST(runtime, seeded_sampling_is_the_same_alone_and_batched) {
  runtime_fixture fx(stories_config());
  ASSERT_TRUE(fx.ok()) << fx.error();
  auto make = [](const std::string& id) {
    auto r = greedy_request(id, "Lily and Tom went to the park", 60);
    r.params.temperature = 0.9f;
    r.params.top_k = 40;
    r.params.has_seed = true;
    r.params.seed = 1234;
    r.want_token_ids = true;
    return r;
  };
  const auto alone = run_alone(fx, make("seeded_alone")).token_ids();
  std::vector<std::string> ids = {"seeded_batched"};
  fx.submit(make("seeded_batched"));
  for (int i = 0; i < 6; ++i) {
    auto other = greedy_request("noise" + std::to_string(i), k_prompts[static_cast<size_t>(i)], 50);
    other.params.temperature = 1.0f;
    ids.push_back(other.client_id);
    fx.submit(other);
  }
  ASSERT_TRUE(fx.log().wait_done(ids));
  EXPECT_EQ(fx.log().get("seeded_batched").token_ids(), alone);
  EXPECT_EQ(alone.size(), 60u);
}

TEST(runtime, executor_failure_fails_only_that_step) {
  runtime_fixture fx(stories_config());
  ASSERT_TRUE(fx.ok()) << fx.error();
  caf::anon_send(fx.rt().executor(), fail_atom_v, uint32_t{1});
  fx.submit(greedy_request("victim", "Once upon a time", 20));
  ASSERT_TRUE(fx.log().wait_done({"victim"}));
  auto v = fx.log().get("victim");
  ASSERT_TRUE(v.finished);
  EXPECT_EQ(v.finished->reason, finish_reason::error);
  EXPECT_EQ(v.finished->error.code, errc::internal);
  auto ok = run_alone(fx, greedy_request("after", "Once upon a time", 20));
  ASSERT_TRUE(ok.finished);
  EXPECT_EQ(ok.finished->reason, finish_reason::length);
  EXPECT_EQ(ok.finished->completion_tokens, 20u);
  EXPECT_TRUE(fx.wait_idle());
}

// Regression (issue 11): a session that dies (here: throws, by the test-only
// fault) used to leave its request without a terminal event and its sequence
// and admission slot held. Intake's guard ends it with error internal; the
// requests beside it and after it are untouched.
TEST(runtime, a_session_that_dies_ends_only_its_request) {
  auto cfg = stories_config();
  cfg.faults.session_crash_rid = 2;
  cfg.intake.max_waiting = 2;  // a leaked admission slot would refuse "after" below
  runtime_fixture fx(cfg);
  ASSERT_TRUE(fx.ok()) << fx.error();
  fx.submit(greedy_request("first", "Once upon a time", 20));
  ASSERT_TRUE(fx.log().wait_done({"first"}));
  fx.submit(greedy_request("victim", "Once upon a time", 20));
  ASSERT_TRUE(fx.log().wait_done({"victim"}));
  auto v = fx.log().get("victim");
  ASSERT_TRUE(v.accepted);
  ASSERT_TRUE(v.finished);
  EXPECT_EQ(v.finished->reason, finish_reason::error);
  EXPECT_EQ(v.finished->error.code, errc::internal);
  EXPECT_NE(v.finished->error.message.find("session failed"), std::string::npos) << v.finished->error.message;
  fx.submit(greedy_request("after", "Once upon a time", 20));
  fx.submit(greedy_request("after2", "Once upon a time", 20));
  ASSERT_TRUE(fx.log().wait_done({"after", "after2"}));
  for (const char* id : {"after", "after2"}) {
    auto ok = fx.log().get(id);
    ASSERT_TRUE(ok.finished) << id;
    EXPECT_EQ(ok.finished->reason, finish_reason::length) << id;
  }
  EXPECT_EQ(fx.log().get("after").text(), fx.log().get("first").text());
  EXPECT_FALSE(fx.log().get("first").text().empty());
  EXPECT_EQ(fx.log().get("victim").n_terminal, 1);
  EXPECT_TRUE(fx.wait_idle());
}

TEST(runtime, a_grammar_whose_parses_multiply_ends_only_its_request) {
  // Each letter doubles the open parses; past grammar_matcher's bound the
  // executor refuses that request (invalid_param, its own terminal) while
  // a plain request in the same steps finishes as it does alone.
  runtime_fixture fx(stories_config());
  ASSERT_TRUE(fx.ok()) << fx.error();
  const auto alone = run_alone(fx, greedy_request("alone", "Once upon a time", 40));
  generation_request g = greedy_request("wide", "Once upon a time", 200);
  g.params.grammar = "root ::= a\na ::= [a-z ] a \".\" | [a-z ] a \"!\" | \"\"";
  fx.submit(std::move(g));
  fx.submit(greedy_request("beside", "Once upon a time", 40));
  ASSERT_TRUE(fx.log().wait_done({"wide", "beside"}));
  const auto w = fx.log().get("wide");
  ASSERT_TRUE(w.accepted);
  ASSERT_TRUE(w.finished);
  EXPECT_EQ(w.finished->reason, finish_reason::error);
  EXPECT_EQ(w.finished->error.code, errc::invalid_param);
  EXPECT_NE(w.finished->error.message.find("parses open"), std::string::npos) << w.finished->error.message;
  EXPECT_EQ(w.n_terminal, 1);
  const auto b = fx.log().get("beside");
  ASSERT_TRUE(b.finished);
  EXPECT_EQ(b.finished->reason, finish_reason::length);
  EXPECT_EQ(b.text(), alone.text());
  EXPECT_TRUE(fx.wait_idle());
}

TEST(runtime, invalid_requests_are_rejected_with_their_code) {
  runtime_fixture fx(stories_config());
  ASSERT_TRUE(fx.ok()) << fx.error();
  auto bad_token = token_request("bad_token", {1, 5000}, 4);
  fx.submit(bad_token);
  auto bad_topp = greedy_request("bad_topp", "Hi", 4);
  bad_topp.params.top_p = 1.5f;
  fx.submit(bad_topp);
  ASSERT_TRUE(fx.log().wait_done({"bad_token", "bad_topp"}));
  for (const char* id : {"bad_token", "bad_topp"}) {
    auto r = fx.log().get(id);
    ASSERT_TRUE(r.rejected) << id;
    EXPECT_FALSE(r.accepted);
    EXPECT_EQ(errc_code(r.rejected->error.code), 400) << id << ": " << r.rejected->error.message;
  }
}

// min_tokens holds back stop tokens, and the scheduler (which stops
// computing at once) and the session (which reports) agree on when.
TEST(runtime, min_tokens_defers_a_stop_token_until_enough_tokens_precede_it) {
  runtime_fixture fx(stories_config());
  ASSERT_TRUE(fx.ok()) << fx.error();
  auto plain = greedy_request("plain", "Once upon a time", 40);
  plain.want_token_ids = true;
  const auto ids = run_alone(fx, plain).token_ids();
  ASSERT_EQ(ids.size(), 40u);
  // Stop on the first generated token, but only once one token precedes it.
  const int32_t stop_id = ids[0];
  size_t next = 1;
  while (next < ids.size() && ids[next] != stop_id) ++next;
  ASSERT_LT(next, ids.size()) << "the test needs the first token to recur (it is ',' in this story)";
  auto req = greedy_request("deferred", "Once upon a time", 40);
  req.want_token_ids = true;
  req.params.stop_token_ids = {stop_id};
  req.params.min_tokens = 1;
  auto r = run_alone(fx, req);
  ASSERT_TRUE(r.finished);
  EXPECT_EQ(r.finished->reason, finish_reason::stop);
  EXPECT_EQ(r.finished->stop_kind, "token");
  EXPECT_EQ(r.finished->completion_tokens, next + 1);
  EXPECT_EQ(r.token_ids(), std::vector<int32_t>(ids.begin(), ids.begin() + static_cast<long>(next + 1)));
}

}  // namespace
}  // namespace cortex
