// An encoder (tiny-bert, tests/data/encoder) served by the in-process
// runtime: embed requests (token ids, and texts that intake frames as
// [CLS] ... [SEP]) give llama-server's embeddings within 1e-4, several
// inputs share a step, each whole (the 500-token one too) and with no K/V
// kept; generation requests and inputs longer than a step are refused with
// what to do. Threaded: every wait has a timeout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "tests/support/golden.hpp"
#include "tests/support/runtime_harness.hpp"

namespace cortex {
namespace {

using testing::runtime_fixture;

constexpr double k_atol = 1e-4;
const std::string k_dir = std::string(CORTEX_SOURCE_DIR) + "/tests/data/encoder/";

runtime_config encoder_config() {
  runtime_config c;
  c.model_path = k_dir + "tiny-bert-f32.gguf";
  c.threads = 2;
  c.scheduler.max_batch_tokens = 512;
  c.log_level = std::getenv("CORTEX_TEST_LOG") ? std::getenv("CORTEX_TEST_LOG") : "warn";
  return c;
}

generation_request embed_request(const std::string& id) {
  generation_request r;
  r.client_id = id;
  r.kind = request_kind::embed;
  return r;
}

TEST(encoder_runtime, embeddings_match_llama_server_and_share_steps) {
  const auto golden = testing::load_json(k_dir + "tiny-bert-f32.json");
  ASSERT_FALSE(golden.is_discarded());
  runtime_fixture fx(encoder_config());
  ASSERT_TRUE(fx.ok()) << fx.error();
  const auto& inputs = golden["inputs"];
  const auto& want = golden["embeddings"]["mean"];  // the file's pooling
  std::vector<std::string> ids;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto r = embed_request("ids" + std::to_string(i));
    r.tokens = inputs[i]["ids"].get<std::vector<int32_t>>();
    r.use_tokens = true;
    ids.push_back(r.client_id);
    fx.submit(r);
    if (inputs[i].contains("text")) {
      auto t = embed_request("text" + std::to_string(i));
      t.prompt = inputs[i]["text"].get<std::string>();
      ids.push_back(t.client_id);
      fx.submit(t);
    }
  }
  ASSERT_TRUE(fx.log().wait_done(ids, std::chrono::seconds(120)));
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (const std::string prefix : {"ids", "text"}) {
      if (prefix == "text" && !inputs[i].contains("text")) continue;
      const auto r = fx.log().get(prefix + std::to_string(i));
      ASSERT_TRUE(r.finished) << prefix << i;
      EXPECT_EQ(r.n_terminal, 1);
      EXPECT_EQ(r.finished->reason, finish_reason::stop);
      EXPECT_EQ(r.finished->prompt_tokens, inputs[i]["ids"].size()) << prefix << i << ": [CLS] ... [SEP]";
      EXPECT_EQ(r.finished->completion_tokens, 0u);
      EXPECT_EQ(r.finished->preemptions, 0u);
      const auto ref = want[i].get<std::vector<double>>();
      ASSERT_EQ(r.finished->embedding.size(), ref.size());
      double worst = 0;
      for (size_t k = 0; k < ref.size(); ++k) worst = std::max(worst, std::abs(r.finished->embedding[k] - ref[k]));
      EXPECT_LE(worst, k_atol) << prefix << i << " (" << ref.size() << " components)";
    }
  }
  const auto st = fx.stats();
  EXPECT_GT(st.step_seqs_max, 1u) << "encoder inputs must share steps";
  EXPECT_EQ(st.kv_blocks_used, 0u) << "an encoder keeps no K/V";
  EXPECT_TRUE(fx.wait_idle());
}

TEST(encoder_runtime, refuses_generation_and_over_long_inputs) {
  runtime_fixture fx(encoder_config());
  ASSERT_TRUE(fx.ok()) << fx.error();
  generation_request gen;
  gen.client_id = "gen";
  gen.prompt = "Hello";
  gen.params.max_tokens = 4;
  fx.submit(gen);
  auto too_long = embed_request("long");
  too_long.tokens.assign(513, 1000);
  too_long.use_tokens = true;
  fx.submit(too_long);
  ASSERT_TRUE(fx.log().wait_done({"gen", "long"}));
  const auto g = fx.log().get("gen");
  ASSERT_TRUE(g.rejected);
  EXPECT_EQ(errc_code(g.rejected->error.code), 400);
  EXPECT_NE(g.rejected->error.message.find("only embeds"), std::string::npos) << g.rejected->error.message;
  const auto l = fx.log().get("long");
  ASSERT_TRUE(l.rejected);
  EXPECT_EQ(errc_code(l.rejected->error.code), 422) << l.rejected->error.message;
  EXPECT_TRUE(fx.wait_idle());
}

// A reranker (tiny-bert-rerank): each document's request, the query as its
// prompt, scores as llama-server's /v1/rerank within 1e-4, [CLS] query [SEP]
// document framed by intake; a plain embed request is refused.
TEST(encoder_runtime, reranker_scores_documents_like_llama_server) {
  const auto golden = testing::load_json(k_dir + "tiny-bert-rerank-f32.json");
  ASSERT_FALSE(golden.is_discarded());
  auto cfg = encoder_config();
  cfg.model_path = k_dir + "tiny-bert-rerank-f32.gguf";
  runtime_fixture fx(cfg);
  ASSERT_TRUE(fx.ok()) << fx.error();
  std::vector<std::string> ids;
  for (size_t d = 0; d < golden["documents"].size(); ++d) {
    auto r = embed_request("doc" + std::to_string(d));
    r.prompt = golden["query"].get<std::string>();
    r.document = golden["documents"][d].get<std::string>();
    ids.push_back(r.client_id);
    fx.submit(r);
  }
  auto plain = embed_request("plain");
  plain.prompt = "an embedding, please";
  fx.submit(plain);
  ids.push_back("plain");
  ASSERT_TRUE(fx.log().wait_done(ids, std::chrono::seconds(60)));
  for (const auto& res : golden["results_all"]) {
    const size_t d = res["index"].get<size_t>();
    const auto r = fx.log().get("doc" + std::to_string(d));
    ASSERT_TRUE(r.finished) << "doc" << d;
    ASSERT_EQ(r.finished->embedding.size(), 1u);
    EXPECT_NEAR(r.finished->embedding[0], res["relevance_score"].get<double>(), k_atol) << "document " << d;
    const size_t n_pair = 2 + golden["query_ids"].size() + golden["document_ids"][d].size();
    EXPECT_EQ(r.finished->prompt_tokens, n_pair) << "[CLS] query [SEP] document";
  }
  const auto p = fx.log().get("plain");
  ASSERT_TRUE(p.rejected);
  EXPECT_EQ(errc_code(p.rejected->error.code), 400);
  EXPECT_NE(p.rejected->error.message.find("reranker"), std::string::npos) << p.rejected->error.message;
  EXPECT_TRUE(fx.wait_idle());
}

}  // namespace
}  // namespace cortex
