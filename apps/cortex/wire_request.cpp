#include "apps/cortex/wire_request.hpp"

#include <cstdio>
#include <cstdlib>
#include <random>

#include "apps/cortex/common.hpp"

namespace cortex::cli {

std::vector<option_spec> with_endpoint(std::vector<option_spec> specs) {
  specs.insert(specs.begin(), {"endpoint", "E", "cortexd's ZeroMQ endpoint", "tcp://127.0.0.1:5555"});
  for (option_spec& o : curve_client_specs()) specs.push_back(std::move(o));
  specs.push_back({"timeout-ms", "MS", "give up when the server does not answer for this long", "30000"});
  return specs;
}

std::optional<curve_client_keys> curve_keys(args& a) {
  curve_client_keys keys;
  std::string error;
  if (!curve_client_keys_from_args(a, keys, error)) {
    std::fprintf(stderr, "cortex: %s\n", error.c_str());
    return std::nullopt;
  }
  return keys;
}

std::vector<option_spec> generation_specs() {
  return {{"max-tokens", "N", "tokens to generate at most", "256"},
          {"temperature", "T", "sampling temperature; 0 = greedy", "1.0"},
          {"top-k", "K", "0 = off", "0"},
          {"top-p", "P", "nucleus threshold", "1.0"},
          {"min-p", "P", "minimum probability relative to the top token", "0"},
          {"seed", "S", "RNG seed", ""},
          {"stop", "TEXT", "a stop string", ""},
          {"priority", "N", "higher is served first", "0"},
          {"deadline-ms", "MS", "end the request after this long", ""},
          {"ignore-eos", "", "generate past end-of-sequence", ""},
          {"api-key", "SECRET", "API key sent as the submit's auth (cortexd --auth without CURVE); default $CORTEX_API_KEY", ""}};
}

bool build_generation_request(args& a, wire_json& msg) {
  auto max_tokens = a.get_int("max-tokens"), top_k = a.get_int("top-k"), priority = a.get_int("priority");
  auto temperature = a.get_float("temperature"), top_p = a.get_float("top-p"), min_p = a.get_float("min-p");
  if (!max_tokens || !top_k || !priority || !temperature || !top_p || !min_p) {
    std::fprintf(stderr, "cortex: %s\n", a.error().c_str());
    return false;
  }
  wire_json params = {{"max_tokens", *max_tokens}, {"temperature", *temperature}, {"top_k", *top_k},
                      {"top_p", *top_p},           {"min_p", *min_p}};
  if (a.has("seed")) {
    auto s = a.get_int("seed");
    if (!s || *s < 0) {
      std::fprintf(stderr, "cortex: --seed expects a non-negative integer\n");
      return false;
    }
    params["seed"] = *s;
  }
  if (a.has("stop")) params["stop"] = wire_json::array({a.get("stop")});
  if (a.has("ignore-eos")) params["ignore_eos"] = true;
  msg = {{"v", 1}, {"t", "submit"}, {"priority", *priority}, {"params", params}};
  const char* env_key = std::getenv("CORTEX_API_KEY");
  const std::string api_key = a.has("api-key") ? a.get("api-key") : env_key ? env_key : "";
  if (!api_key.empty()) msg["auth"] = api_key;
  if (a.has("deadline-ms")) {
    auto d = a.get_int("deadline-ms");
    if (!d || *d <= 0) {
      std::fprintf(stderr, "cortex: --deadline-ms expects a positive integer\n");
      return false;
    }
    msg["deadline_ms"] = *d;
  }
  return true;
}

std::string fresh_request_id() { return "cli-" + std::to_string(std::random_device{}() % 1000000000u); }

bool read_messages_json(const std::string& path, wire_json& out, std::string& error) {
  std::string text;
  if (!read_text(path, text)) {
    error = "cannot read '" + path + "'";
    return false;
  }
  out = wire_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (out.is_discarded()) {
    error = "'" + path + "' is not valid JSON";
    return false;
  }
  if (!out.is_array() || out.empty()) {
    error = "'" + path + "' must hold a non-empty JSON array of chat turns, e.g. [{\"role\": \"user\", \"content\": \"Hi\"}]";
    return false;
  }
  return true;
}

bool add_chat_template_kwargs(args& a, wire_json& msg) {
  if (!a.has("chat-template-kwargs")) return true;
  wire_json kwargs = wire_json::parse(a.get("chat-template-kwargs"), nullptr, /*allow_exceptions=*/false);
  if (kwargs.is_discarded() || !kwargs.is_object()) {
    std::fprintf(stderr, "cortex: --chat-template-kwargs must be a JSON object, e.g. '{\"enable_thinking\": false}'\n");
    return false;
  }
  msg["chat_template_kwargs"] = std::move(kwargs);
  return true;
}

std::optional<long long> timeout_ms(args& a) {
  auto t = a.get_int("timeout-ms");
  if (!t || *t <= 0) {
    std::fprintf(stderr, "cortex: --timeout-ms must be a positive integer\n");
    return std::nullopt;
  }
  return *t;
}

void print_no_reply(args& a, const wire_connection& c, long long ms) {
  if (!c.refused().empty()) {
    std::fprintf(stderr, "cortex: %s: %s\n", a.get("endpoint").c_str(), c.refused().c_str());
    return;
  }
  // A client holding the wrong server key sees no refusal: the server just drops its handshake.
  std::fprintf(stderr, "cortex: no message from %s within %lld ms (is cortexd running there?%s)\n", a.get("endpoint").c_str(), ms,
               c.curve() ? " With CURVE: is --curve-server-key its public key?" : "");
}

bool read_request(wire_connection& c, const std::string& id, int timeout_ms,
                  const std::function<void(const wire_json&)>& on_message, wire_json& terminal) {
  wire_json m;
  while (c.recv(m, timeout_ms)) {
    if (!m.is_object() || (m.contains("id") && m.value("id", "") != id)) continue;
    const std::string t = m.value("t", "");
    // An id-less error is the server refusing the frame itself (malformed).
    if (!m.contains("id") && t != "error") continue;
    // An error with terminal: false rejects another message naming the id; the request goes on.
    if (t == "error" && m.contains("id") && m.value("terminal", true) == false) continue;
    on_message(m);
    if (t == "finished" || t == "error") {
      terminal = std::move(m);
      return true;
    }
  }
  return false;
}

void print_error_reply(const wire_json& m) {
  std::fprintf(stderr, "cortex: error %d %s: %s\n", m.value("code", 0), m.value("name", "").c_str(),
               m.value("message", "").c_str());
}

}  // namespace cortex::cli
