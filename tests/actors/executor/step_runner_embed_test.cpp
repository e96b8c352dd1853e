// step_runner with embed entries: the pooled sum spans chunks, starts afresh
// when an entry restarts at position 0 (a recompute after preemption), shares
// steps with a sampling sequence, and a chunk whose earlier rows the runner
// never saw fails the step instead of returning a wrong embedding. Expected
// values: ../shared/golden/embeddings (llama.cpp), 1e-4 per component.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "actors/executor/step_runner.hpp"
#include "tests/support/golden.hpp"

namespace cortex {
namespace {

step_entry entry(request_id rid, const std::vector<int32_t>& ids, int32_t pos0, int32_t n,
                 std::vector<int32_t> table, bool embed) {
  step_entry e;
  e.rid = rid;
  e.tokens.assign(ids.begin() + pos0, ids.begin() + pos0 + n);
  e.pos0 = pos0;
  e.block_table = std::move(table);
  e.sample = pos0 + n == static_cast<int32_t>(ids.size());
  e.embed = embed;
  return e;
}

class step_runner_embed : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string golden_file = testing::reference_file("embeddings/stories260K.json");
    CORTEX_NEEDS_REFERENCE_FILE(golden_file);
    golden_ = testing::load_json(golden_file);
    ASSERT_FALSE(golden_.is_discarded());
    auto m = model::load(testing::model_path("stories260K.gguf"));
    ASSERT_TRUE(m) << m.error();
    runner_ = std::make_unique<step_runner>(std::shared_ptr<const model>(std::move(*m)), executor_config{2, 32, 16});
  }
  nlohmann::json golden_;
  std::unique_ptr<step_runner> runner_;
};

TEST_F(step_runner_embed, chunks_restart_and_sampling_neighbour_give_the_golden_embedding) {
  const auto& c = golden_["cases"].back();  // the longest case
  const auto ids = c["ids"].get<std::vector<int32_t>>();
  const auto ref = c["embedding"].get<std::vector<double>>();
  ASSERT_LE(ids.size(), 64u);
  const std::vector<int32_t> embed_table = {0, 1, 2, 3}, gen_table = {8, 9, 10, 11};
  // A generating neighbour on the same prompt.
  sequence_open o;
  o.rid = 2;
  o.params.temperature = 0;
  o.tokens_prompt = ids;
  runner_->open(o);
  uint64_t step_id = 0;
  auto run = [&](std::vector<step_entry> entries) {
    engine_step s;
    s.step_id = ++step_id;
    s.entries = std::move(entries);
    return runner_->run(s);
  };
  // Three chunks, then a restart from position 0 as after a preemption.
  for (int32_t pos = 0; pos < 21; pos += 7) {
    const auto res = run({entry(1, ids, pos, 7, embed_table, true)});
    ASSERT_FALSE(res.failed()) << res.error;
    EXPECT_TRUE(res.embeddings.empty());
  }
  std::vector<float> got;
  int n_sampled = 0;
  for (int32_t pos = 0; pos < static_cast<int32_t>(ids.size()); pos += 7) {
    const int32_t n = std::min<int32_t>(7, static_cast<int32_t>(ids.size()) - pos);
    const auto res = run({entry(2, ids, pos, n, gen_table, false), entry(1, ids, pos, n, embed_table, true)});
    ASSERT_FALSE(res.failed()) << res.error;
    n_sampled += static_cast<int>(res.outputs.size());
    for (const auto& o : res.outputs) EXPECT_EQ(o.rid, 2u) << "an embed entry never samples";
    if (!res.embeddings.empty()) {
      ASSERT_EQ(res.embeddings.size(), 1u);
      EXPECT_EQ(res.embeddings[0].rid, 1u);
      got = res.embeddings[0].embedding;
    }
  }
  EXPECT_EQ(n_sampled, 1);
  ASSERT_EQ(got.size(), ref.size());
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::abs(got[i] - ref[i]));
  EXPECT_LE(worst, 1e-4);
}

TEST_F(step_runner_embed, a_chunk_without_its_earlier_rows_fails_the_step) {
  const auto ids = golden_["cases"].back()["ids"].get<std::vector<int32_t>>();
  const std::vector<int32_t> table = {0, 1, 2, 3};
  engine_step s;
  s.step_id = 1;
  s.entries = {entry(5, ids, 7, 7, table, true)};  // never saw positions [0, 7)
  auto res = runner_->run(s);
  EXPECT_TRUE(res.failed());
  EXPECT_NE(res.error.message.find("pooled sum"), std::string::npos) << res.error;
  // Closed mid-prompt (cancelled): the sum is gone, a continuation fails too.
  s.entries = {entry(6, ids, 0, 7, table, true)};
  ASSERT_FALSE(runner_->run(s).failed());
  runner_->close(6);
  s.entries = {entry(6, ids, 7, 7, table, true)};
  EXPECT_TRUE(runner_->run(s).failed());
}

}  // namespace
}  // namespace cortex
