#include "messages/wire/submit_decode.hpp"

#include <algorithm>
#include <limits>
#include <unordered_set>

#include "messages/wire/chat_decode.hpp"
#include "messages/wire/msgpack_json.hpp"

namespace cortex::wire::detail {
namespace {

constexpr int64_t int32_lo = std::numeric_limits<int32_t>::min();
constexpr int64_t int32_hi = std::numeric_limits<int32_t>::max();
constexpr uint64_t uint32_hi = std::numeric_limits<uint32_t>::max();
constexpr uint64_t uint64_hi = std::numeric_limits<uint64_t>::max();

bool is_one_of(std::string_view key, std::initializer_list<std::string_view> keys) {
  for (std::string_view k : keys)
    if (key == k) return true;
  return false;
}

// A float field whose value must satisfy `in_range` (described by `range`).
template <class Pred>
field_status read_ranged_float(field_reader& r, const msgpack::object& o, const std::string& field, const char* range,
                               Pred in_range, float& out) {
  double v = 0;
  if (!r.read_float(o, field, v)) return field_status::failed;
  if (!in_range(v)) return field_reader::status(r.range_error(field, range, format_number(v)));
  out = static_cast<float>(v);
  return field_status::known;
}

field_status read_stop(field_reader& r, const msgpack::object& o, std::vector<std::string>& out) {
  if (o.type != msgpack::type::ARRAY) return field_reader::status(r.type_error("params.stop", "an array of strings", o));
  const uint32_t n = o.via.array.size;
  if (n > r.lim.max_stop_strings)
    return field_reader::status(r.fail(errc::too_large, "params.stop has " + std::to_string(n) + " strings; at most " +
                                                            std::to_string(r.lim.max_stop_strings) + " are allowed"));
  out.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    const std::string field = "params.stop[" + std::to_string(i) + "]";
    const msgpack::object& s = o.via.array.ptr[i];
    if (s.type == msgpack::type::STR && s.via.str.size > r.lim.max_stop_bytes)
      return field_reader::status(r.fail(errc::too_large, field + " is " + std::to_string(s.via.str.size) +
                                                              " bytes; at most " +
                                                              std::to_string(r.lim.max_stop_bytes) + " are allowed"));
    if (!r.read_text(s, field, out[i])) return field_status::failed;
    if (out[i].empty())
      return field_reader::status(r.fail(errc::invalid_param, field + " is empty; stop strings must be non-empty"));
  }
  return field_status::known;
}

// map token id -> bias in [-100, 100], each id once.
field_status read_logit_bias(field_reader& r, const msgpack::object& o, request_params& p) {
  const std::string field = "params.logit_bias";
  if (o.type != msgpack::type::MAP) return field_reader::status(r.type_error(field, "a map of token id to number", o));
  const uint32_t n = o.via.map.size;
  if (n > r.lim.max_logit_bias)
    return field_reader::status(r.fail(errc::too_large, field + " has " + std::to_string(n) + " entries; at most " +
                                                            std::to_string(r.lim.max_logit_bias) + " are allowed"));
  std::unordered_set<int32_t> seen;
  p.logit_bias_ids.resize(n);
  p.logit_bias_values.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    const msgpack::object_kv& kv = o.via.map.ptr[i];
    int32_t id = 0;
    if (!is_number(kv.key)) return field_reader::status(r.type_error(field + " keys", "token ids (integers)", kv.key));
    if (!r.read_token_id(kv.key, field + " key", id)) return field_status::failed;
    if (!seen.insert(id).second)
      return field_reader::status(r.fail(errc::invalid_param, field + " has token " + std::to_string(id) + " twice"));
    p.logit_bias_ids[i] = id;
    const std::string entry = field + "[" + std::to_string(id) + "]";
    const field_status s = read_ranged_float(r, kv.val, entry, "in [-100, 100] (-100 bans the token)",
                                             [](double v) { return v >= -100 && v <= 100; }, p.logit_bias_values[i]);
    if (s == field_status::failed) return s;
  }
  return field_status::known;
}

// params.speculative: {ngram: 1..16 (3), max_draft: 0..32 (8; 0 = off)}.
bool decode_speculative(field_reader& r, const msgpack::object& o, request_params& p) {
  if (o.type != msgpack::type::MAP)
    return r.type_error("params.speculative", "a map {ngram, max_draft}", o);
  if (!r.check_keys(o, "params.speculative")) return false;
  p.spec_given = true;
  p.spec_ngram = 3;
  p.spec_max_draft = 8;
  return r.for_each_field(o, "params.speculative.", [&](std::string_view key, const msgpack::object& val) {
    const bool known = is_one_of(key, {"ngram", "max_draft"});
    if (!known || val.type == msgpack::type::NIL) return known ? field_status::known : field_status::unknown;
    int64_t i = 0;
    if (key == "ngram") {
      if (!r.read_int(val, "params.speculative.ngram", 1, 16, "an integer in [1, 16]", i)) return field_status::failed;
      p.spec_ngram = static_cast<int32_t>(i);
    } else {
      if (!r.read_int(val, "params.speculative.max_draft", 0, 32, "an integer in [0, 32] (0 = off)", i))
        return field_status::failed;
      p.spec_max_draft = static_cast<int32_t>(i);
    }
    return field_status::known;
  });
}

bool decode_params(field_reader& r, const msgpack::object& o, request_params& p) {
  if (o.type != msgpack::type::MAP) return r.type_error("params", "a map", o);
  if (!r.check_keys(o, "params")) return false;
  bool ok = r.for_each_field(o, "params.", [&](std::string_view key, const msgpack::object& val) {
    const std::string field = "params." + std::string(key);
    uint64_t u = 0;
    int64_t i = 0;
    if (val.type == msgpack::type::NIL)
      return is_one_of(key, {"max_tokens", "temperature", "top_k", "top_p", "min_p", "repetition_penalty",
                             "presence_penalty", "frequency_penalty", "penalty_last_n", "seed", "stop",
                             "stop_token_ids", "ignore_eos", "min_tokens", "logit_bias", "grammar", "json_schema",
                             "speculative"})
                 ? field_status::known
                 : field_status::unknown;
    if (key == "max_tokens") {
      // Capped to the context by intake anyway: larger values saturate.
      if (!r.read_uint(val, field, uint64_hi, ">= 1", u)) return field_status::failed;
      if (u == 0) return field_reader::status(r.range_error(field, ">= 1", "0"));
      p.max_tokens = static_cast<uint32_t>(std::min<uint64_t>(u, uint32_hi));
      p.max_tokens_given = true;
      return field_status::known;
    }
    if (key == "temperature")
      return read_ranged_float(r, val, field, ">= 0 (0 = greedy)", [](double v) { return v >= 0; }, p.temperature);
    if (key == "top_p")
      return read_ranged_float(r, val, field, "in (0, 1]", [](double v) { return v > 0 && v <= 1; }, p.top_p);
    if (key == "min_p")
      return read_ranged_float(r, val, field, "in [0, 1]", [](double v) { return v >= 0 && v <= 1; }, p.min_p);
    if (key == "repetition_penalty")
      return read_ranged_float(r, val, field, "> 0 (1 = off)", [](double v) { return v > 0; }, p.repetition_penalty);
    if (key == "presence_penalty" || key == "frequency_penalty")
      return read_ranged_float(r, val, field, "a finite number", [](double) { return true; },
                               key == "presence_penalty" ? p.presence_penalty : p.frequency_penalty);
    if (key == "top_k") {
      if (!r.read_int(val, field, 0, int32_hi, "an integer in [0, 2147483647] (0 = off)", i)) return field_status::failed;
      p.top_k = static_cast<int32_t>(i);
      return field_status::known;
    }
    if (key == "penalty_last_n") {
      if (!r.read_int(val, field, -1, int32_hi, "an integer in [-1, 2147483647] (-1 = whole history, 0 = off)", i))
        return field_status::failed;
      p.penalty_last_n = static_cast<int32_t>(i);
      return field_status::known;
    }
    if (key == "seed") {
      if (!r.read_uint(val, field, uint64_hi, "an integer in [0, 2^64)", p.seed)) return field_status::failed;
      p.has_seed = true;
      return field_status::known;
    }
    if (key == "min_tokens") {
      if (!r.read_uint(val, field, uint32_hi, "an integer in [0, 4294967295]", u)) return field_status::failed;
      p.min_tokens = static_cast<uint32_t>(u);
      return field_status::known;
    }
    if (key == "ignore_eos") return field_reader::status(r.read_bool(val, field, p.ignore_eos));
    if (key == "stop") return read_stop(r, val, p.stop);
    if (key == "stop_token_ids")
      return field_reader::status(r.read_token_ids(val, field, r.lim.max_stop_token_ids, p.stop_token_ids));
    if (key == "logit_bias") return read_logit_bias(r, val, p);
    if (key == "grammar") return field_reader::status(r.read_text(val, field, p.grammar));
    if (key == "json_schema")
      return field_reader::status(decode_json_map(r, val, "params.json_schema", "a map (a JSON Schema)", p.json_schema));
    if (key == "speculative") return field_reader::status(decode_speculative(r, val, p));
    return field_status::unknown;
  });
  if (!ok) return false;
  if (p.min_tokens > p.max_tokens)
    return r.fail(errc::invalid_param, "params.min_tokens (" + std::to_string(p.min_tokens) +
                                           ") must not exceed params.max_tokens (" + std::to_string(p.max_tokens) + ")");
  return true;
}

bool decode_want(field_reader& r, const msgpack::object& o, generation_request& req) {
  if (o.type != msgpack::type::MAP) return r.type_error("want", "a map", o);
  if (!r.check_keys(o, "want")) return false;
  return r.for_each_field(o, "want.", [&](std::string_view key, const msgpack::object& val) {
    const bool known = is_one_of(key, {"text", "token_ids", "logprobs"});
    if (!known || val.type == msgpack::type::NIL) return known ? field_status::known : field_status::unknown;
    if (key == "text") return field_reader::status(r.read_bool(val, "want.text", req.want_text));
    if (key == "token_ids") return field_reader::status(r.read_bool(val, "want.token_ids", req.want_token_ids));
    uint64_t n = 0;
    const std::string range = "in 0.." + std::to_string(r.lim.max_logprobs) + " (0 = off)";
    if (!r.read_uint(val, "want.logprobs", r.lim.max_logprobs, range.c_str(), n)) return field_status::failed;
    req.n_logprobs = static_cast<uint32_t>(n);
    return field_status::known;
  });
}

bool decode_tags(field_reader& r, const msgpack::object& o, std::map<std::string, std::string>& tags) {
  if (o.type != msgpack::type::MAP) return r.type_error("tags", "a map of string to string", o);
  if (o.via.map.size > r.lim.max_tags)
    return r.fail(errc::too_large, "tags has " + std::to_string(o.via.map.size) + " entries; at most " +
                                       std::to_string(r.lim.max_tags) + " are allowed");
  if (!r.check_keys(o, "tags")) return false;
  for (uint32_t i = 0; i < o.via.map.size; ++i) {
    const msgpack::object_kv& kv = o.via.map.ptr[i];
    const std::string field = "tags[" + quote_for_message(str_view(kv.key)) + "]";
    if (kv.key.via.str.size > r.lim.max_tag_bytes || (kv.val.type == msgpack::type::STR && kv.val.via.str.size > r.lim.max_tag_bytes))
      return r.fail(errc::too_large, field + ": tag keys and values are at most " + std::to_string(r.lim.max_tag_bytes) +
                                         " bytes each");
    std::string key, value;
    if (!r.read_text(kv.key, "a tags key", key) || !r.read_text(kv.val, field, value)) return false;
    tags.emplace(std::move(key), std::move(value));
  }
  return true;
}

bool check_model(field_reader& r, const msgpack::object& o) {
  std::string name;
  if (!r.read_text(o, "model", name)) return false;
  const std::vector<std::string>& names = r.lim.model_names;
  if (names.empty() || std::find(names.begin(), names.end(), name) != names.end()) return true;
  std::string loaded;
  for (const std::string& n : names) loaded += (loaded.empty() ? "" : ", ") + quote_for_message(n);
  return r.fail(errc::unknown_model,
                "model " + quote_for_message(name) + " is not loaded; loaded: " + loaded + " (or leave model out)");
}

}  // namespace

// An API key secret is 46 bytes; anything far longer is not one.
constexpr size_t max_auth_bytes = 1024;

bool require_id(field_reader& r, const char* type, const generation_request& out) {
  if (!out.client_id.empty()) return true;
  return r.fail(errc::invalid_param,
                std::string(type) + " needs an id: a string of 1.." + std::to_string(r.lim.max_id_bytes) + " bytes");
}

field_status decode_request_field(field_reader& r, std::string_view key, const msgpack::object& val,
                                  generation_request& out, std::string& auth) {
  if (!is_one_of(key, {"id", "priority", "deadline_ms", "tags", "model", "auth"})) return field_status::unknown;
  if (val.type == msgpack::type::NIL) return field_status::known;
  int64_t i = 0;
  if (key == "id") return field_reader::status(r.read_id(val, "id", out.client_id));
  if (key == "priority") {
    if (!r.read_int(val, "priority", int32_lo, int32_hi, "an integer in [-2^31, 2^31)", i)) return field_status::failed;
    out.priority = static_cast<int32_t>(i);
    return field_status::known;
  }
  if (key == "deadline_ms") {
    if (!r.read_uint(val, "deadline_ms", uint64_hi, ">= 1 (leave it out for no deadline)", out.deadline_ms))
      return field_status::failed;
    if (out.deadline_ms == 0) return field_reader::status(r.range_error("deadline_ms", ">= 1 (leave it out for no deadline)", "0"));
    return field_status::known;
  }
  if (key == "tags") return field_reader::status(decode_tags(r, val, out.tags));
  if (key == "auth") {
    if (!r.read_text(val, "auth", auth)) return field_status::failed;
    if (auth.size() > max_auth_bytes)
      return field_reader::status(r.fail(errc::too_large, "auth is longer than " + std::to_string(max_auth_bytes) +
                                                              " bytes; it is an API key secret (cs-...)"));
    return field_status::known;
  }
  return field_reader::status(check_model(r, val));  // "model"
}

bool decode_submit(field_reader& r, const msgpack::object& root, generation_request& out, std::string& auth) {
  bool has_prompt = false, has_tokens = false, has_messages = false;
  const char* chat_only = nullptr;  // a chat-only key that was given
  const bool ok = r.for_each_field(root, "", [&](std::string_view key, const msgpack::object& val) {
    const field_status common = decode_request_field(r, key, val, out, auth);
    if (common != field_status::unknown) return common;
    const bool known = is_one_of(key, {"v", "t", "prompt", "tokens", "messages", "chat_template_kwargs",
                                       "add_generation_prompt", "tools", "tool_choice", "parallel_tool_calls",
                                       "reasoning_format", "add_bos", "stream", "params", "want"});
    if (!known) return field_status::unknown;
    if (val.type == msgpack::type::NIL || key == "v" || key == "t") return field_status::known;
    bool b = false;
    if (key == "prompt") return has_prompt = true, field_reader::status(r.read_text(val, "prompt", out.prompt));
    if (key == "tokens")
      return has_tokens = true, field_reader::status(r.read_token_ids(val, "tokens", r.lim.max_prompt_tokens, out.tokens));
    if (key == "messages") return has_messages = true, field_reader::status(decode_messages(r, val, out.messages_json));
    if (key == "chat_template_kwargs") {
      chat_only = "chat_template_kwargs";
      return field_reader::status(decode_chat_template_kwargs(r, val, out.chat_template_kwargs_json));
    }
    // Not in protocol.md's table: http.md's extension, accepted here too.
    if (key == "add_generation_prompt") {
      chat_only = "add_generation_prompt";
      return field_reader::status(r.read_bool(val, "add_generation_prompt", out.add_generation_prompt));
    }
    if (key == "tools") {
      chat_only = "tools";
      return field_reader::status(decode_tools(r, val, out.tools_json));
    }
    if (key == "tool_choice") {
      chat_only = "tool_choice";
      return field_reader::status(decode_tool_choice(r, val, out.tool_choice, out.tool_choice_name));
    }
    if (key == "parallel_tool_calls") {
      chat_only = "parallel_tool_calls";
      return field_reader::status(r.read_bool(val, "parallel_tool_calls", out.parallel_tool_calls));
    }
    if (key == "reasoning_format") {
      chat_only = "reasoning_format";
      if (!r.read_text(val, "reasoning_format", out.reasoning_format)) return field_status::failed;
      if (out.reasoning_format != "auto" && out.reasoning_format != "none")
        return field_reader::status(r.fail(errc::invalid_param, "reasoning_format must be \"auto\" or \"none\", got \"" +
                                                                    out.reasoning_format + "\""));
      return field_status::known;
    }
    if (key == "add_bos") {
      if (!r.read_bool(val, "add_bos", b)) return field_status::failed;
      out.add_bos = b ? 1 : 0;
      return field_status::known;
    }
    if (key == "stream") return field_reader::status(r.read_bool(val, "stream", out.stream));
    if (key == "params") return field_reader::status(decode_params(r, val, out.params));
    return field_reader::status(decode_want(r, val, out));  // "want"
  });
  if (!ok || !require_id(r, "submit", out)) return false;
  const int n_inputs = int(has_prompt) + int(has_tokens) + int(has_messages);
  if (n_inputs > 1)
    return r.fail(errc::invalid_param, std::string("give exactly one of prompt / tokens / messages, not ") +
                                           (n_inputs == 3            ? "all three"
                                            : !has_messages          ? "both prompt and tokens"
                                            : has_prompt             ? "both prompt and messages"
                                                                     : "both tokens and messages"));
  if (n_inputs == 0)
    return r.fail(errc::invalid_param,
                  "give exactly one of prompt (a string) / tokens (an array of token ids) / messages (an array of "
                  "chat turns {role, content})");
  if (chat_only && !has_messages)
    return r.fail(errc::invalid_param, std::string(chat_only) + " applies to messages only; leave it out with " +
                                           (has_prompt ? "prompt" : "tokens"));
  if (has_tokens && out.tokens.empty())
    return r.fail(errc::invalid_param, "tokens is empty; give at least one token id");
  out.use_tokens = has_tokens;
  return true;
}

}  // namespace cortex::wire::detail
