// The embeddings response and its base64 float32 encoding.
#include "actors/http_gateway/openai_embedding.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace cortex::http {
namespace {

using nlohmann::json;

TEST(OpenaiEmbedding, Base64OfLittleEndianFloat32) {
  // 1.0f = 0x3F800000 -> bytes 00 00 80 3F -> "AACAPw==" (RFC 4648 by hand).
  const float one = 1.0f;
  EXPECT_EQ(base64_f32le(&one, 1), "AACAPw==");
  // -2.0f = 0xC0000000 -> 00 00 00 C0; 0.5f = 0x3F000000 -> 00 00 00 3F;
  // 00 00 00 C0 00 00 | 00 3F -> "AAAAwAAA" + "AD8=".
  const float two[] = {-2.0f, 0.5f};
  EXPECT_EQ(base64_f32le(two, 2), "AAAAwAAAAD8=");
  // Three floats = 12 bytes: no padding.
  const float three[] = {0.0f, 0.0f, 0.0f};
  EXPECT_EQ(base64_f32le(three, 3), "AAAAAAAAAAAAAAAA");
  EXPECT_EQ(base64_f32le(nullptr, 0), "");
}

TEST(OpenaiEmbedding, FloatBody) {
  const std::string body = openai_embedding_body("stories260K", {{0.6f, -0.8f}, {1.0f, 0.0f}}, 9, false);
  EXPECT_EQ(json::parse(body), json::parse(R"({"object":"list","data":[
      {"object":"embedding","index":0,"embedding":[0.6,-0.8]},
      {"object":"embedding","index":1,"embedding":[1.0,0.0]}],
      "model":"stories260K","usage":{"prompt_tokens":9,"total_tokens":9}})"));
  EXPECT_NE(body.find("[0.6,-0.8]"), std::string::npos);  // shortest float text
}

TEST(OpenaiEmbedding, Base64Body) {
  const json j = json::parse(openai_embedding_body("m", {{1.0f}}, 2, true));
  EXPECT_EQ(j["data"][0]["embedding"], "AACAPw==");
  EXPECT_EQ(j["usage"]["total_tokens"], 2);
}

// /v1/rerank: results by score, highest first, equal scores in index
// order, cut to top_n; llama-server's shape.
TEST(OpenaiRerank, SortedCutToTopN) {
  const std::vector<std::vector<float>> scores = {{-0.5f}, {2.0f}, {0.25f}, {2.0f}};
  EXPECT_EQ(json::parse(openai_rerank_body("r", scores, 40, 3)), json::parse(R"({"model":"r","object":"list",
      "usage":{"prompt_tokens":40,"total_tokens":40},
      "results":[{"index":1,"relevance_score":2.0},{"index":3,"relevance_score":2.0},
                 {"index":2,"relevance_score":0.25}]})"));
  const json all = json::parse(openai_rerank_body("r", scores, 40, 10));
  ASSERT_EQ(all["results"].size(), 4u);
  EXPECT_EQ(all["results"][3]["index"], 0);
}

}  // namespace
}  // namespace cortex::http
