// protocol.md: the same seed, params and prompt give the same output in any
// batch and after any preemption. 24 seeded requests at temperature 1 and 8
// greedy ones on a Q4_0 model with the default F16 K/V cache, each first run
// alone, then all at once: in one batch, with prompts cut in odd chunks,
// under frequent preemption, and beside 16 random other requests. Every
// request must give the tokens it gave alone. Threaded: every wait has a
// timeout.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tests/support/golden.hpp"
#include "tests/support/runtime_harness.hpp"

namespace cortex {
namespace {

using testing::runtime_fixture;

constexpr int k_requests = 32;

runtime_config base_config() {
  runtime_config c = testing::test_runtime_config(testing::shared_dir() + "/golden/models/tiny-llama-q4_0.gguf");
  c.kv_type = kernels::kv_type::f16;  // the default, where chunking used to change the bits
  c.kv_blocks = 1024;
  c.scheduler.max_batch_tokens = 256;
  return c;
}

generation_request make_request(const std::string& id, int i, std::mt19937& rng) {
  generation_request r;
  r.client_id = id;
  r.use_tokens = true;
  r.tokens = {1};
  const int n = 20 + static_cast<int>(rng() % 180);
  for (int k = 1; k < n; ++k) r.tokens.push_back(3 + static_cast<int32_t>(rng() % 1000));
  r.want_token_ids = true;
  r.params.ignore_eos = true;
  r.params.max_tokens = 24;
  if (i < 24) {
    r.params.temperature = 1.0f;
    r.params.has_seed = true;
    r.params.seed = 1000 + static_cast<uint64_t>(i);
  } else {
    r.params.temperature = 0.0f;
  }
  return r;
}

std::vector<generation_request> the_requests() {
  std::mt19937 rng(31);
  std::vector<generation_request> out;
  for (int i = 0; i < k_requests; ++i) out.push_back(make_request("r" + std::to_string(i), i, rng));
  return out;
}

// Runs every request at once (and `others` beside them) and returns their tokens.
std::vector<std::vector<int32_t>> run_all(const runtime_config& cfg, const std::vector<generation_request>& reqs,
                                          int others, engine_stats* stats) {
  runtime_fixture fx(cfg);
  EXPECT_TRUE(fx.ok()) << fx.error();
  std::vector<std::string> ids;
  std::mt19937 rng(77);
  for (int k = 0; k < others; ++k) {
    auto o = make_request("other" + std::to_string(k), static_cast<int>(rng() % k_requests), rng);
    o.params.seed = rng();
    ids.push_back(o.client_id);
    fx.submit(o);
  }
  for (const auto& r : reqs) {
    ids.push_back(r.client_id);
    fx.submit(r);
  }
  EXPECT_TRUE(fx.log().wait_done(ids, std::chrono::seconds(300)));
  std::vector<std::vector<int32_t>> out;
  for (const auto& r : reqs) out.push_back(fx.log().get(r.client_id).token_ids());
  if (stats) *stats = fx.stats();
  return out;
}

TEST(determinism_runtime, same_seed_same_tokens_in_any_batch_and_after_preemption) {
  CORTEX_NEEDS_REFERENCE_DATA();
  const auto reqs = the_requests();
  std::vector<std::vector<int32_t>> alone;
  {
    runtime_fixture fx(base_config());
    ASSERT_TRUE(fx.ok()) << fx.error();
    for (const auto& r : reqs) {
      fx.submit(r);
      ASSERT_TRUE(fx.log().wait_done({r.client_id}));
      alone.push_back(fx.log().get(r.client_id).token_ids());
      ASSERT_EQ(alone.back().size(), 24u) << r.client_id;
    }
  }
  struct variant {
    std::string name;
    runtime_config cfg;
    int others;
  };
  std::vector<variant> variants;
  variants.push_back({"all at once", base_config(), 0});
  variants.push_back({"prompts in odd chunks", base_config(), 0});
  variants.back().cfg.scheduler.max_prefill_chunk = 7;
  variants.back().cfg.scheduler.max_batch_tokens = 61;
  variants.push_back({"frequent preemption", base_config(), 0});
  variants.back().cfg.kv_blocks = 40;  // 32 requests of up to 14 blocks each
  variants.back().cfg.scheduler.max_prefill_chunk = 13;
  variants.push_back({"beside 16 random others", base_config(), 16});
  for (const auto& v : variants) {
    engine_stats st;
    const auto got = run_all(v.cfg, reqs, v.others, &st);
    int same = 0;
    for (int i = 0; i < k_requests; ++i) {
      const bool eq = got[static_cast<size_t>(i)] == alone[static_cast<size_t>(i)];
      same += eq;
      EXPECT_TRUE(eq) << v.name << ": request " << i << (i < 24 ? " (seeded)" : " (greedy)") << " differs from alone";
    }
    std::printf("[ determinism ] %s: %d/%d identical to alone (%llu preemptions, %u seqs in the largest step)\n",
                v.name.c_str(), same, k_requests, static_cast<unsigned long long>(st.preemptions), st.step_seqs_max);
    if (v.name == "frequent preemption") {
      EXPECT_GT(st.preemptions, 0u) << "the memory was meant to preempt";
    }
  }
}

}  // namespace
}  // namespace cortex
