#include "apps/cortexd/daemon_options.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>

namespace cortex {

std::vector<cli::option_spec> daemon_option_specs() {
  return {
      {"model", "PATH", "GGUF model file (or CORTEX_MODEL)", ""},
      {"endpoint", "E", "ZeroMQ endpoint to bind (tcp://HOST:PORT or ipc://PATH)", "tcp://127.0.0.1:5555"},
      {"http", "HOST:PORT", "OpenAI-compatible HTTP API address (docs/http-api.md); 'off' disables it", "127.0.0.1:8080"},
      {"http-max-connections", "N", "open HTTP connections; more are answered 503", "256"},
      {"chat-template", "FILE", "Jinja chat template for `messages` instead of the model's (ChatML when it has none)", ""},
      {"tool-format", "NAME",
       "tool-call syntax of the model family (hermes, llama3, mistral, deepseek, harmony, granite, qwen3_coder, functionary); \"\" = detected "
       "from the chat template",
       ""},
      {"reasoning-format", "auto|none", "auto: a thinking model's reasoning comes apart from the content (reasoning_content); "
       "none: it stays in the text. A request's reasoning_format overrides it", "auto"},
      {"config", "FILE", "settings file in CAF's config format, section [cortex] (e.g. configs/cortexstream.ini)", ""},
      {"threads", "N", "compute threads; 0 = one per core", "0"},
      {"kv-memory-mb", "MB", "memory for the K/V cache (bytes: f16 holds twice the tokens of f32)", "1024"},
      {"kv-blocks", "N", "K/V blocks, in tokens of block-size (overrides kv-memory-mb)", "0"},
      {"kv-type", "T", "K/V cache element type: f32, f16, bf16 or q8_0 (head_dim a multiple of 32)", "f16"},
      {"block-size", "N", "tokens per K/V block", "16"},
      {"max-batch-tokens", "N", "tokens computed per engine step", "512"},
      {"max-running", "N", "sequences running at once", "64"},
      {"max-prefill-chunk", "N", "prefill tokens of one sequence per step; 0 = up to the budget", "0"},
      {"max-prefill-with-decode", "N",
       "prefill tokens per step while requests are decoding (bounds their inter-token latency); 0 = up to the budget",
       "128"},
      {"itl-target-ms", "MS|auto|off",
       "time budget of a step that carries decode tokens: the scheduler learns what steps cost from their measured "
       "times and gives such a step only the prefill tokens that keep it under MS (their inter-token latency); auto = "
       "twice the time of the step's decode tokens alone; off = only --max-prefill-with-decode (which also applies "
       "until the first steps have been timed). Lower: smoother streams, slower time to first token",
       "auto"},
      {"min-prefill-with-decode", "N", "prefill tokens a step carrying decode tokens gets at least, whatever --itl-target-ms says",
       "16"},
      {"speculative", "NGRAM:MAX_DRAFT|off",
       "speculative decoding by prompt lookup for every request that does not set params.speculative: draft up to "
       "MAX_DRAFT (1..32) tokens by matching the last NGRAM (1..16) tokens earlier in prompt + output, verified in the "
       "same step (e.g. 3:8)",
       "off"},
      {"speculative-adaptive", "on|off",
       "size each sequence's drafts by its acceptance so far and the measured step cost, so speculation turns itself "
       "down where it does not pay; off verifies every draft found (for measuring)",
       "on"},
      {"max-waiting", "N", "requests waiting to start before 429 overloaded", "256"},
      {"max-queued-tokens", "N", "prompt tokens waiting to start before 429 overloaded", "262144"},
      {"prefix-cache", "on|off", "share full prompt blocks between requests", "on"},
      {"aging-per-step", "X", "priority a waiting request gains per step", "0.01"},
      {"ctx", "N", "context per request; 0 = the model's", "0"},
      {"max-message-bytes", "N", "largest accepted client message; larger ones drop the connection", "8388608"},
      {"sndhwm", "N", "messages ZeroMQ queues per client before chunks are merged", "1000"},
      {"sndbuf-bytes", "N", "kernel send buffer per client connection; 0 = the OS default", "0"},
      {"heartbeat-ms", "MS", "ZMTP heartbeat interval to clients", "1000"},
      {"heartbeat-timeout-ms", "MS", "a client silent this long (incl. one whose buffers stay full) is gone", "5000"},
      {"grace-ms", "MS", "on SIGTERM/SIGINT: time in-flight requests get before they end with 'shutdown'", "5000"},
      {"log-level", "L", "trace, debug, info, warn, error, critical, off", "info"},
      {"log-json", "", "log JSON lines instead of text", ""},
      {"auth", "FILE",
       "access control: the keys file (tiers and keys: docs/operations.md; 'cortex keys new' adds keys); SIGHUP "
       "reloads it",
       ""},
      {"auth-metrics", "", "with --auth: /metrics needs an API key too (else it stays open, like /health/*)", ""},
      {"curve-secret-key", "FILE",
       "ZeroMQ with CURVE encryption: the server's Z85 secret key ('cortex keys curve' writes one); clients are admitted "
       "by the curve_public keys of the --auth file",
       ""},
      {"insecure", "",
       "allow binding a gateway outside loopback without --auth (and ZeroMQ without CURVE), and a cluster link outside "
       "loopback without TLS",
       ""},
      {"role", "node|worker|router",
       "node: serve alone; worker: also publish the intake on --cluster-port for a router; router: serve the gateways "
       "over the workers of --workers (no model loaded)",
       "node"},
      {"cluster-port", "P", "worker: the TCP port of its intake for routers (CAF middleman)", "0"},
      {"cluster-bind", "HOST", "worker: the address --cluster-port is bound to (outside loopback: TLS or --insecure)",
       "127.0.0.1"},
      {"workers", "H:P,...", "router: the workers' --cluster-port addresses", ""},
      {"workers-file", "FILE", "router: one HOST:PORT per line ('#' comments); SIGHUP rereads it", ""},
      {"routing", "MODE", "router: affinity (prompt prefix, bounded by load), least-loaded or round-robin", "affinity"},
      {"balance-threshold", "N", "router: waiting requests past the least loaded worker before affinity yields", "4"},
      {"affinity-blocks", "N", "router: full prompt blocks (of --block-size tokens, or 4x that in bytes) in the routing key",
       "4"},
      {"cluster-cert", "FILE", "cluster link over TLS: this node's certificate (PEM); with --cluster-key and --cluster-ca",
       ""},
      {"cluster-key", "FILE", "cluster link over TLS: this node's private key (PEM)", ""},
      {"cluster-ca", "FILE", "cluster link over TLS: the CA that signed the peers' certificates (peers are verified)", ""},
  };
}

namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// Reads `key=value` lines of section [cortex]; ';' and '#' start comments;
// values may be "quoted".
status read_config_file(const std::string& path, std::map<std::string, std::string>& kv) {
  std::ifstream in(path);
  if (!in) return fail(errc::invalid_param, "cannot read config file '" + path + "'");
  std::string line, section;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    line = trim(line);
    if (line.empty() || line[0] == ';' || line[0] == '#') continue;
    if (line[0] == '[') {
      if (line.back() != ']') return fail(errc::invalid_param, path + ":" + std::to_string(n) + ": unterminated section header");
      section = trim(line.substr(1, line.size() - 2));
      continue;
    }
    const auto eq = line.find('=');
    if (eq == std::string::npos) return fail(errc::invalid_param, path + ":" + std::to_string(n) + ": expected key=value");
    if (section != "cortex") continue;
    std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    kv[key] = value;
  }
  return status::ok();
}

// "HOST:PORT" (the port after the last ':'; [v6] brackets removed).
bool parse_host_port(const std::string& s, std::string& host, uint16_t& port) {
  const auto colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size()) return false;
  host = s.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  char* end = nullptr;
  const long p = std::strtol(s.c_str() + colon + 1, &end, 10);
  if (*end || p < 0 || p > 65535) return false;
  port = static_cast<uint16_t>(p);
  return true;
}

bool to_int(const std::string& s, long long& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtoll(s.c_str(), &end, 10);
  return *end == '\0';
}

bool flag_set(std::map<std::string, std::string>& kv, const char* name) {
  return kv.count(name) && kv[name] != "false" && kv[name] != "0" && kv[name] != "off";
}

}  // namespace

bool is_local_address(const std::string& host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  return host.rfind("127.", 0) == 0 && host.find_first_not_of("0123456789.") == std::string::npos;
}

bool is_local_endpoint(const std::string& e) {
  if (e.rfind("ipc://", 0) == 0 || e.rfind("inproc://", 0) == 0) return true;
  if (e.rfind("tcp://", 0) != 0) return false;
  const std::string rest = e.substr(6);
  const auto colon = rest.rfind(':');
  return colon != std::string::npos && is_local_address(rest.substr(0, colon));
}

status check_exposure(const daemon_options& o) {
  if (o.insecure) return status::ok();
  const std::string fix = "; give --auth FILE (docs/operations.md, Access control), or --insecure if every client on that network may use it";
  if (o.http_enabled && !is_local_address(o.http.host) && o.auth_path.empty())
    return fail(errc::invalid_param, "refusing to serve HTTP on " + o.http.host + ":" + std::to_string(o.http.port) +
                                         " without access control: it is reachable from other machines" + fix);
  if (!is_local_endpoint(o.zmq.endpoint)) {
    if (o.auth_path.empty())
      return fail(errc::invalid_param, "refusing to bind " + o.zmq.endpoint +
                                           " without access control: it is reachable from other machines" + fix);
    if (o.curve_secret_key_path.empty())
      return fail(errc::invalid_param, "refusing to bind " + o.zmq.endpoint +
                                           " without CURVE: API keys in the wire's `auth` field would cross the network in "
                                           "clear; give --curve-secret-key FILE ('cortex keys curve' makes one), or "
                                           "--insecure");
  }
  return status::ok();
}

expected<std::vector<std::string>> read_workers_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return fail(errc::invalid_param, "cannot read workers file '" + path + "'");
  std::vector<std::string> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    std::string host;
    uint16_t port = 0;
    if (!parse_host_port(line, host, port) || port == 0)
      return fail(errc::invalid_param, path + ":" + std::to_string(n) + ": expected HOST:PORT, got '" + line + "'");
    out.push_back(line);
  }
  return out;
}

status check_cluster_exposure(const daemon_options& o) {
  if (o.insecure || o.cluster_tls()) return status::ok();
  const std::string fix = ": anyone who reaches it could send any actor message; give --cluster-cert, --cluster-key and "
                          "--cluster-ca (TLS, peers verified), or --insecure on a trusted network";
  if (o.role == daemon_options::role_kind::worker && !is_local_address(o.cluster_bind))
    return fail(errc::invalid_param, "refusing a plaintext cluster port on " + o.cluster_bind + fix);
  if (o.role == daemon_options::role_kind::router) {
    for (const auto& w : o.workers) {
      std::string host;
      uint16_t port = 0;
      if (parse_host_port(w, host, port) && !is_local_address(host))
        return fail(errc::invalid_param, "refusing a plaintext cluster link to worker " + w + fix);
    }
  }
  return status::ok();
}

// The --role flags: which role, and what each needs.
static status resolve_cluster_options(std::map<std::string, std::string>& kv, daemon_options& out) {
  using role = daemon_options::role_kind;
  const std::string r = kv["role"];
  if (r == "node") out.role = role::node;
  else if (r == "worker") out.role = role::worker;
  else if (r == "router") out.role = role::router;
  else return fail(errc::invalid_param, "option role must be node, worker or router, got '" + r + "'");
  if (!cluster::parse_routing_mode(kv["routing"], out.routing))
    return fail(errc::invalid_param, "option routing must be affinity, least-loaded or round-robin, got '" + kv["routing"] + "'");
  out.cluster_bind = kv["cluster-bind"];
  out.workers_file = kv["workers-file"];
  out.cluster_cert = kv["cluster-cert"];
  out.cluster_key = kv["cluster-key"];
  out.cluster_ca = kv["cluster-ca"];
  const int n_tls = !out.cluster_cert.empty() + !out.cluster_key.empty() + !out.cluster_ca.empty();
  if (n_tls != 0 && n_tls != 3)
    return fail(errc::invalid_param, "the cluster link over TLS needs all of --cluster-cert, --cluster-key and --cluster-ca");
  std::string list = kv["workers"];
  for (size_t pos = 0; pos < list.size();) {
    const size_t comma = std::min(list.find(',', pos), list.size());
    const std::string w = trim(list.substr(pos, comma - pos));
    std::string host;
    uint16_t port = 0;
    if (!w.empty() && (!parse_host_port(w, host, port) || port == 0))
      return fail(errc::invalid_param, "option workers expects HOST:PORT,... (e.g. 127.0.0.1:7001), got '" + w + "'");
    if (!w.empty()) out.workers.push_back(w);
    pos = comma + 1;
  }
  out.workers_flag = out.workers;
  if (!out.workers_file.empty()) {
    auto more = read_workers_file(out.workers_file);
    if (!more) return more.error();
    out.workers.insert(out.workers.end(), more->begin(), more->end());
  }
  if (out.role == role::router && out.workers.empty() && out.workers_file.empty())
    return fail(errc::invalid_param, "--role router needs --workers HOST:PORT,... or --workers-file FILE");
  if (out.role == role::worker && out.cluster_port == 0)
    return fail(errc::invalid_param, "--role worker needs --cluster-port P (the port routers connect to)");
  if (out.role != role::router && (!out.workers.empty() || !out.workers_file.empty()))
    return fail(errc::invalid_param, "--workers and --workers-file are for --role router");
  return status::ok();
}

status resolve_daemon_options(cli::args& a, daemon_options& out) {
  std::map<std::string, std::string> kv;
  for (auto& spec : daemon_option_specs()) {
    if (!spec.fallback.empty()) kv[spec.name] = spec.fallback;
  }
  if (a.has("config")) {
    out.config_path = a.get("config");
    if (status s = read_config_file(out.config_path, kv); !s) return s;
  }
  if (const char* env = std::getenv("CORTEX_MODEL"); env && *env && kv["model"].empty()) kv["model"] = env;
  for (auto& spec : daemon_option_specs()) {
    if (a.has(spec.name)) kv[spec.name] = a.get(spec.name);
  }
  for (auto& [key, value] : kv) {
    bool known = false;
    for (auto& spec : daemon_option_specs()) known = known || spec.name == key;
    if (!known) return fail(errc::invalid_param, "unknown setting '" + key + "' in " + out.config_path);
  }
  auto& r = out.runtime;
  r.model_path = kv["model"];
  r.log_level = kv["log-level"];
  out.zmq.endpoint = kv["endpoint"];
  r.chat_template_path = kv["chat-template"];
  r.tool_format = kv["tool-format"];
  r.reasoning_format = kv["reasoning-format"];
  if (r.reasoning_format != "auto" && r.reasoning_format != "none")
    return fail(errc::invalid_param, "option reasoning-format expects auto or none, got '" + r.reasoning_format + "'");
  if (kv["http"] == "off") {
    out.http_enabled = false;
  } else if (!parse_host_port(kv["http"], out.http.host, out.http.port)) {
    return fail(errc::invalid_param, "option http expects HOST:PORT (e.g. 127.0.0.1:8080) or off, got '" + kv["http"] + "'");
  }
  out.log_json = flag_set(kv, "log-json");
  out.auth_path = kv["auth"];
  out.auth_metrics = flag_set(kv, "auth-metrics");
  out.curve_secret_key_path = kv["curve-secret-key"];
  out.insecure = flag_set(kv, "insecure");
  if (out.auth_metrics && out.auth_path.empty())
    return fail(errc::invalid_param, "--auth-metrics needs --auth FILE (the keys that may read /metrics)");
  if (!out.curve_secret_key_path.empty() && out.auth_path.empty())
    return fail(errc::invalid_param,
                "--curve-secret-key needs --auth FILE: CURVE clients are admitted by the curve_public keys listed there");
  const auto on_off = [&](const char* name, bool& out) {
    const std::string v = kv[name];
    if (v == "on" || v == "true" || v == "1") out = true;
    else if (v == "off" || v == "false" || v == "0") out = false;
    else return fail(errc::invalid_param, std::string("option ") + name + " must be on or off, got '" + v + "'");
    return status::ok();
  };
  if (status st = on_off("prefix-cache", r.prefix_cache); !st) return st;
  if (status st = on_off("speculative-adaptive", r.scheduler.adaptive_drafts); !st) return st;
  if (!kernels::parse_kv_type(kv["kv-type"], r.kv_type))
    return fail(errc::invalid_param, std::string("option kv-type must be one of ") + kernels::kv_type_choices() + ", got '" +
                                         kv["kv-type"] + "'");
  const std::string aging = kv["aging-per-step"];
  char* end = nullptr;
  r.scheduler.aging_per_step = std::strtod(aging.c_str(), &end);
  if (aging.empty() || *end) return fail(errc::invalid_param, "option aging-per-step expects a number, got '" + aging + "'");
  const std::string itl = kv["itl-target-ms"];
  long long itl_ms = 0;
  if (itl == "auto") r.scheduler.itl_target_ms = 0;
  else if (itl == "off") r.scheduler.itl_target_ms = -1;
  else if (to_int(itl, itl_ms) && itl_ms >= 1 && itl_ms <= 600000) r.scheduler.itl_target_ms = int(itl_ms);
  else return fail(errc::invalid_param, "option itl-target-ms expects auto, off or milliseconds in [1, 600000], got '" + itl + "'");
  const std::string spec = kv["speculative"];
  if (spec != "off") {
    const size_t colon = spec.find(':');
    long long ng = 0, md = 0;
    if (colon == std::string::npos || !to_int(spec.substr(0, colon), ng) || !to_int(spec.substr(colon + 1), md) || ng < 1 ||
        ng > 16 || md < 1 || md > 32)
      return fail(errc::invalid_param, "option speculative expects off or NGRAM:MAX_DRAFT with NGRAM in [1, 16] and "
                                       "MAX_DRAFT in [1, 32] (e.g. 3:8), got '" + spec + "'");
    r.scheduler.speculative.ngram = int(ng);
    r.scheduler.speculative.max_draft = int(md);
  }
  struct int_opt { const char* name; long long lo, hi; std::function<void(long long)> set; };
  const std::vector<int_opt> ints = {
      {"threads", 0, 1024, [&](long long v) { r.threads = int(v); }},
      {"kv-memory-mb", 1, 1 << 20, [&](long long v) { r.kv_memory_mb = int(v); }},
      {"kv-blocks", 0, 1 << 24, [&](long long v) { r.kv_blocks = int(v); }},
      {"block-size", 1, 1024, [&](long long v) { r.block_size = int(v); }},
      {"max-batch-tokens", 1, 1 << 20, [&](long long v) { r.scheduler.max_batch_tokens = int(v); }},
      {"max-running", 1, 1 << 16, [&](long long v) { r.scheduler.max_running = int(v); }},
      {"max-prefill-chunk", 0, 1 << 20, [&](long long v) { r.scheduler.max_prefill_chunk = int(v); }},
      {"max-prefill-with-decode", 0, 1 << 20, [&](long long v) { r.scheduler.max_prefill_with_decode = int(v); }},
      {"min-prefill-with-decode", 1, 1 << 20, [&](long long v) { r.scheduler.min_prefill_with_decode = int(v); }},
      {"max-waiting", 1, 1 << 24, [&](long long v) { r.intake.max_waiting = int(v); }},
      {"max-queued-tokens", 1, 1ll << 31, [&](long long v) { r.intake.max_queued_tokens = int(v); }},
      {"ctx", 0, 1 << 24, [&](long long v) { r.n_ctx = int(v); }},
      {"max-message-bytes", 1024, 1ll << 31, [&](long long v) { out.zmq.max_message_bytes = v; }},
      {"sndhwm", 1, 1 << 20, [&](long long v) { out.zmq.sndhwm = int(v); }},
      {"sndbuf-bytes", 0, 1 << 30, [&](long long v) { out.zmq.sndbuf_bytes = int(v); }},
      {"heartbeat-ms", 100, 3600000, [&](long long v) { out.zmq.heartbeat_ivl_ms = int(v); }},
      {"heartbeat-timeout-ms", 100, 3600000, [&](long long v) { out.zmq.heartbeat_timeout_ms = int(v); }},
      {"http-max-connections", 1, 1 << 20, [&](long long v) { out.http.max_connections = size_t(v); }},
      {"grace-ms", 0, 3600000, [&](long long v) { out.grace_ms = int(v); }},
      {"cluster-port", 0, 65535, [&](long long v) { out.cluster_port = uint16_t(v); }},
      {"balance-threshold", 0, 1 << 20, [&](long long v) { out.balance_threshold = uint32_t(v); }},
      {"affinity-blocks", 1, 1024, [&](long long v) { out.affinity_blocks = uint32_t(v); }},
  };
  for (auto& o : ints) {
    long long v = 0;
    if (!to_int(kv[o.name], v) || v < o.lo || v > o.hi) {
      return fail(errc::invalid_param, std::string("option ") + o.name + " expects an integer in [" + std::to_string(o.lo) +
                                           ", " + std::to_string(o.hi) + "], got '" + kv[o.name] + "'");
    }
    o.set(v);
  }
  if (status s = resolve_cluster_options(kv, out); !s) return s;
  // A router loads no model (its --model, if any, only lends the vocabulary to HTTP logprobs).
  if (out.role == daemon_options::role_kind::router) return status::ok();
  if (r.model_path.empty()) return fail(errc::invalid_param, "no model: give --model PATH (a GGUF file) or set CORTEX_MODEL");
  if (status s = r.validate(); !s) return s;
  return status::ok();
}

}  // namespace cortex
