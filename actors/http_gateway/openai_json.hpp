// JSON helpers shared by the OpenAI request parser and response encoders
// (nlohmann::json, Debian's nlohmann-json3-dev). CAF-free; nothing throws.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace cortex::http {

// One-line JSON text. Strings that are not valid UTF-8 (a token's bytes
// that end inside a character) get U+FFFD instead of throwing.
// Responses use ordered_json, so that fields appear as OpenAI orders them.
std::string dump_json(const nlohmann::json& j);
std::string dump_json(const nlohmann::ordered_json& j);

// A float as the JSON number with the fewest digits that reads back as the
// same float (-0.1f -> -0.1, not -0.10000000149011612). Non-finite values
// (JSON has none) become `non_finite`.
double json_float(float v, double non_finite = 0.0);

}  // namespace cortex::http
