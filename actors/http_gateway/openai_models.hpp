// GET /v1/models and /v1/models/{id} bodies (http.md "Endpoints"), as
// OpenAI's: a model object {"id", "object": "model", "created",
// "owned_by"}; the list {"object": "list", "data": [model...]}. An id that
// is not loaded is a 404 unknown_model (openai_model_not_found). CAF-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actors/http_gateway/openai_error.hpp"

namespace cortex::http {

// `names`: the loaded models (protocol v1 `models.name`); `created`: unix
// seconds when they were loaded.
std::string openai_model_list_body(const std::vector<std::string>& names, int64_t created);
std::string openai_model_body(const std::string& name, int64_t created);
// The error for /v1/models/{id} with an id that is not loaded.
openai_error openai_model_not_found(const std::string& id);

}  // namespace cortex::http
