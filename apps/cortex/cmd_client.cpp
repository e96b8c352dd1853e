// Wire clients of cortexd: submit, cancel, stats, health, models. They speak
// protocol v1 (../shared/docs/protocol.md): one DEALER connection, one
// msgpack map per frame.
#include <signal.h>
#include <zmq.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "apps/cortex/commands.hpp"
#include "apps/cortex/common.hpp"

namespace cortex::cli {

namespace {

using json = nlohmann::json;

std::atomic<bool> g_interrupted{false};
void on_sigint(int) { g_interrupted = true; }

// One DEALER connection; every call has a timeout, nothing blocks forever.
class connection {
 public:
  explicit connection(const std::string& endpoint, const std::string& routing_id = "") {
    ctx_ = zmq_ctx_new();
    sock_ = zmq_socket(ctx_, ZMQ_DEALER);
    int linger = 200;
    zmq_setsockopt(sock_, ZMQ_LINGER, &linger, sizeof linger);
    if (!routing_id.empty()) zmq_setsockopt(sock_, ZMQ_ROUTING_ID, routing_id.data(), routing_id.size());
    ok_ = zmq_connect(sock_, endpoint.c_str()) == 0;
    if (!ok_) error_ = "cannot connect to '" + endpoint + "': " + zmq_strerror(zmq_errno());
  }
  ~connection() {
    zmq_close(sock_);
    zmq_ctx_term(ctx_);
  }
  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  bool send(const json& msg) {
    auto bytes = json::to_msgpack(msg);
    return zmq_send(sock_, bytes.data(), bytes.size(), 0) >= 0;
  }
  // Next message within timeout_ms (false on timeout or interrupt). `raw`
  // keeps the frame for --json printing.
  bool recv(json& out, int timeout_ms) {
    zmq_pollitem_t item{sock_, 0, ZMQ_POLLIN, 0};
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < until) {
      if (g_interrupted && on_interrupt_) {
        on_interrupt_();
        on_interrupt_ = nullptr;
      }
      if (zmq_poll(&item, 1, 100) > 0) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        zmq_msg_recv(&m, sock_, 0);
        const auto* p = static_cast<const uint8_t*>(zmq_msg_data(&m));
        out = json::from_msgpack(p, p + zmq_msg_size(&m), true, false);
        zmq_msg_close(&m);
        if (out.is_discarded()) continue;
        return true;
      }
    }
    return false;
  }
  void on_interrupt(std::function<void()> f) { on_interrupt_ = std::move(f); }

 private:
  void* ctx_ = nullptr;
  void* sock_ = nullptr;
  bool ok_ = false;
  std::string error_;
  std::function<void()> on_interrupt_;
};

std::vector<option_spec> with_endpoint(std::vector<option_spec> specs) {
  specs.insert(specs.begin(), {"endpoint", "E", "cortexd's ZeroMQ endpoint", "tcp://127.0.0.1:5555"});
  specs.push_back({"timeout-ms", "MS", "give up when the server does not answer for this long", "30000"});
  return specs;
}

// Sends one connection-level request (stats, health, models) and prints the reply as JSON.
int simple_query(const char* type, const char* summary, int argc, char** argv) {
  args a(type, summary, with_endpoint({}));
  if (int rc = parse_args(a, argc, argv); rc >= 0) return rc;
  auto timeout = a.get_int("timeout-ms");
  if (!timeout || *timeout <= 0) { std::fprintf(stderr, "cortex: --timeout-ms must be a positive integer\n"); return 2; }
  connection c(a.get("endpoint"));
  if (!c.ok()) { std::fprintf(stderr, "cortex: %s\n", c.error().c_str()); return 1; }
  c.send({{"v", 1}, {"t", type}});
  json reply;
  if (!c.recv(reply, static_cast<int>(*timeout))) {
    std::fprintf(stderr, "cortex: no answer from %s within %lld ms (is cortexd running there?)\n", a.get("endpoint").c_str(), *timeout);
    return 1;
  }
  std::printf("%s\n", reply.dump(2).c_str());
  return reply.value("t", "") == "error" ? 1 : 0;
}

}  // namespace

int cmd_stats(int argc, char** argv) { return simple_query("stats", "Prints cortexd's statistics (JSON).", argc, argv); }
int cmd_health(int argc, char** argv) { return simple_query("health", "Prints cortexd's health: starting, ready or draining (JSON).", argc, argv); }
int cmd_models(int argc, char** argv) { return simple_query("models", "Lists the models cortexd serves (JSON).", argc, argv); }

int cmd_cancel(int argc, char** argv) {
  args a("cancel",
         "Cancels requests by id. Protocol v1 scopes ids to a connection: this reaches requests submitted\n"
         "on a connection with the same --routing-id (to stop a running 'cortex submit', press Ctrl-C in it).",
         with_endpoint({{"id", "ID", "request id (or a comma-separated list)", ""},
                        {"routing-id", "NAME", "ZeroMQ routing id of the connection that submitted", ""}}));
  if (int rc = parse_args(a, argc, argv); rc >= 0) return rc;
  if (!a.has("id")) { std::fprintf(stderr, "cortex: --id is required\n"); return 2; }
  json ids = json::array();
  std::string s = a.get("id"), item;
  for (size_t p = 0; p <= s.size(); ++p) {
    if (p == s.size() || s[p] == ',') { if (!item.empty()) ids.push_back(item); item.clear(); } else { item += s[p]; }
  }
  connection c(a.get("endpoint"), a.get("routing-id"));
  if (!c.ok()) { std::fprintf(stderr, "cortex: %s\n", c.error().c_str()); return 1; }
  c.send({{"v", 1}, {"t", "cancel"}, {"ids", ids}});
  // Acknowledgements are the requests' `finished` messages; a short wait collects those that exist.
  json reply;
  while (c.recv(reply, 1000)) std::printf("%s\n", reply.dump().c_str());
  return 0;
}

int cmd_submit(int argc, char** argv) {
  args a("submit",
         "Submits a prompt to cortexd and streams the generated text to stdout (a summary goes to stderr).\n"
         "With --json, prints every protocol message instead. Ctrl-C cancels the request.",
         with_endpoint({{"prompt", "TEXT", "prompt text", ""},
                        {"file", "PATH", "read the prompt from a file ('-' = stdin)", ""},
                        {"id", "ID", "request id (default: random)", ""},
                        {"max-tokens", "N", "tokens to generate at most", "256"},
                        {"temperature", "T", "sampling temperature; 0 = greedy", "1.0"},
                        {"top-k", "K", "0 = off", "0"},
                        {"top-p", "P", "nucleus threshold", "1.0"},
                        {"min-p", "P", "minimum probability relative to the top token", "0"},
                        {"seed", "S", "RNG seed", ""},
                        {"stop", "TEXT", "a stop string", ""},
                        {"priority", "N", "higher is served first", "0"},
                        {"deadline-ms", "MS", "end the request after this long", ""},
                        {"ignore-eos", "", "generate past end-of-sequence", ""},
                        {"no-stream", "", "receive the text at the end only", ""},
                        {"json", "", "print the protocol messages (JSON lines)", ""}}));
  if (int rc = parse_args(a, argc, argv); rc >= 0) return rc;
  std::string prompt = a.get("prompt");
  if (a.has("file") && !read_text(a.get("file"), prompt)) { std::fprintf(stderr, "cortex: cannot read '%s'\n", a.get("file").c_str()); return 1; }
  if (!a.has("prompt") && !a.has("file")) { std::fprintf(stderr, "cortex: give a prompt with --prompt TEXT or --file PATH\n"); return 2; }
  auto max_tokens = a.get_int("max-tokens"), top_k = a.get_int("top-k"), priority = a.get_int("priority"), timeout = a.get_int("timeout-ms");
  auto temperature = a.get_float("temperature"), top_p = a.get_float("top-p"), min_p = a.get_float("min-p");
  if (!max_tokens || !top_k || !priority || !timeout || !temperature || !top_p || !min_p) { std::fprintf(stderr, "cortex: %s\n", a.error().c_str()); return 2; }
  std::string id = a.get("id");
  if (id.empty()) id = "cli-" + std::to_string(std::random_device{}() % 1000000000u);
  json params = {{"max_tokens", *max_tokens}, {"temperature", *temperature}, {"top_k", *top_k}, {"top_p", *top_p}, {"min_p", *min_p}};
  if (a.has("seed")) { auto s = a.get_int("seed"); if (!s || *s < 0) { std::fprintf(stderr, "cortex: --seed expects a non-negative integer\n"); return 2; } params["seed"] = *s; }
  if (a.has("stop")) params["stop"] = json::array({a.get("stop")});
  if (a.has("ignore-eos")) params["ignore_eos"] = true;
  json msg = {{"v", 1}, {"t", "submit"}, {"id", id}, {"prompt", prompt}, {"stream", !a.has("no-stream")}, {"priority", *priority}, {"params", params}};
  if (a.has("deadline-ms")) { auto d = a.get_int("deadline-ms"); if (!d || *d < 0) { std::fprintf(stderr, "cortex: --deadline-ms expects a non-negative integer\n"); return 2; } msg["deadline_ms"] = *d; }

  connection c(a.get("endpoint"));
  if (!c.ok()) { std::fprintf(stderr, "cortex: %s\n", c.error().c_str()); return 1; }
  signal(SIGINT, on_sigint);
  c.on_interrupt([&c, id] { c.send({{"v", 1}, {"t", "cancel"}, {"id", id}}); });
  c.send(msg);
  const bool as_json = a.has("json");
  json m;
  while (c.recv(m, static_cast<int>(*timeout))) {
    if (m.value("id", "") != id && m.contains("id")) continue;
    const std::string t = m.value("t", "");
    if (as_json) {
      std::printf("%s\n", m.dump().c_str());
      std::fflush(stdout);
    } else if (t == "chunk" || t == "finished") {
      std::string text = m.value("text", "");
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    }
    if (t == "error") {
      if (!as_json) std::fprintf(stderr, "cortex: error %d %s: %s\n", m.value("code", 0), m.value("name", "").c_str(), m.value("message", "").c_str());
      return 1;
    }
    if (t == "finished") {
      if (!as_json) {
        std::printf("\n");
        const auto& u = m["usage"];
        const auto& tm = m["timings"];
        std::fprintf(stderr, "[cortex] %s: %d prompt tokens (%d cached), %d generated; ttft %.1f ms, %.1f tok/s\n",
                     m.value("reason", "").c_str(), u.value("prompt_tokens", 0), u.value("cached_tokens", 0),
                     u.value("completion_tokens", 0), tm.value("ttft_ms", 0.0), tm.value("tokens_per_s", 0.0));
      }
      return m.value("reason", "") == "error" ? 1 : 0;
    }
  }
  std::fprintf(stderr, "cortex: no message from %s within %lld ms (is cortexd running there?)\n", a.get("endpoint").c_str(), *timeout);
  return 1;
}

}  // namespace cortex::cli
