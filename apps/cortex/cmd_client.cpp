// Wire clients of cortexd: submit, cancel, stats, health, models (chat is in
// cmd_chat.cpp). They speak protocol v1 (../shared/docs/protocol.md) over a
// wire_connection.
#include <cstdio>
#include <string>

#include "apps/cortex/commands.hpp"
#include "apps/cortex/common.hpp"
#include "apps/cortex/wire_request.hpp"

namespace cortex::cli {

namespace {

// Sends one connection-level request (stats, health, models) and prints the reply as JSON.
int simple_query(const char* type, const char* summary, int argc, char** argv) {
  args a(type, summary, with_endpoint({}));
  if (int rc = parse_args(a, argc, argv); rc >= 0) return rc;
  const auto timeout = timeout_ms(a);
  if (!timeout) return 2;
  const auto curve = curve_keys(a);
  if (!curve) return 2;
  wire_connection c(a.get("endpoint"), *curve);
  if (!c.ok()) { std::fprintf(stderr, "cortex: %s\n", c.error().c_str()); return 1; }
  c.send({{"v", 1}, {"t", type}});
  wire_json reply;
  if (!c.recv(reply, static_cast<int>(*timeout))) {
    print_no_reply(a, c, *timeout);
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
  wire_json ids = wire_json::array();
  std::string s = a.get("id"), item;
  for (size_t p = 0; p <= s.size(); ++p) {
    if (p == s.size() || s[p] == ',') { if (!item.empty()) ids.push_back(item); item.clear(); } else { item += s[p]; }
  }
  const auto curve = curve_keys(a);
  if (!curve) return 2;
  wire_connection c(a.get("endpoint"), *curve, a.get("routing-id"));
  if (!c.ok()) { std::fprintf(stderr, "cortex: %s\n", c.error().c_str()); return 1; }
  c.send({{"v", 1}, {"t", "cancel"}, {"ids", ids}});
  // Acknowledgements are the requests' `finished` messages; a short wait collects those that exist.
  wire_json reply;
  while (c.recv(reply, 1000)) std::printf("%s\n", reply.dump().c_str());
  return 0;
}

int cmd_submit(int argc, char** argv) {
  std::vector<option_spec> specs = {
      {"prompt", "TEXT", "prompt text", ""},
      {"file", "PATH", "read the prompt from a file ('-' = stdin)", ""},
      {"messages-json", "PATH", "chat turns instead of a prompt: a JSON array of {role, content} ('-' = stdin)", ""},
      {"chat-template-kwargs", "JSON", "with --messages-json: extra chat template variables (a JSON object)", ""},
      {"id", "ID", "request id (default: random)", ""}};
  for (option_spec& o : generation_specs()) specs.push_back(std::move(o));
  specs.push_back({"no-stream", "", "receive the text at the end only", ""});
  specs.push_back({"json", "", "print the protocol messages (JSON lines)", ""});
  args a("submit",
         "Submits a prompt (or chat turns, which cortexd renders with the model's chat template) and streams\n"
         "the generated text to stdout (a summary goes to stderr). With --json, prints every protocol message\n"
         "instead. Ctrl-C cancels the request.",
         with_endpoint(std::move(specs)));
  if (int rc = parse_args(a, argc, argv); rc >= 0) return rc;
  const int n_inputs = int(a.has("prompt")) + int(a.has("file")) + int(a.has("messages-json"));
  if (n_inputs != 1) {
    std::fprintf(stderr, "cortex: give one of --prompt TEXT, --file PATH or --messages-json PATH\n");
    return 2;
  }
  if (a.has("chat-template-kwargs") && !a.has("messages-json")) {
    std::fprintf(stderr, "cortex: --chat-template-kwargs goes with --messages-json\n");
    return 2;
  }
  const auto timeout = timeout_ms(a);
  if (!timeout) return 2;
  wire_json msg;
  if (!build_generation_request(a, msg)) return 2;
  const std::string id = a.has("id") ? a.get("id") : fresh_request_id();
  msg["id"] = id;
  msg["stream"] = !a.has("no-stream");
  std::string error, prompt;
  if (a.has("messages-json")) {
    wire_json turns;
    if (!read_messages_json(a.get("messages-json"), turns, error)) { std::fprintf(stderr, "cortex: %s\n", error.c_str()); return 2; }
    msg["messages"] = std::move(turns);
    if (!add_chat_template_kwargs(a, msg)) return 2;
  } else if (a.has("file")) {
    if (!read_text(a.get("file"), prompt)) { std::fprintf(stderr, "cortex: cannot read '%s'\n", a.get("file").c_str()); return 1; }
    msg["prompt"] = prompt;
  } else {
    msg["prompt"] = a.get("prompt");
  }

  const auto curve = curve_keys(a);
  if (!curve) return 2;
  wire_connection c(a.get("endpoint"), *curve);
  if (!c.ok()) { std::fprintf(stderr, "cortex: %s\n", c.error().c_str()); return 1; }
  catch_sigint();
  c.on_interrupt([&c, id] { c.send({{"v", 1}, {"t", "cancel"}, {"id", id}}); });
  c.send(msg);
  const bool as_json = a.has("json");
  wire_json m;
  const bool ended = read_request(c, id, static_cast<int>(*timeout), [as_json](const wire_json& ev) {
    const std::string t = ev.value("t", "");
    if (as_json) {
      std::printf("%s\n", ev.dump().c_str());
      std::fflush(stdout);
    } else if (t == "chunk" || t == "finished") {
      const std::string text = ev.value("text", "");
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    }
  }, m);
  if (!ended) {
    print_no_reply(a, c, *timeout);
    return 1;
  }
  if (m.value("t", "") == "error") {
    if (!as_json) print_error_reply(m);
    return 1;
  }
  if (!as_json) {
    std::printf("\n");
    const wire_json u = m.value("usage", wire_json::object()), tm = m.value("timings", wire_json::object());
    std::fprintf(stderr, "[cortex] %s: %d prompt tokens (%d cached), %d generated; ttft %.1f ms, %.1f tok/s\n",
                 m.value("reason", "").c_str(), u.value("prompt_tokens", 0), u.value("cached_tokens", 0),
                 u.value("completion_tokens", 0), tm.value("ttft_ms", 0.0), tm.value("tokens_per_s", 0.0));
    if (m.contains("error")) print_error_reply(m["error"]);  // reason error: what failed
  }
  return m.value("reason", "") == "error" ? 1 : 0;
}

}  // namespace cortex::cli
