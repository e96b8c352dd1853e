// The mixture-of-experts, hybrid and Gemma 4 golden files of ../shared/golden/arch
// served through the in-process runtime (what cortexd runs): the golden
// greedy continuations (llama.cpp's) come out unchanged when both cases run
// side by side in prefill chunks of 7, when the K/V memory is too small for
// both and one is preempted and recomputed, and again from the prefix cache
// where the model allows it (a recurrent model runs without: stats says so).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/golden.hpp"
#include "tests/support/runtime_harness.hpp"

namespace cortex {
namespace {

using testing::runtime_fixture;
using json = nlohmann::json;

class arch_runtime : public ::testing::TestWithParam<std::string> {
 protected:
  json golden() const { return testing::load_json(testing::shared_dir() + "/golden/arch/" + GetParam() + ".json"); }
  runtime_config config(int kv_blocks) const {
    runtime_config c = testing::test_runtime_config(testing::shared_dir() + "/golden/arch/" + GetParam() + ".gguf");
    c.kv_blocks = kv_blocks;
    c.scheduler.max_batch_tokens = 32;
    c.scheduler.max_prefill_chunk = 7;
    c.prefix_cache = true;
    return c;
  }
  // Submits every case (greedy, the golden's length) and checks the tokens; returns their records.
  std::vector<testing::request_record> run_cases(runtime_fixture& fx, const json& g, const std::string& tag) {
    std::vector<std::string> ids;
    const auto& cases = g["cases"];
    for (size_t i = 0; i < cases.size(); ++i) {
      const std::string id = tag + std::to_string(i);
      generation_request r = testing::greedy_request(id, "", static_cast<uint32_t>(cases[i]["greedy"].size()));
      r.use_tokens = true;
      r.tokens = cases[i]["tokens"].get<std::vector<int32_t>>();
      r.want_token_ids = true;
      r.params.ignore_eos = true;
      ids.push_back(id);
      fx.submit(std::move(r));
    }
    EXPECT_TRUE(fx.log().wait_done(ids));
    std::vector<testing::request_record> out;
    for (size_t i = 0; i < cases.size(); ++i) {
      out.push_back(fx.log().get(ids[i]));
      EXPECT_EQ(out.back().token_ids(), cases[i]["greedy"].get<std::vector<int32_t>>()) << GetParam() << " " << tag << " case " << i;
    }
    EXPECT_TRUE(fx.wait_idle());
    return out;
  }
};

TEST_P(arch_runtime, golden_greedy_batched_in_chunks_and_from_the_prefix_cache) {
  CORTEX_NEEDS_REFERENCE_DATA();
  const json g = golden();
  runtime_fixture fx(config(256));
  ASSERT_TRUE(fx.ok()) << fx.error();
  run_cases(fx, g, "first");
  const auto again = run_cases(fx, g, "again");
  const engine_stats s = fx.stats();
  if (s.prefix_cache_enabled) {
    for (const auto& rec : again) {
      ASSERT_TRUE(rec.finished);
      EXPECT_GT(rec.finished->cached_tokens, 0u) << "no cached prefix";
    }
  } else {
    EXPECT_GT(s.state_bytes_per_slot, 0u) << "the prefix cache is off only for a recurrent model";
    EXPECT_EQ(s.prefix_tokens_hit, 0u);
  }
  EXPECT_EQ(s.kv_bytes_used, 0u);
  EXPECT_EQ(s.state_slots_used, 0u);
}

// Memory (in whole-model blocks of 16 tokens) that fits each case alone but
// not both: the cases need 5 + 6 blocks (qwen35's longer ones 5 + 10); a
// windowed layer (gpt-oss's layer 0, window 12) holds 2 blocks a sequence.
int tight_blocks(const std::string& name) {
  if (name == "qwen35-f32") return 12;
  if (name.rfind("gpt-oss", 0) == 0) return 6;
  if (name == "gemma4-f32") return 7;  // groups of 2 layer slots: full 5 + 6, windows 2 + 2 of 14
  return 8;
}

TEST_P(arch_runtime, golden_greedy_after_preemption) {
  CORTEX_NEEDS_REFERENCE_DATA();
  const json g = golden();
  auto cfg = config(tight_blocks(GetParam()));
  // The first step stalls while the second case arrives, so both are planned
  // together on any machine (a descheduled test thread could otherwise let
  // the first case finish alone, and nothing would be preempted).
  cfg.faults.executor_stall_step = 1;
  cfg.faults.executor_stall_ms = 1500;
  runtime_fixture fx(cfg);
  ASSERT_TRUE(fx.ok()) << fx.error();
  run_cases(fx, g, "tight");
  EXPECT_GT(fx.stats().preemptions, 0u) << "the memory was meant to be too small for both";
}

INSTANTIATE_TEST_SUITE_P(moe_and_hybrid, arch_runtime,
                         ::testing::Values("qwen3moe-f32", "gpt-oss-f32", "gpt-oss-mxfp4", "qwen35-f32", "gemma4-f32"),
                         testing::model_param_name<::testing::TestParamInfo<std::string>>);

}  // namespace
}  // namespace cortex
