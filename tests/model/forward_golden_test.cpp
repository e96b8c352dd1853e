// The model engine against llama.cpp: logits at every prompt position and
// every teacher-forced decode step, greedy ids, and (for stories260K) the
// exact generated text. Also checks that chunked prefill and ragged batches
// give the same answers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <memory>

#include "kernels/thread_pool.hpp"
#include "model/forward.hpp"
#include "model/model.hpp"
#include "model/single_sequence.hpp"
#include "text/tokenizer.hpp"
#include "tests/support/golden.hpp"

namespace cortex {
namespace {

using nlohmann::json;
using testing::tolerance;

int argmax(const float* x, int n) { return static_cast<int>(std::max_element(x, x + n) - x); }

// Tally of logit checks against the README tolerance.
//
// Every file is held to the README tolerance on every listed logit, except
// tiny-qwen2-q8_0 (see relaxed_files). Its logits are large (top 130-190, the
// listed ones down to ~40) and both llama.cpp and we quantize activations to
// 8 bits: a float difference of one ulp anywhere (summation order, exp
// approximation) occasionally flips a rounding, and this file turns a flip
// into differences around the tolerance of its smaller listed logits.
// llama.cpp itself does not stay within the README tolerance on this file
// when built differently: the golden commit (c392e50) built for AVX2 only has
// 4 of 5,456 checks outside (worst 1.10x), built without tinyBLAS 3 (1.08x);
// our AVX-512 / AVX2 / scalar paths have 6 / 5-8 / 10 (worst 1.27x). There
// the bar is: at most 0.5% of checks outside the tolerance, none beyond 1.5x.
// CORTEX_GOLDEN_VERBOSE=1 prints every check beyond half its tolerance.
const char* const relaxed_files[] = {"tiny-qwen2-q8_0"};

bool is_relaxed(const std::string& name) {
  return std::find(std::begin(relaxed_files), std::end(relaxed_files), name) != std::end(relaxed_files);
}

struct logit_checks {
  bool strict = true;
  long n_checked = 0;
  long n_outside = 0;
  double worst_ratio = 0;  // max diff / allowed
  bool verbose = std::getenv("CORTEX_GOLDEN_VERBOSE") != nullptr;

  void check_top8(const float* ours, const json& ref, const tolerance& tol, const std::string& where) {
    for (const auto& e : ref) {
      const int id = e[0].get<int>();
      const double r = e[1].get<double>();
      const double diff = std::abs(static_cast<double>(ours[id]) - r);
      const double allowed = tol.atol + tol.rtol * std::abs(r);
      ++n_checked;
      if (verbose && diff > 0.5 * allowed) {
        std::printf("  %s: token %d ours %g ref %g diff/allowed %.3f\n", where.c_str(), id, ours[id], r, diff / allowed);
      }
      worst_ratio = std::max(worst_ratio, diff / allowed);
      if (diff > allowed && ++n_outside <= 3 && (strict || diff > 1.5 * allowed)) {
        ADD_FAILURE() << where << ": token " << id << " ours " << ours[id] << " ref " << r << " diff " << diff;
      }
    }
  }

  void expect_ok(const std::string& what) const {
    ASSERT_GT(n_checked, 0);
    if (strict) {
      EXPECT_EQ(n_outside, 0) << what << ": " << n_outside << " of " << n_checked << " logits outside tolerance";
    } else {
      EXPECT_LE(n_outside * 200, n_checked) << what << ": " << n_outside << " of " << n_checked << " logits outside tolerance";
      EXPECT_LE(worst_ratio, 1.5) << what;
    }
    std::printf("[ golden   ] %s: %ld logits checked, %ld outside tolerance, worst diff/allowed %.3f\n", what.c_str(),
                n_checked, n_outside, worst_ratio);
  }
};

class golden_generation : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string golden_file = testing::reference_file("generation/" + GetParam() + ".json");
    CORTEX_NEEDS_REFERENCE_FILE(golden_file);
    golden_ = testing::load_json(golden_file);
    ASSERT_FALSE(golden_.is_discarded()) << "cannot read golden file for " << GetParam();
    auto m = model::load(testing::model_path(golden_["model"].get<std::string>()));
    ASSERT_TRUE(m) << m.error().message;
    model_ = std::move(*m);
    tol_ = testing::tolerance_for(GetParam());
    ASSERT_EQ(model_->hparams().n_vocab, golden_["n_vocab"].get<int>());
  }

  json golden_;
  std::unique_ptr<model> model_;
  tolerance tol_{};
  kernels::thread_pool pool_{2};
};

// Prefill logits at every position, teacher-forced decode logits, greedy ids.
TEST_P(golden_generation, logits_and_greedy_match_reference) {
  const int n_vocab = model_->hparams().n_vocab;
  logit_checks checks{!is_relaxed(GetParam())};
  int case_no = 0;
  for (const auto& c : golden_["cases"]) {
    const auto tokens = c["tokens"].get<std::vector<int32_t>>();
    const auto greedy = c["greedy"].get<std::vector<int32_t>>();
    const std::string tag = GetParam() + " case " + std::to_string(case_no++);
    single_sequence seq(*model_, pool_, static_cast<int>(tokens.size() + greedy.size()) + 1, kernels::kv_type::f32);
    ASSERT_EQ(seq.feed(tokens, logits_mode::all), static_cast<int>(tokens.size()));
    for (size_t p = 0; p < tokens.size(); ++p) {
      checks.check_top8(seq.logits(static_cast<int>(p)), c["prefill_top8"][p], tol_, tag + " prefill pos " + std::to_string(p));
    }
    // Teacher forcing: feed llama.cpp's greedy tokens, compare each step.
    int matched = argmax(seq.logits(static_cast<int>(tokens.size()) - 1), n_vocab) == greedy[0] ? 1 : 0;
    bool diverged = matched == 0;
    const auto& decode = c["decode_top8"];
    for (size_t j = 0; j + 1 < greedy.size(); ++j) {
      seq.feed({greedy[j]}, logits_mode::last);
      checks.check_top8(seq.logits(0), decode[j], tol_, tag + " decode step " + std::to_string(j + 1));
      if (!diverged && argmax(seq.logits(0), n_vocab) == greedy[j + 1]) ++matched; else diverged = true;
    }
    if (tol_.greedy_must_match) {
      EXPECT_EQ(matched, static_cast<int>(greedy.size())) << tag << ": greedy ids diverge at step " << matched;
    } else {
      RecordProperty(tag + " greedy_prefix", matched);
    }
  }
  checks.expect_ok(GetParam() + " prefill + teacher-forced decode");
}

// Free-running greedy generation from our own logits reproduces llama.cpp's
// tokens and bytes (the end-to-end check for F32/F16 files).
// Only for F32/F16 files: with 8-bit activations greedy may diverge on near
// ties (golden README), so quantized files are not instantiated here.
class golden_generation_exact : public golden_generation {};

// Greedy ids after `tokens` with the K/V cache stored as kv.
std::vector<int32_t> greedy_ids(const model& m, kernels::thread_pool& pool, const std::vector<int32_t>& tokens, size_t n,
                                kernels::kv_type kv) {
  single_sequence seq(m, pool, static_cast<int>(tokens.size() + n) + 1, kv);
  seq.feed(tokens, logits_mode::last);
  std::vector<int32_t> ours;
  for (size_t j = 0; j < n; ++j) {
    ours.push_back(argmax(seq.logits(0), m.hparams().n_vocab));
    if (j + 1 < n) seq.feed({ours.back()}, logits_mode::last);
  }
  return ours;
}

// Free-running greedy text with the cache as the references were made (F32)
// and, for the trained stories260K files, also with llama.cpp's default F16
// cache, whose rounding must not change a single token (llama.cpp's own
// -ctk f16 -ctv f16 run gives the same text).
TEST_P(golden_generation_exact, free_running_greedy_text) {
  ASSERT_TRUE(tol_.greedy_must_match);
  std::vector<kernels::kv_type> kv_types = {kernels::kv_type::f32};
  if (GetParam().rfind("stories260K", 0) == 0) kv_types.push_back(kernels::kv_type::f16);
  for (const auto& c : golden_["cases"]) {
    const auto tokens = c["tokens"].get<std::vector<int32_t>>();
    const auto greedy = c["greedy"].get<std::vector<int32_t>>();
    if (c.contains("text")) {
      EXPECT_EQ(model_->tokenizer().encode(c["text"].get<std::string>(), true), tokens) << "tokenizer disagrees on the prompt";
    }
    for (auto kv : kv_types) {
      const auto ours = greedy_ids(*model_, pool_, tokens, greedy.size(), kv);
      EXPECT_EQ(ours, greedy) << kernels::kv_type_name(kv) << " K/V";
      if (c.contains("greedy_bytes_hex")) {
        // llama.cpp's bytes are each generated token's piece (control tokens
        // render as nothing), with no leading-space removal: a continuation.
        std::string text;
        for (int32_t id : ours) text += model_->tokenizer().rendered_piece(id);
        EXPECT_EQ(text, testing::hex_to_bytes(c["greedy_bytes_hex"].get<std::string>())) << kernels::kv_type_name(kv) << " K/V";
      }
    }
  }
}

// The answer must not depend on how the prompt is cut or what shares the
// step: prefill in chunks of 7, and all cases together in one ragged batch.
TEST_P(golden_generation, chunked_and_batched_prefill_match_reference) {
  const auto& cases = golden_["cases"];
  logit_checks chunked{!is_relaxed(GetParam())}, batched{!is_relaxed(GetParam())};
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const auto tokens = cases[ci]["tokens"].get<std::vector<int32_t>>();
    single_sequence seq(*model_, pool_, static_cast<int>(tokens.size()), kernels::kv_type::f32);
    ASSERT_EQ(seq.feed(tokens, logits_mode::all, 7), static_cast<int>(tokens.size()));
    for (size_t p = 0; p < tokens.size(); ++p) {
      chunked.check_top8(seq.logits(static_cast<int>(p)), cases[ci]["prefill_top8"][p], tol_,
                 GetParam() + " chunked case " + std::to_string(ci) + " pos " + std::to_string(p));
    }
  }
  // One ragged batch: every case's prompt, each with its own blocks (interleaved ids).
  const int bs = 16;
  std::vector<std::vector<int32_t>> toks, tables;
  int n_blocks_total = 0;
  for (const auto& c : cases) {
    toks.push_back(c["tokens"].get<std::vector<int32_t>>());
    n_blocks_total += static_cast<int>((toks.back().size() + bs - 1) / bs);
  }
  kv_arena kv(model_->hparams(), n_blocks_total, bs, kernels::kv_type::f32);
  std::vector<int32_t> free_ids(static_cast<size_t>(n_blocks_total));
  for (int b = 0; b < n_blocks_total; ++b) free_ids[static_cast<size_t>(b)] = n_blocks_total - 1 - b;  // reversed: non-contiguous
  std::vector<batch_seq> batch;
  for (auto& t : toks) {
    tables.emplace_back();
    for (size_t b = 0; b < (t.size() + bs - 1) / bs; ++b) {
      tables.back().push_back(free_ids.back());
      free_ids.pop_back();
    }
  }
  for (size_t ci = 0; ci < toks.size(); ++ci) {
    batch_seq s;
    s.tokens = toks[ci].data();
    s.n_tokens = static_cast<int32_t>(toks[ci].size());
    s.pos0 = 0;
    s.block_table = tables[ci].data();
    s.n_blocks = static_cast<int32_t>(tables[ci].size());
    s.logits = logits_mode::all;
    batch.push_back(s);
  }
  forward_pass fwd(*model_, pool_);
  fwd.run(batch, kv);
  int row = 0;
  for (size_t ci = 0; ci < toks.size(); ++ci) {
    for (size_t p = 0; p < toks[ci].size(); ++p, ++row) {
      batched.check_top8(fwd.logits(row), cases[ci]["prefill_top8"][p], tol_,
                 GetParam() + " batched case " + std::to_string(ci) + " pos " + std::to_string(p));
    }
  }
  chunked.expect_ok(GetParam() + " prefill in chunks of 7");
  batched.expect_ok(GetParam() + " all cases in one ragged batch");
}

const auto param_name = testing::model_param_name<::testing::TestParamInfo<std::string>>;

INSTANTIATE_TEST_SUITE_P(models, golden_generation_exact,
                         ::testing::Values("stories260K", "stories260K-f16", "tiny-llama-f32", "tiny-llama-f16",
                                           "tiny-qwen2-f32"),
                         param_name);

INSTANTIATE_TEST_SUITE_P(models, golden_generation,
                         ::testing::Values("stories260K", "stories260K-f16", "stories260K-q8_0", "tiny-llama-f32",
                                           "tiny-llama-f16", "tiny-llama-q8_0", "tiny-llama-q4_0", "tiny-llama-q4_k_m",
                                           "tiny-qwen2-f32", "tiny-qwen2-q8_0", "spm-llama-q8_0"),
                         param_name);

}  // namespace
}  // namespace cortex
