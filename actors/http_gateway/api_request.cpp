#include "actors/http_gateway/api_request.hpp"

#include "actors/http_gateway/openai_json.hpp"

namespace cortex::http::detail {

bool read_api_body(const std::string& body, const openai_limits& lim, api_body& out, openai_error& err) {
  json_field_reader r(err);
  if (json_nesting_depth(body, lim.max_depth) > lim.max_depth)
    return r.fail(errc::too_large, "", "the body nests arrays and objects deeper than " + std::to_string(lim.max_depth) + " levels");
  try {
    out.doc = json::parse(body);
  } catch (const json::exception& e) {
    return r.fail(errc::malformed, "", std::string("the body is not valid JSON: ") + e.what());
  }
  if (!out.doc.is_object()) return r.fail(errc::malformed, "", "the body must be a JSON object, got " + describe_json(out.doc));
  out.ordered = ordered_json::parse(body, nullptr, false);
  return true;
}

const json* field(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

std::string at(const std::string& param, size_t i) { return param + "[" + std::to_string(i) + "]"; }

bool read_text_or_parts(json_field_reader& r, const json& v, const std::string& param,
                        std::initializer_list<const char*> types, std::string& out) {
  if (v.is_string()) {
    out = v.get<std::string>();
    return true;
  }
  std::string names;
  for (const char* t : types) names += std::string(names.empty() ? "" : " or ") + "\"" + t + "\"";
  if (!v.is_array()) return r.expected(param, "a string or an array of {type: " + names + ", text} parts", v);
  out.clear();
  for (size_t k = 0; k < v.size(); ++k) {
    const json& part = v[k];
    const std::string pp = at(param, k);
    if (!part.is_object()) return r.expected(pp, "an object {type: " + names + ", text}", part);
    const json* type = field(part, "type");
    std::string t;
    if (!type) return r.fail(errc::invalid_param, pp + ".type", pp + ".type is required (" + names + ")");
    if (!r.read_string(*type, pp + ".type", t)) return false;
    bool known = false;
    for (const char* ok : types) known = known || t == ok;
    if (!known) {
      const bool media = t.find("image") != std::string::npos || t.find("file") != std::string::npos ||
                         t.find("audio") != std::string::npos || t == "document";
      if (media) return r.fail(errc::unsupported, pp + ".type", pp + " is a " + t + " part; only text parts are supported");
      return r.expected(pp + ".type", names, *type);
    }
    const json* text = field(part, "text");
    std::string s;
    if (!text) return r.fail(errc::invalid_param, pp + ".text", pp + ".text is required");
    if (!r.read_string(*text, pp + ".text", s)) return false;
    out += s;
  }
  return true;
}

bool read_required_string(json_field_reader& r, const json& obj, const std::string& param, const char* key,
                          std::string& out) {
  const json* v = field(obj, key);
  if (!v) return r.fail(errc::invalid_param, param + "." + key, param + "." + key + " is required");
  return r.read_string(*v, param + "." + key, out);
}

bool read_function_tool(json_field_reader& r, const json& t, const ordered_json& ordered_t, const std::string& param,
                        const char* schema_key, bool schema_required, ordered_json& out) {
  std::string name, s;
  if (!read_required_string(r, t, param, "name", name)) return false;
  ordered_json fn = {{"name", name}};
  if (const json* d = field(t, "description")) {
    if (!r.read_string(*d, param + ".description", s)) return false;
    fn["description"] = s;
  }
  const json* schema = field(t, schema_key);
  if ((schema || schema_required) && !(schema && schema->is_object()))
    return r.fail(errc::invalid_param, param + "." + schema_key,
                  param + "." + schema_key + (schema_required ? " is required: " : " must be ") + "a JSON Schema object");
  if (schema) fn["parameters"] = ordered_t[schema_key];
  out = {{"type", "function"}, {"function", std::move(fn)}};
  return true;
}

openai_parse_result parse_mapped_chat(const ordered_json& chat_body, const openai_limits& lim) {
  openai_limits inner = lim;
  inner.max_depth = lim.max_depth + 2;
  return parse_openai_request(openai_endpoint::chat_completions, dump_json(chat_body), inner);
}

}  // namespace cortex::http::detail
