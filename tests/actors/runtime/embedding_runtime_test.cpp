// Embed requests through the in-process runtime: every golden case of
// ../shared/golden/embeddings (llama.cpp's llama-embedding, mean pooling, L2
// norm) within 1e-4 per component, computed in prefill chunks of 7 tokens in
// the same steps as greedy generation requests, whose output must stay what
// it is alone; the prefix cache (warmed with the same prompts) must not
// change an embedding. Threaded: every wait has a timeout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "tests/support/golden.hpp"
#include "tests/support/runtime_harness.hpp"

namespace cortex {
namespace {

using testing::runtime_fixture;

constexpr double k_atol = 1e-4;  // golden/embeddings/README.md

runtime_config model_config(const std::string& model_file) {
  runtime_config c;
  c.model_path = testing::model_path(model_file);
  c.threads = 2;
  c.kv_blocks = 256;
  c.kv_type = kernels::kv_type::f32;  // the golden embeddings were made with an F32 cache
  c.scheduler.max_batch_tokens = 32;
  c.scheduler.max_prefill_chunk = 7;
  c.log_level = std::getenv("CORTEX_TEST_LOG") ? std::getenv("CORTEX_TEST_LOG") : "warn";
  return c;
}

generation_request token_request(const std::string& id, const std::vector<int32_t>& tokens, request_kind kind) {
  generation_request r;
  r.client_id = id;
  r.kind = kind;
  r.tokens = tokens;
  r.use_tokens = true;
  r.want_token_ids = true;
  r.params.temperature = 0;
  r.params.max_tokens = 24;
  r.params.ignore_eos = true;
  return r;
}

class embedding_runtime : public ::testing::TestWithParam<std::string> {};

TEST_P(embedding_runtime, golden_embeddings_while_generation_runs_beside) {
  const std::string golden_file = testing::reference_file("embeddings/" + GetParam() + ".json");
  CORTEX_NEEDS_REFERENCE_FILE(golden_file);
  const auto golden = testing::load_json(golden_file);
  ASSERT_FALSE(golden.is_discarded());
  runtime_fixture fx(model_config(golden["model"].get<std::string>()));
  ASSERT_TRUE(fx.ok()) << fx.error();
  const auto& cases = golden["cases"];

  // Alone first: each case's ids as a generation prompt. This is the
  // reference output for the batched run, and it fills the prefix cache with
  // the very prompts the embed requests bring.
  std::vector<std::vector<int32_t>> alone;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string id = "alone" + std::to_string(i);
    fx.submit(token_request(id, cases[i]["ids"].get<std::vector<int32_t>>(), request_kind::generate));
    ASSERT_TRUE(fx.log().wait_done({id}));
    alone.push_back(fx.log().get(id).token_ids());
    ASSERT_EQ(alone.back().size(), 24u) << id;
  }

  // Then every embed request and every generation request at once.
  std::vector<std::string> ids;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto tokens = cases[i]["ids"].get<std::vector<int32_t>>();
    ids.push_back("gen" + std::to_string(i));
    fx.submit(token_request(ids.back(), tokens, request_kind::generate));
    ids.push_back("embed" + std::to_string(i));
    fx.submit(token_request(ids.back(), tokens, request_kind::embed));
  }
  ASSERT_TRUE(fx.log().wait_done(ids, std::chrono::seconds(300)));

  double worst = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto gen = fx.log().get("gen" + std::to_string(i));
    ASSERT_TRUE(gen.finished);
    EXPECT_EQ(gen.token_ids(), alone[i]) << "generation " << i << " differs beside embed requests";

    const auto r = fx.log().get("embed" + std::to_string(i));
    ASSERT_TRUE(r.finished) << "embed" << i;
    EXPECT_EQ(r.n_terminal, 1);
    EXPECT_EQ(r.finished->reason, finish_reason::stop);
    const auto n_ids = cases[i]["ids"].size();
    EXPECT_EQ(r.finished->prompt_tokens, n_ids);
    EXPECT_EQ(r.finished->completion_tokens, 0u);
    EXPECT_EQ(r.finished->cached_tokens, 0u) << "an embed request must compute every token";
    EXPECT_TRUE(r.chunks.empty());
    EXPECT_TRUE(r.finished->text.empty());
    const auto ref = cases[i]["embedding"].get<std::vector<double>>();
    ASSERT_EQ(r.finished->embedding.size(), ref.size()) << "embed" << i;
    double case_worst = 0;
    for (size_t k = 0; k < ref.size(); ++k) {
      case_worst = std::max(case_worst, std::abs(r.finished->embedding[k] - ref[k]));
    }
    EXPECT_LE(case_worst, k_atol) << "embed" << i << ": " << n_ids << " tokens";
    worst = std::max(worst, case_worst);
  }
  std::printf("[ golden   ] %s embeddings through the runtime (chunks of 7, beside generation): worst abs diff %.3g\n",
              GetParam().c_str(), worst);
  const auto st = fx.stats();
  EXPECT_GT(st.step_seqs_max, 2u) << "embed prefills must share steps with other work";
  EXPECT_GT(st.prefix_cache_hit_rate, 0.0) << "the generation requests reuse the warmed prompts";
  EXPECT_TRUE(fx.wait_idle());
}

// A low-priority embed request in a pool too small for everyone is preempted
// mid-prompt (generation requests of higher priority need its blocks) and
// recomputed from its first token later: the pooled sum must start afresh.
TEST(embedding_runtime_kv, preempted_embed_request_still_gives_the_golden_embedding) {
  const std::string golden_file = testing::reference_file("embeddings/stories260K.json");
  CORTEX_NEEDS_REFERENCE_FILE(golden_file);
  const auto golden = testing::load_json(golden_file);
  ASSERT_FALSE(golden.is_discarded());
  const auto& c = golden["cases"].back();  // 52 tokens
  auto cfg = model_config("stories260K.gguf");
  cfg.kv_blocks = 20;  // four 60-token prompts decoding to 70 tokens fill all 20 blocks of 16
  cfg.scheduler.max_prefill_with_decode = 2;
  cfg.scheduler.itl_target_ms = -1;  // the static cap only: the time budget would size chunks by this machine's speed
  // The first step (gen0's first chunk) stalls while the other requests
  // arrive, so they are all planned together whatever this machine's speed:
  // the gens fill the budget first, the embed gets what is left, and it is
  // mid-prompt when the gens, decoding, need its blocks. Without the stall a
  // thread descheduled between two submissions let the gens finish first.
  cfg.faults.executor_stall_step = 1;
  cfg.faults.executor_stall_ms = 3000;
  runtime_fixture fx(cfg);
  ASSERT_TRUE(fx.ok()) << fx.error();
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    std::vector<int32_t> prompt = {1};
    for (int k = 1; k < 60; ++k) prompt.push_back(259 + (k * 37 + i * 101) % 250);
    auto r = token_request("gen" + std::to_string(i), prompt, request_kind::generate);
    r.params.max_tokens = 10;
    ids.push_back(r.client_id);
    fx.submit(r);
  }
  auto e = token_request("embed", c["ids"].get<std::vector<int32_t>>(), request_kind::embed);
  e.priority = -1;
  ids.push_back("embed");
  fx.submit(e);
  ASSERT_TRUE(fx.log().wait_done(ids, std::chrono::seconds(300)));
  const auto r = fx.log().get("embed");
  ASSERT_TRUE(r.finished);
  ASSERT_EQ(r.finished->reason, finish_reason::stop);
  EXPECT_GE(r.finished->preemptions, 1u) << "the test must preempt the embed request to check its restart";
  const auto ref = c["embedding"].get<std::vector<double>>();
  ASSERT_EQ(r.finished->embedding.size(), ref.size());
  double worst = 0;
  for (size_t k = 0; k < ref.size(); ++k) worst = std::max(worst, std::abs(r.finished->embedding[k] - ref[k]));
  EXPECT_LE(worst, k_atol);
  std::printf("[ golden   ] stories260K embedding after %u preemption(s): worst abs diff %.3g\n",
              r.finished->preemptions, worst);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(fx.log().get("gen" + std::to_string(i)).finished->completion_tokens, 10u);
  EXPECT_TRUE(fx.wait_idle());
}

INSTANTIATE_TEST_SUITE_P(models, embedding_runtime, ::testing::Values("stories260K", "tiny-llama-f32", "tiny-qwen2-f32"),
                         testing::model_param_name<::testing::TestParamInfo<std::string>>);

}  // namespace
}  // namespace cortex
