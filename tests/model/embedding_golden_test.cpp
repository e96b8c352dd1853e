// Embeddings against llama.cpp's llama-embedding (--pooling mean, L2
// normalized; ../shared/golden/embeddings/README.md): every component within
// 1e-4, with the input in one batch and prefilled in chunks of 7 tokens (the
// pooled sum must not depend on how the prompt is cut).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "kernels/thread_pool.hpp"
#include "model/embedding.hpp"
#include "model/model.hpp"
#include "model/single_sequence.hpp"
#include "text/tokenizer.hpp"
#include "tests/support/golden.hpp"

namespace cortex {
namespace {

using nlohmann::json;

constexpr double k_atol = 1e-4;  // the README's bar, per component

TEST(pooled_embedding, mean_then_unit_length) {
  const float sum[2] = {6.0f, 8.0f};  // mean (3, 4), norm 5
  const auto e = pooled_embedding(sum, 2, 2);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_FLOAT_EQ(e[0], 0.6f);
  EXPECT_FLOAT_EQ(e[1], 0.8f);
  const float zero[3] = {0, 0, 0};
  for (float v : pooled_embedding(zero, 3, 4)) EXPECT_EQ(v, 0.0f);
}

class golden_embedding : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string golden_file = testing::reference_file("embeddings/" + GetParam() + ".json");
    CORTEX_NEEDS_REFERENCE_FILE(golden_file);
    golden_ = testing::load_json(golden_file);
    ASSERT_FALSE(golden_.is_discarded()) << "cannot read golden file for " << GetParam();
    ASSERT_EQ(golden_["pooling"], "mean");
    ASSERT_EQ(golden_["normalize"], "l2");
    auto m = model::load(testing::model_path(golden_["model"].get<std::string>()));
    ASSERT_TRUE(m) << m.error();
    model_ = std::move(*m);
  }

  // Worst |ours - ref| over every case, prefilling in chunks of `chunk`.
  double worst_diff(int chunk) {
    double worst = 0;
    for (const auto& c : golden_["cases"]) {
      const auto ids = c["ids"].get<std::vector<int32_t>>();
      const auto ref = c["embedding"].get<std::vector<double>>();
      single_sequence seq(*model_, pool_, static_cast<int>(ids.size()), kernels::kv_type::f32);
      auto e = embed_tokens(seq, *model_, ids, chunk);
      EXPECT_TRUE(e) << e.error();
      if (!e) continue;
      EXPECT_EQ(e->size(), ref.size());
      if (e->size() != ref.size()) continue;
      double case_worst = 0;
      for (size_t i = 0; i < ref.size(); ++i) case_worst = std::max(case_worst, std::abs((*e)[i] - ref[i]));
      EXPECT_LE(case_worst, k_atol) << GetParam() << " chunk " << chunk << ": " << ids.size() << " tokens, text '"
                                    << c["text"].get<std::string>() << "'";
      worst = std::max(worst, case_worst);
    }
    return worst;
  }

  json golden_;
  std::unique_ptr<model> model_;
  kernels::thread_pool pool_{2};
};

TEST_P(golden_embedding, tokenizer_gives_reference_ids) {
  for (const auto& c : golden_["cases"]) {
    EXPECT_EQ(model_->tokenizer().encode(c["text"].get<std::string>(), true), c["ids"].get<std::vector<int32_t>>())
        << c["text"];
  }
}

TEST_P(golden_embedding, one_batch_matches_reference) {
  const double worst = worst_diff(1 << 20);
  std::printf("[ golden   ] %s embeddings, one batch: worst abs diff %.3g\n", GetParam().c_str(), worst);
}

TEST_P(golden_embedding, chunks_of_7_match_reference) {
  const double worst = worst_diff(7);
  std::printf("[ golden   ] %s embeddings, chunks of 7: worst abs diff %.3g\n", GetParam().c_str(), worst);
}

TEST_P(golden_embedding, bad_input_is_an_error) {
  single_sequence seq(*model_, pool_, 4, kernels::kv_type::f32);
  EXPECT_FALSE(embed_tokens(seq, *model_, {}));
  EXPECT_FALSE(embed_tokens(seq, *model_, {1, 2, 3, 4, 5}));
  EXPECT_FALSE(embed_tokens(seq, *model_, {1, model_->hparams().n_vocab}));
  EXPECT_FALSE(embed_tokens(seq, *model_, {1, -1}));
}

INSTANTIATE_TEST_SUITE_P(models, golden_embedding, ::testing::Values("stories260K", "tiny-llama-f32", "tiny-qwen2-f32"),
                         testing::model_param_name<::testing::TestParamInfo<std::string>>);

}  // namespace
}  // namespace cortex
