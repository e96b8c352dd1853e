#include "actors/http_gateway/openai_request.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "actors/http_gateway/json_field_reader.hpp"
#include "actors/http_gateway/openai_json.hpp"
#include "grammar/json_schema.hpp"

namespace cortex::http {

const char* openai_endpoint_path(openai_endpoint e) {
  switch (e) {
    case openai_endpoint::chat_completions: return "/v1/chat/completions";
    case openai_endpoint::completions: return "/v1/completions";
    case openai_endpoint::embeddings: return "/v1/embeddings";
    case openai_endpoint::responses: return "/v1/responses";
    case openai_endpoint::messages: return "/v1/messages";
    case openai_endpoint::count_tokens: return "/v1/messages/count_tokens";
    case openai_endpoint::rerank: return "/v1/rerank";
  }
  return "";
}

const char* openai_endpoint_label(openai_endpoint e) {
  switch (e) {
    case openai_endpoint::chat_completions: return "chat_completions";
    case openai_endpoint::completions: return "completions";
    case openai_endpoint::embeddings: return "embeddings";
    case openai_endpoint::responses: return "responses";
    case openai_endpoint::messages: return "messages";
    case openai_endpoint::count_tokens: return "count_tokens";
    case openai_endpoint::rerank: return "rerank";
  }
  return "";
}

namespace {

using detail::json;
using detail::json_field_reader;

constexpr int64_t int32_hi = std::numeric_limits<int32_t>::max();
constexpr int64_t int64_lo = std::numeric_limits<int64_t>::min();
constexpr int64_t int64_hi = std::numeric_limits<int64_t>::max();

// The value of `key` in `obj`, or nullptr when absent or null.
const json* field(const json& obj, const char* key) {
  const auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

std::string at(const std::string& param, size_t i) { return param + "[" + std::to_string(i) + "]"; }

class request_parser {
 public:
  request_parser(const json& body, const std::string& raw, const openai_limits& lim, openai_request& out,
                 openai_error& err)
      : body_(body), raw_(raw), lim_(lim), out_(out), r_(err) {}

  bool parse() {
    if (!parse_model()) return false;
    if (out_.endpoint == openai_endpoint::embeddings) return parse_embeddings();
    if (out_.endpoint == openai_endpoint::rerank) return parse_rerank();
    if (!parse_generation_fields()) return false;
    return out_.endpoint == openai_endpoint::chat_completions ? parse_chat() : parse_completion();
  }

 private:
  bool parse_model() {
    out_.model = lim_.model_name;
    const json* v = field(body_, "model");
    if (!v) return true;
    std::string name;
    if (!r_.read_string(*v, "model", name)) return false;
    if (!lim_.model_name.empty() && name != lim_.model_name)
      return r_.fail(errc::unknown_model, "model",
                     "model is " + detail::describe_json(*v) + ", which is not loaded; the loaded model is " +
                         json(lim_.model_name).dump() + " (or leave model out)");
    out_.model = name;
    return true;
  }

  bool read_float(const char* key, const std::string& range, bool (*ok)(double), float& out) {
    const json* v = field(body_, key);
    return !v || r_.read_number(*v, key, range, ok, out);
  }

  // Sampling, stopping and response-shape fields shared by chat and completions.
  bool parse_generation_fields() {
    generation_request& g = out_.request;
    request_params& p = g.params;
    const bool chat = out_.endpoint == openai_endpoint::chat_completions;
    int64_t i = 0;
    p.max_tokens = chat ? lim_.default_max_tokens_chat : lim_.default_max_tokens_completions;
    for (const char* key : {"max_tokens", "max_completion_tokens"}) {  // the newer name wins
      if (const json* v = field(body_, key)) {
        if (!r_.read_int(*v, key, 1, int64_hi, "an integer >= 1", i)) return false;
        p.max_tokens = static_cast<uint32_t>(std::min<int64_t>(i, UINT32_MAX));  // intake caps it to the context
        p.max_tokens_given = true;
      }
    }
    if (!read_float("temperature", "a number in [0, 2] (0 = greedy)", [](double x) { return x >= 0 && x <= 2; },
                    p.temperature) ||
        !read_float("top_p", "a number in (0, 1]", [](double x) { return x > 0 && x <= 1; }, p.top_p) ||
        !read_float("presence_penalty", "a number in [-2, 2]", [](double x) { return x >= -2 && x <= 2; },
                    p.presence_penalty) ||
        !read_float("frequency_penalty", "a number in [-2, 2]", [](double x) { return x >= -2 && x <= 2; },
                    p.frequency_penalty) ||
        !read_float("min_p", "a number in [0, 1]", [](double x) { return x >= 0 && x <= 1; }, p.min_p) ||
        !read_float("repetition_penalty", "a number > 0 (1 = off)", [](double x) { return x > 0 && std::isfinite(x); },
                    p.repetition_penalty))
      return false;
    if (const json* v = field(body_, "n")) {
      const std::string range = "an integer in 1.." + std::to_string(lim_.max_n);
      if (!r_.read_int(*v, "n", 1, lim_.max_n, range, i)) return false;
      out_.n = static_cast<uint32_t>(i);
    }
    if (const json* v = field(body_, "seed")) {  // OpenAI's seed is any integer; negative ones keep their bits
      if (v->is_number_unsigned()) p.seed = v->get<uint64_t>();
      else if (r_.read_int(*v, "seed", int64_lo, int64_hi, "an integer", i)) p.seed = static_cast<uint64_t>(i);
      else return false;
      p.has_seed = true;
    }
    if (const json* v = field(body_, "top_k")) {
      if (!r_.read_int(*v, "top_k", 0, int32_hi, "an integer >= 0 (0 = off)", i)) return false;
      p.top_k = static_cast<int32_t>(i);
    }
    if (const json* v = field(body_, "min_tokens")) {
      if (!r_.read_int(*v, "min_tokens", 0, UINT32_MAX, "an integer >= 0", i)) return false;
      p.min_tokens = static_cast<uint32_t>(i);
      if (p.min_tokens > p.max_tokens)
        return r_.fail(errc::invalid_param, "min_tokens",
                       "min_tokens (" + std::to_string(p.min_tokens) + ") must not exceed max_tokens (" +
                           std::to_string(p.max_tokens) + ")");
    }
    if (const json* v = field(body_, "ignore_eos"); v && !r_.read_bool(*v, "ignore_eos", p.ignore_eos)) return false;
    if (const json* v = field(body_, "speculative")) {  // extension, as protocol.md params.speculative
      if (!v->is_object())
        return r_.fail(errc::invalid_param, "speculative", "speculative must be an object {\"ngram\", \"max_draft\"}");
      p.spec_given = true;
      p.spec_ngram = 3;
      p.spec_max_draft = 8;
      if (const json* n = field(*v, "ngram")) {
        if (!r_.read_int(*n, "speculative.ngram", 1, 16, "an integer in [1, 16]", i)) return false;
        p.spec_ngram = static_cast<int32_t>(i);
      }
      if (const json* n = field(*v, "max_draft")) {
        if (!r_.read_int(*n, "speculative.max_draft", 0, 32, "an integer in [0, 32] (0 = off)", i)) return false;
        p.spec_max_draft = static_cast<int32_t>(i);
      }
    }
    if (const json* v = field(body_, "stop_token_ids");
        v && !r_.read_token_ids(*v, "stop_token_ids", lim_.max_stop_token_ids, p.stop_token_ids, true))
      return false;
    if (const json* v = field(body_, "priority")) {
      if (!r_.read_int(*v, "priority", std::numeric_limits<int32_t>::min(), int32_hi, "a 32-bit integer", i))
        return false;
      g.priority = static_cast<int32_t>(i);
    }
    if (const json* v = field(body_, "deadline_ms")) {
      if (!r_.read_int(*v, "deadline_ms", 1, int64_hi, "an integer >= 1 (leave it out for no deadline)", i))
        return false;
      g.deadline_ms = static_cast<uint64_t>(i);
    }
    if (const json* v = field(body_, "user"); v && !r_.read_string(*v, "user", out_.user)) return false;
    return parse_stop() && parse_logit_bias() && parse_logprobs() && parse_stream() && parse_response_format();
  }

  bool parse_stop() {
    const json* v = field(body_, "stop");
    if (!v) return true;
    std::vector<std::string>& stop = out_.request.params.stop;
    if (v->is_string()) {
      stop.push_back(v->get<std::string>());
    } else if (v->is_array()) {
      if (v->size() > lim_.max_stop_strings) return r_.too_many("stop", v->size(), lim_.max_stop_strings, "strings");
      stop.resize(v->size());
      for (size_t k = 0; k < v->size(); ++k)
        if (!r_.read_string((*v)[k], at("stop", k), stop[k])) return false;
    } else {
      return r_.expected("stop", "a string or an array of strings", *v);
    }
    for (size_t k = 0; k < stop.size(); ++k) {
      const std::string param = v->is_string() ? "stop" : at("stop", k);
      if (stop[k].empty()) return r_.fail(errc::invalid_param, param, param + " is empty; stop strings must be non-empty");
      if (stop[k].size() > lim_.max_stop_bytes)
        return r_.fail(errc::too_large, param,
                       param + " is " + std::to_string(stop[k].size()) + " bytes; at most " +
                           std::to_string(lim_.max_stop_bytes) + " are allowed");
    }
    return true;
  }

  // {"<token id>": bias in [-100, 100]}.
  bool parse_logit_bias() {
    const json* v = field(body_, "logit_bias");
    if (!v) return true;
    if (!v->is_object()) return r_.expected("logit_bias", "an object mapping token ids (as strings) to numbers", *v);
    if (v->size() > lim_.max_logit_bias) return r_.too_many("logit_bias", v->size(), lim_.max_logit_bias, "entries");
    request_params& p = out_.request.params;
    std::set<int32_t> seen;
    for (auto it = v->begin(); it != v->end(); ++it) {
      const std::string& key = it.key();
      const std::string param = "logit_bias[" + json(key).dump() + "]";
      int64_t id = 0;
      const bool digits = !key.empty() && key.size() <= 10 &&
                          std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (digits) id = std::stoll(key);
      if (!digits || id > int32_hi)
        return r_.fail(errc::invalid_param, param,
                       "logit_bias keys must be token ids written as decimal strings (\"50256\"), got " +
                           json(key).dump());
      if (!seen.insert(static_cast<int32_t>(id)).second)
        return r_.fail(errc::invalid_param, param, "logit_bias has token " + std::to_string(id) + " twice");
      float bias = 0;
      if (!r_.read_number(it.value(), param, "a number in [-100, 100] (-100 bans the token)",
                          [](double x) { return x >= -100 && x <= 100; }, bias))
        return false;
      p.logit_bias_ids.push_back(static_cast<int32_t>(id));
      p.logit_bias_values.push_back(bias);
    }
    return true;
  }

  // chat: logprobs (bool) + top_logprobs (0..20); completions: logprobs (0..20).
  bool parse_logprobs() {
    const std::string range = "an integer in 0.." + std::to_string(lim_.max_logprobs);
    int64_t k = 0;
    const json* lp = field(body_, "logprobs");
    if (out_.endpoint == openai_endpoint::chat_completions) {
      if (lp && !r_.read_bool(*lp, "logprobs", out_.logprobs)) return false;
      if (const json* top = field(body_, "top_logprobs")) {
        if (!r_.read_int(*top, "top_logprobs", 0, lim_.max_logprobs, range, k)) return false;
        if (k > 0 && !out_.logprobs)
          return r_.fail(errc::invalid_param, "top_logprobs", "top_logprobs needs logprobs: true");
      }
    } else if (lp) {
      if (!r_.read_int(*lp, "logprobs", 0, lim_.max_logprobs, range, k)) return false;
      out_.logprobs = true;
    }
    out_.top_logprobs = static_cast<uint32_t>(k);
    out_.request.n_logprobs = out_.logprobs ? std::max<uint32_t>(1, out_.top_logprobs) : 0;
    return true;
  }

  bool parse_stream() {
    if (const json* v = field(body_, "stream"); v && !r_.read_bool(*v, "stream", out_.stream)) return false;
    out_.request.stream = out_.stream;
    const json* opts = field(body_, "stream_options");
    if (!opts) return true;
    if (!opts->is_object()) return r_.expected("stream_options", "an object", *opts);
    const json* usage = field(*opts, "include_usage");
    return !usage || r_.read_bool(*usage, "stream_options.include_usage", out_.include_usage);
  }

  // Structured output: response_format json_object / json_schema (its
  // schema turned into a grammar here, so errors name the field), or the
  // `grammar` extension (GBNF text); intake checks the grammar compiles.
  bool parse_response_format() {
    request_params& p = out_.request.params;
    if (const json* g = field(body_, "grammar"); g && !r_.read_string(*g, "grammar", p.grammar)) return false;
    const json* v = field(body_, "response_format");
    if (!v) return true;
    if (!v->is_object()) return r_.expected("response_format", "an object such as {\"type\": \"text\"}", *v);
    const json* type = field(*v, "type");
    std::string t;
    if (!type)
      return r_.fail(errc::invalid_param, "response_format.type",
                     "response_format needs a type (\"text\", \"json_object\" or \"json_schema\")");
    if (!r_.read_string(*type, "response_format.type", t)) return false;
    if (t == "text") return true;
    if (t != "json_object" && t != "json_schema")
      return r_.fail(errc::invalid_param, "response_format.type",
                     "response_format.type must be \"text\", \"json_object\" or \"json_schema\", got " + type->dump());
    if (!p.grammar.empty())
      return r_.fail(errc::invalid_param, "grammar", "give grammar or a JSON response_format, not both");
    if (t == "json_object") {
      p.grammar = json_object_gbnf();
      return true;
    }
    const json* js = field(*v, "json_schema");
    if (!js || !js->is_object())
      return r_.fail(errc::invalid_param, "response_format.json_schema",
                     "response_format json_schema needs \"json_schema\": {\"name\", \"schema\", \"strict\"}");
    bool strict = false;  // strict or not, the output follows the schema
    if (const json* st = field(*js, "strict"); st && !r_.read_bool(*st, "response_format.json_schema.strict", strict)) return false;
    const json* schema = field(*js, "schema");
    if (!schema || !(schema->is_object() || schema->is_boolean()))
      return r_.fail(errc::invalid_param, "response_format.json_schema.schema",
                     "response_format.json_schema.schema must be a JSON Schema object");
    // Properties are generated in the schema's order: read it again with its keys in order.
    auto ordered = nlohmann::ordered_json::parse(raw_, nullptr, false);
    const std::string text = ordered.is_discarded() ? schema->dump() : ordered["response_format"]["json_schema"]["schema"].dump();
    auto g = json_schema_to_gbnf(text);
    if (!g) {
      return r_.fail(errc::invalid_param, "response_format.json_schema.schema",
                     "response_format.json_schema.schema: " + g.error().message);
    }
    p.grammar = std::move(*g);
    return true;
  }

  // A 501 for a recognised OpenAI field this server does not implement.
  bool reject_if(const char* key, bool (*used)(const json&), const char* what) {
    const json* v = field(body_, key);
    if (v && used(*v)) return r_.fail(errc::unsupported, key, std::string(key) + " is not supported: " + what);
    return true;
  }

  bool parse_chat() {
    const json* msgs = field(body_, "messages");
    if (!msgs) return r_.fail(errc::invalid_param, "messages", "messages is required: an array of {role, content}");
    if (!msgs->is_array()) return r_.expected("messages", "an array of {role, content} objects", *msgs);
    if (msgs->empty()) return r_.fail(errc::invalid_param, "messages", "messages is empty; give at least one message");
    if (msgs->size() > lim_.max_messages) return r_.too_many("messages", msgs->size(), lim_.max_messages, "messages");
    json normalized = json::array();
    for (size_t i = 0; i < msgs->size(); ++i) {
      json m = (*msgs)[i];
      if (!normalize_message(m, at("messages", i))) return false;
      normalized.push_back(std::move(m));
    }
    out_.request.messages_json = dump_json(normalized);
    json kwargs = json::object();
    if (const json* v = field(body_, "chat_template_kwargs")) {
      if (!v->is_object()) return r_.expected("chat_template_kwargs", "an object of template variables", *v);
      kwargs = *v;
    }
    // Tools go to intake as their own fields (it renders them into the
    // template unless tool_choice is none, and constrains forced calls);
    // reasoning_effort is a template variable, as transformers passes it.
    generation_request& g = out_.request;
    if (const json* v = field(body_, "tools")) {
      if (!v->is_array()) return r_.expected("tools", "an array of tool definitions", *v);
      for (size_t i = 0; i < v->size(); ++i) {
        const json& t = (*v)[i];
        const json* fn = t.is_object() ? field(t, "function") : nullptr;
        const json* name = fn && fn->is_object() ? field(*fn, "name") : nullptr;
        if (!name || !name->is_string())
          return r_.fail(errc::invalid_param, at("tools", i), at("tools", i) + " must be {type: \"function\", function: {name, description, parameters}}");
      }
      if (!v->empty()) g.tools_json = dump_json(*v);
    }
    if (const json* v = field(body_, "tool_choice")) {
      if (v->is_string()) {
        g.tool_choice = v->get<std::string>();
        if (g.tool_choice != "none" && g.tool_choice != "auto" && g.tool_choice != "required")
          return r_.expected("tool_choice", "\"none\", \"auto\", \"required\" or {type: \"function\", function: {name}}", *v);
      } else if (v->is_object()) {
        const json* fn = field(*v, "function");
        const json* name = fn && fn->is_object() ? field(*fn, "name") : nullptr;
        if (!name || !name->is_string())
          return r_.fail(errc::invalid_param, "tool_choice.function.name", "tool_choice must be {type: \"function\", function: {name}}");
        g.tool_choice = "function";
        g.tool_choice_name = name->get<std::string>();
      } else {
        return r_.expected("tool_choice", "a string or an object", *v);
      }
      if (g.tools_json.empty() && (g.tool_choice == "required" || g.tool_choice == "function"))
        return r_.fail(errc::invalid_param, "tool_choice", "tool_choice forces a call but tools is empty or missing");
    }
    if (const json* v = field(body_, "parallel_tool_calls"); v && !r_.read_bool(*v, "parallel_tool_calls", g.parallel_tool_calls))
      return false;
    if (const json* v = field(body_, "reasoning_format")) {
      if (!r_.read_string(*v, "reasoning_format", g.reasoning_format)) return false;
      if (g.reasoning_format != "auto" && g.reasoning_format != "none")
        return r_.expected("reasoning_format", "\"auto\" or \"none\"", *v);
    }
    if (const json* v = field(body_, "reasoning_effort")) {
      std::string effort;
      if (!r_.read_string(*v, "reasoning_effort", effort)) return false;
      kwargs["reasoning_effort"] = effort;
    }
    if (!kwargs.empty()) out_.request.chat_template_kwargs_json = dump_json(kwargs);
    const json* agp = field(body_, "add_generation_prompt");
    return !agp || r_.read_bool(*agp, "add_generation_prompt", out_.request.add_generation_prompt);
  }

  // Checks one message; it goes to intake as given (intake joins text parts,
  // the same for both gateways: actors/intake/chat_setup.cpp).
  bool normalize_message(json& m, const std::string& param) {
    if (!m.is_object()) return r_.expected(param, "an object {role, content}", m);
    const json* role = field(m, "role");
    std::string r;
    if (!role) return r_.fail(errc::invalid_param, param + ".role", param + ".role is required");
    if (!r_.read_string(*role, param + ".role", r)) return false;
    if (r != "system" && r != "user" && r != "assistant" && r != "tool")
      return r_.expected(param + ".role", "one of \"system\", \"user\", \"assistant\", \"tool\"", *role);
    std::string s;
    for (const char* key : {"name", "tool_call_id"})
      if (const json* v = field(m, key); v && !r_.read_string(*v, param + "." + key, s)) return false;
    if (const json* v = field(m, "tool_calls"); v && !v->is_array())
      return r_.expected(param + ".tool_calls", "an array", *v);
    auto content = m.find("content");
    if (content == m.end() || content->is_null()) {
      if (r == "assistant") return true;  // e.g. a turn that only calls tools
      return r_.fail(errc::invalid_param, param + ".content",
                     param + ".content is required: a string or an array of {type: \"text\", text}");
    }
    if (content->is_string()) return true;
    if (!content->is_array())
      return r_.expected(param + ".content", "a string or an array of {type: \"text\", text}", *content);
    for (size_t k = 0; k < content->size(); ++k) {
      const json& part = (*content)[k];
      const std::string pp = at(param + ".content", k);
      if (!part.is_object()) return r_.expected(pp, "an object {type: \"text\", text}", part);
      const json* type = field(part, "type");
      std::string t;
      if (!type) return r_.fail(errc::invalid_param, pp + ".type", pp + ".type is required (\"text\")");
      if (!r_.read_string(*type, pp + ".type", t)) return false;
      if (t == "image_url" || t == "input_audio" || t == "file" || t == "image")
        return r_.fail(errc::unsupported, pp + ".type", pp + " is a " + t + " part; only text parts are supported");
      if (t != "text") return r_.expected(pp + ".type", "\"text\"", *type);
      const json* pt = field(part, "text");
      if (!pt) return r_.fail(errc::invalid_param, pp + ".text", pp + ".text is required");
      if (!r_.read_string(*pt, pp + ".text", s)) return false;
    }
    return true;
  }

  bool parse_completion() {
    if (!reject_if("echo", [](const json& v) { return v.is_boolean() && v.get<bool>(); }, "the prompt is not echoed") ||
        !reject_if("suffix", [](const json& v) { return !v.is_string() || !v.get_ref<const std::string&>().empty(); },
                   "there is no insertion mode"))
      return false;
    const json* v = field(body_, "prompt");
    if (!v) return r_.fail(errc::invalid_param, "prompt", "prompt is required: a string or an array of token ids");
    generation_request& g = out_.request;
    std::string param = "prompt";
    const json* one = v;
    // A batch of one ([string] or [[ids]]) is that prompt; larger batches are 501.
    if (v->is_array() && !v->empty() && ((*v)[0].is_string() || (*v)[0].is_array())) {
      if (v->size() > 1)
        return r_.fail(errc::unsupported, "prompt", "prompt holds " + std::to_string(v->size()) +
                                                        " prompts; send one prompt per request (or use n)");
      one = &(*v)[0];
      param = "prompt[0]";
    }
    if (one->is_string()) {
      g.prompt = one->get<std::string>();
      return true;
    }
    if (!one->is_array()) return r_.expected(param, "a string or an array of token ids", *one);
    g.use_tokens = true;
    return r_.read_token_ids(*one, param, lim_.max_prompt_tokens, g.tokens);
  }

  bool parse_embeddings() {
    if (const json* v = field(body_, "user"); v && !r_.read_string(*v, "user", out_.user)) return false;
    if (const json* v = field(body_, "encoding_format")) {
      std::string f;
      if (!r_.read_string(*v, "encoding_format", f)) return false;
      if (f != "float" && f != "base64") return r_.expected("encoding_format", "\"float\" or \"base64\"", *v);
      out_.base64 = f == "base64";
    }
    if (const json* v = field(body_, "dimensions")) {
      int64_t d = 0;
      const std::string range = lim_.n_embd ? "the model's embedding size, " + std::to_string(lim_.n_embd)
                                            : std::string("an integer >= 1");
      if (!r_.read_int(*v, "dimensions", lim_.n_embd ? lim_.n_embd : 1, lim_.n_embd ? lim_.n_embd : int64_hi, range,
                       d))
        return false;
    }
    const json* v = field(body_, "input");
    if (!v) return r_.fail(errc::invalid_param, "input", "input is required: a string, or an array of strings or of token ids");
    if (v->is_string()) return add_input(*v, "input");
    if (!v->is_array())
      return r_.expected("input", "a string, an array of strings, an array of token ids or an array of arrays of them", *v);
    if (v->empty()) return r_.fail(errc::invalid_param, "input", "input is empty; give at least one input");
    if ((*v)[0].is_number()) return add_input(*v, "input");  // one list of token ids
    if (v->size() > lim_.max_embedding_inputs)
      return r_.too_many("input", v->size(), lim_.max_embedding_inputs, "inputs");
    for (size_t i = 0; i < v->size(); ++i)
      if (!add_input((*v)[i], at("input", i))) return false;
    return true;
  }

  // {query, documents, top_n}: one engine request per document, the query
  // as its prompt (intake frames the pair as the reranker's tokenizer says).
  bool parse_rerank() {
    const json* q = field(body_, "query");
    if (!q) return r_.fail(errc::invalid_param, "query", "query is required: the text the documents are ranked against");
    std::string query;
    if (!r_.read_string(*q, "query", query)) return false;
    if (query.empty()) return r_.fail(errc::invalid_param, "query", "query is an empty string");
    const json* docs = field(body_, "documents");
    if (!docs) return r_.fail(errc::invalid_param, "documents", "documents is required: an array of strings to rank");
    if (!docs->is_array()) return r_.expected("documents", "an array of strings", *docs);
    if (docs->empty()) return r_.fail(errc::invalid_param, "documents", "documents is empty; give at least one");
    if (docs->size() > lim_.max_embedding_inputs)
      return r_.too_many("documents", docs->size(), lim_.max_embedding_inputs, "documents");
    out_.top_n = static_cast<uint32_t>(docs->size());
    if (const json* v = field(body_, "top_n")) {
      int64_t n = 0;
      if (!r_.read_int(*v, "top_n", 1, int64_hi, "an integer >= 1", n)) return false;
      out_.top_n = static_cast<uint32_t>(std::min<int64_t>(n, static_cast<int64_t>(docs->size())));
    }
    for (size_t i = 0; i < docs->size(); ++i) {
      const json& d = (*docs)[i];
      const std::string param = at("documents", i);
      if (!d.is_string()) return r_.expected(param, "a string", d);
      generation_request g;
      g.kind = request_kind::embed;
      g.stream = false;
      g.want_text = false;
      g.prompt = query;
      g.document = d.get<std::string>();
      if (g.document.empty()) return r_.fail(errc::invalid_param, param, param + " is an empty string");
      out_.inputs.push_back(std::move(g));
    }
    return true;
  }

  // One embedding input: a non-empty string or array of token ids.
  bool add_input(const json& v, const std::string& param) {
    generation_request g;
    g.kind = request_kind::embed;
    g.stream = false;
    g.want_text = false;
    if (v.is_string()) {
      g.prompt = v.get<std::string>();
      if (g.prompt.empty()) return r_.fail(errc::invalid_param, param, param + " is an empty string");
    } else if (v.is_array()) {
      g.use_tokens = true;
      if (!r_.read_token_ids(v, param, lim_.max_prompt_tokens, g.tokens)) return false;
    } else {
      return r_.expected(param, "a string or an array of token ids", v);
    }
    out_.inputs.push_back(std::move(g));
    return true;
  }

  const json& body_;
  const std::string& raw_;  // the body's text
  const openai_limits& lim_;
  openai_request& out_;
  json_field_reader r_;
};

}  // namespace

openai_parse_result parse_openai_request(openai_endpoint endpoint, const std::string& body, const openai_limits& lim) {
  openai_parse_result res;
  res.request.endpoint = endpoint;
  detail::json_field_reader r(res.error);
  if (detail::json_nesting_depth(body, lim.max_depth) > lim.max_depth) {
    r.fail(errc::too_large, "", "the body nests arrays and objects deeper than " + std::to_string(lim.max_depth) + " levels");
    return res;
  }
  json doc;
  try {
    doc = json::parse(body);
  } catch (const json::exception& e) {
    r.fail(errc::malformed, "", std::string("the body is not valid JSON: ") + e.what());
    return res;
  }
  if (!doc.is_object()) {
    r.fail(errc::malformed, "", "the body must be a JSON object, got " + detail::describe_json(doc));
    return res;
  }
  request_parser(doc, body, lim, res.request, res.error).parse();
  return res;
}

std::vector<generation_request> choice_requests(const openai_request& r) {
  std::vector<generation_request> out(r.n, r.request);
  for (uint32_t i = 0; i < r.n; ++i)
    if (out[i].params.has_seed) out[i].params.seed += i;
  return out;
}

}  // namespace cortex::http
