// Every architecture file against llama.cpp (2026-09-28): the tiny
// random-weight files of ../shared/golden/arch (see its README), each with
// every distinguishing feature of its family switched on. Teacher-forced:
// the prompt and llama.cpp's greedy tokens are fed as one prefill, and again
// as a prefill of the prompt followed by one-token decode steps, and again
// in chunks of 5 with the cases side by side in one ragged batch; the answer
// must not change. At every position each of the reference's top 8 logits
// must be within the file's atol + rtol*|ref| and in our top 32, and our
// argmax must equal llama.cpp's greedy token except where the reference's
// own top two are closer than twice the tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "kernels/thread_pool.hpp"
#include "model/forward.hpp"
#include "model/model.hpp"
#include "model/single_sequence.hpp"
#include "tests/support/golden.hpp"

namespace cortex {
namespace {

using nlohmann::json;

struct arch_checks {
  double atol = 0, rtol = 0;
  int n_vocab = 0;
  long n_checked = 0, n_outside = 0;
  double worst = 0;
  int argmax_checked = 0;

  // ours (n_vocab,) against one position's top 8; `next` is the greedy token
  // llama.cpp took from this position (-1: none).
  void check(const float* ours, const json& ref, int next, const std::string& where) {
    std::vector<int> order(static_cast<size_t>(n_vocab));
    for (int i = 0; i < n_vocab; ++i) order[static_cast<size_t>(i)] = i;
    std::partial_sort(order.begin(), order.begin() + 32, order.end(), [&](int a, int b) { return ours[a] > ours[b]; });
    for (const auto& e : ref) {
      const int id = e[0].get<int>();
      const double r = e[1].get<double>();
      const double allowed = atol + rtol * std::abs(r);
      const double diff = std::abs(static_cast<double>(ours[id]) - r);
      ++n_checked;
      worst = std::max(worst, diff / allowed);
      if (diff > allowed && ++n_outside <= 5) {
        ADD_FAILURE() << where << ": token " << id << " ours " << ours[id] << " ref " << r << " diff " << diff;
      }
      EXPECT_TRUE(std::find(order.begin(), order.begin() + 32, id) != order.begin() + 32)
          << where << ": reference top-8 token " << id << " is not in our top 32";
    }
    if (next < 0) return;
    const double top = ref[0][1].get<double>(), second = ref[1][1].get<double>();
    if (top - second < 2 * (atol + rtol * std::abs(top))) return;  // a near tie in the reference itself
    ++argmax_checked;
    const int ours_best = order[0];
    EXPECT_EQ(ours_best, next) << where << ": greedy token differs";
  }

  void expect_ok(const std::string& what) const {
    EXPECT_GT(n_checked, 0);
    EXPECT_EQ(n_outside, 0) << what << ": " << n_outside << " of " << n_checked << " logits outside tolerance";
    std::printf("[ golden   ] %s: %ld logits, %d argmax checked, %ld outside, worst diff/allowed %.3f\n", what.c_str(),
                n_checked, argmax_checked, n_outside, worst);
  }
};

class arch_golden : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    CORTEX_NEEDS_REFERENCE_DATA();
    // ../shared's files, then the ones made here with the reference (tests/data/arch, scripts/golden).
    std::string dir = testing::shared_dir() + "/golden/arch/";
    if (!testing::file_exists(dir + GetParam() + ".json")) dir = std::string(CORTEX_SOURCE_DIR) + "/tests/data/arch/";
    golden_ = testing::load_json(dir + GetParam() + ".json");
    ASSERT_FALSE(golden_.is_discarded()) << "cannot read " << dir << GetParam() << ".json";
    auto m = model::load(dir + golden_["model"].get<std::string>());
    ASSERT_TRUE(m) << m.error().message;
    model_ = std::move(*m);
    ASSERT_EQ(model_->hparams().n_vocab, golden_["n_vocab"].get<int>());
  }
  arch_checks checks() const {
    return {golden_["atol"].get<double>(), golden_["rtol"].get<double>(), model_->hparams().n_vocab};
  }
  // The reference's top 8 at position p of tokens + greedy[:-1], and the greedy token taken there.
  static const json& ref_at(const json& c, size_t p) {
    const size_t n_prompt = c["tokens"].size();
    return p < n_prompt ? c["prefill_top8"][p] : c["decode_top8"][p - n_prompt];
  }
  static int next_at(const json& c, size_t p) {
    const size_t n_prompt = c["tokens"].size();
    return p + 1 < n_prompt ? -1 : c["greedy"][p + 1 - n_prompt].get<int>();
  }
  static std::vector<int32_t> forced(const json& c) {
    auto t = c["tokens"].get<std::vector<int32_t>>();
    const auto g = c["greedy"].get<std::vector<int32_t>>();
    t.insert(t.end(), g.begin(), g.end() - 1);
    return t;
  }

  json golden_;
  std::unique_ptr<model> model_;
  kernels::thread_pool pool_{2};
};

TEST_P(arch_golden, teacher_forced_as_one_prefill) {
  arch_checks ck = checks();
  int ci = 0;
  for (const auto& c : golden_["cases"]) {
    const auto toks = forced(c);
    single_sequence seq(*model_, pool_, static_cast<int>(toks.size()), kernels::kv_type::f32);
    ASSERT_EQ(seq.feed(toks, logits_mode::all), static_cast<int>(toks.size()));
    for (size_t p = 0; p < toks.size(); ++p) {
      ck.check(seq.logits(static_cast<int>(p)), ref_at(c, p), next_at(c, p),
               "case " + std::to_string(ci) + " pos " + std::to_string(p));
    }
    ++ci;
  }
  ck.expect_ok(GetParam() + " one prefill");
}

TEST_P(arch_golden, prefill_then_one_token_decode_steps) {
  arch_checks ck = checks();
  int ci = 0;
  for (const auto& c : golden_["cases"]) {
    const auto prompt = c["tokens"].get<std::vector<int32_t>>();
    const auto toks = forced(c);
    single_sequence seq(*model_, pool_, static_cast<int>(toks.size()), kernels::kv_type::f32);
    ASSERT_EQ(seq.feed(prompt, logits_mode::all), static_cast<int>(prompt.size()));
    for (size_t p = 0; p < prompt.size(); ++p) {
      ck.check(seq.logits(static_cast<int>(p)), ref_at(c, p), next_at(c, p), "case " + std::to_string(ci) + " pos " + std::to_string(p));
    }
    for (size_t p = prompt.size(); p < toks.size(); ++p) {
      seq.feed({toks[p]}, logits_mode::last);
      ck.check(seq.logits(0), ref_at(c, p), next_at(c, p), "case " + std::to_string(ci) + " decode pos " + std::to_string(p));
    }
    ++ci;
  }
  ck.expect_ok(GetParam() + " prefill + decode steps");
}

// Both cases side by side in each step, fed in chunks of 5 tokens, with
// interleaved non-contiguous blocks of 4 tokens (a window of 10 or 12 then
// spans block boundaries at every offset).
TEST_P(arch_golden, chunked_ragged_batches) {
  arch_checks ck = checks();
  const int bs = 4, chunk = 5;
  std::vector<std::vector<int32_t>> toks;
  for (const auto& c : golden_["cases"]) toks.push_back(forced(c));
  int n_blocks = 0;
  for (const auto& t : toks) n_blocks += static_cast<int>((t.size() + bs - 1) / bs);
  kv_arena kv(model_->hparams(), n_blocks, bs, kernels::kv_type::f32);
  std::vector<std::vector<int32_t>> tables(toks.size());
  for (int b = 0, s = 0; b < n_blocks; ++b) {
    // Deal blocks out in turn (reversed ids), skipping finished tables.
    while (tables[static_cast<size_t>(s)].size() * bs >= toks[static_cast<size_t>(s)].size()) s = (s + 1) % static_cast<int>(toks.size());
    tables[static_cast<size_t>(s)].push_back(n_blocks - 1 - b);
    s = (s + 1) % static_cast<int>(toks.size());
  }
  forward_pass fwd(*model_, pool_);
  // Hybrid models: each sequence's recurrent state.
  std::vector<std::vector<float>> states(toks.size(), std::vector<float>(model_->hparams().state_floats()));
  std::vector<size_t> done(toks.size(), 0);
  for (bool more = true; more;) {
    std::vector<batch_seq> batch;
    std::vector<size_t> which;
    for (size_t i = 0; i < toks.size(); ++i) {
      if (done[i] == toks[i].size()) continue;
      batch_seq s;
      s.tokens = toks[i].data() + done[i];
      s.n_tokens = static_cast<int32_t>(std::min<size_t>(chunk, toks[i].size() - done[i]));
      s.pos0 = static_cast<int32_t>(done[i]);
      s.block_table = tables[i].data();
      s.n_blocks = static_cast<int32_t>(tables[i].size());
      s.logits = logits_mode::all;
      s.state = states[i].data();
      batch.push_back(s);
      which.push_back(i);
    }
    if (batch.empty()) break;
    fwd.run(batch, kv);
    int row = 0;
    for (size_t bi = 0; bi < batch.size(); ++bi) {
      const size_t i = which[bi];
      const json& c = golden_["cases"][i];
      for (int j = 0; j < batch[bi].n_tokens; ++j, ++row) {
        const size_t p = done[i] + static_cast<size_t>(j);
        ck.check(fwd.logits(row), ref_at(c, p), next_at(c, p), "case " + std::to_string(i) + " pos " + std::to_string(p));
      }
      done[i] += static_cast<size_t>(batch[bi].n_tokens);
    }
    more = true;
  }
  ck.expect_ok(GetParam() + " chunks of 5 in ragged batches");
}

const auto param_name = testing::model_param_name<::testing::TestParamInfo<std::string>>;

// The llama-shape file in one tensor type each (README: 0.3 / 0.03, BF16 0.1 / 0.01).
INSTANTIATE_TEST_SUITE_P(quant, arch_golden, ::testing::Values("qllama-q5_0", "qllama-q3_k", "qllama-bf16", "qllama-iq4_nl", "qllama-mxfp4", "qllama-iq2_xxs", "qllama-iq3_s"), param_name);

INSTANTIATE_TEST_SUITE_P(dense, arch_golden,
                         ::testing::Values("llama-f32", "qwen2-f32", "qwen3-f32", "granite-f32", "smollm3-f32", "phi3-f32",
                                           "gemma2-f32", "gemma3-f32", "gemma4-f32"),
                         param_name);

// Mixture-of-experts files (issue "Mixture-of-experts and hybrid models").
// Hybrid recurrent files.
INSTANTIATE_TEST_SUITE_P(hybrid, arch_golden, ::testing::Values("qwen35-f32"), param_name);

INSTANTIATE_TEST_SUITE_P(moe, arch_golden,
                         ::testing::Values("qwen3moe-f32", "gpt-oss-f32", "gpt-oss-mxfp4", "gemma4-moe-f32"), param_name);

}  // namespace
}  // namespace cortex
