// /v1/models bodies and the unknown-model error.
#include "actors/http_gateway/openai_models.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace cortex::http {
namespace {

using nlohmann::json;

TEST(OpenaiModels, ListAndOne) {
  EXPECT_EQ(json::parse(openai_model_list_body({"stories260K"}, 1700000000)), json::parse(R"({"object":"list",
      "data":[{"id":"stories260K","object":"model","created":1700000000,"owned_by":"cortexstream"}]})"));
  EXPECT_EQ(json::parse(openai_model_body("stories260K", 5)),
            json::parse(R"({"id":"stories260K","object":"model","created":5,"owned_by":"cortexstream"})"));
}

TEST(OpenaiModels, UnknownIdIs404) {
  const openai_error_response r = make_openai_error(openai_model_not_found("gpt-4"));
  EXPECT_EQ(r.status, 404);
  const json e = json::parse(r.body)["error"];
  EXPECT_EQ(e["code"], "unknown_model");
  EXPECT_EQ(e["param"], "model");
  EXPECT_NE(e["message"].get<std::string>().find("gpt-4"), std::string::npos);
}

}  // namespace
}  // namespace cortex::http
