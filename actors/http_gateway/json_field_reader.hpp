// Internal to the OpenAI request parser: typed reads of JSON request fields
// with http.md's error rules. Every read_* returns true on success; on
// failure it records the error (the first one wins) with the field's JSON
// path as `param` and returns false. A wrong type or an out-of-range value
// is 400 invalid_param ("<field> must be <what>, got <value>"); a count over
// a size cap is 413 too_large, as protocol.md's caps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actors/http_gateway/openai_error.hpp"

namespace cortex::http::detail {

using json = nlohmann::json;

// What a JSON value is, for a message: "a string", "the number 3.5", "null".
std::string describe_json(const json& v);

// The deepest nesting of arrays and objects in JSON text (1 for `{}`),
// counting at most up to `limit + 1` (then it stops reading): bounds the
// parser's recursion before it runs.
uint32_t json_nesting_depth(const std::string& text, uint32_t limit);

class json_field_reader {
 public:
  explicit json_field_reader(openai_error& out) : out_(out) {}

  bool failed() const { return !out_.report.is_ok(); }
  // Records code / param / message unless an error is already recorded. Returns false.
  bool fail(errc code, const std::string& param, std::string message);
  // invalid_param "<param> must be <expected>, got <describe_json(v)>".
  bool expected(const std::string& param, const std::string& what, const json& v);
  // 413 too_large "<param> has <n> <items>; at most <max> are allowed".
  bool too_many(const std::string& param, size_t n, size_t max, const char* items);

  bool read_bool(const json& v, const std::string& param, bool& out);
  // An integer (not 2.0) in [lo, hi]; `range` words it ("an integer in 1..8").
  bool read_int(const json& v, const std::string& param, int64_t lo, int64_t hi, const std::string& range,
                int64_t& out);
  // A number for which in_range(x) holds; `range` words it.
  template <class Pred>
  bool read_number(const json& v, const std::string& param, const std::string& range, Pred in_range, float& out) {
    if (!v.is_number() || !in_range(v.get<double>())) return expected(param, range, v);
    out = static_cast<float>(v.get<double>());
    return true;
  }
  bool read_string(const json& v, const std::string& param, std::string& out);
  // A token id: an integer in [0, 2^31) (< vocab is intake's check).
  bool read_token_id(const json& v, const std::string& param, int32_t& out);
  // An array of at most `max` token ids (more: 413), non-empty unless allow_empty.
  bool read_token_ids(const json& v, const std::string& param, size_t max, std::vector<int32_t>& out,
                      bool allow_empty = false);

 private:
  openai_error& out_;
};

}  // namespace cortex::http::detail
