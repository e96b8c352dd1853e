#include "actors/http_gateway/openai_models.hpp"

#include <nlohmann/json.hpp>

#include "actors/http_gateway/openai_json.hpp"

namespace cortex::http {

namespace {

nlohmann::ordered_json model_object(const std::string& name, int64_t created) {
  return {{"id", name}, {"object", "model"}, {"created", created}, {"owned_by", "cortexstream"}};
}

}  // namespace

std::string openai_model_list_body(const std::vector<std::string>& names, int64_t created) {
  nlohmann::ordered_json data = nlohmann::ordered_json::array();
  for (const std::string& n : names) data.push_back(model_object(n, created));
  return dump_json(nlohmann::ordered_json{{"object", "list"}, {"data", std::move(data)}});
}

std::string openai_model_body(const std::string& name, int64_t created) { return dump_json(model_object(name, created)); }

openai_error openai_model_not_found(const std::string& id) {
  openai_error e;
  e.report.code = errc::unknown_model;
  e.report.message = "model " + nlohmann::json(id).dump() + " is not loaded; GET /v1/models lists the loaded ones";
  e.param = "model";
  return e;
}

}  // namespace cortex::http
