#include "bench/load/wire_transport.hpp"

#include <zmq.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <thread>

namespace cortex::load {

using json = nlohmann::json;

namespace {

bool send_json(void* sock, const json& msg) {
  const auto bytes = json::to_msgpack(msg);
  return zmq_send(sock, bytes.data(), bytes.size(), ZMQ_DONTWAIT) >= 0;
}

// Receives one message without waiting; false when none is there (or it does
// not decode, in which case `bad` is set).
bool recv_json(void* sock, json& out, bool& bad) {
  zmq_msg_t m;
  zmq_msg_init(&m);
  bool got = false;
  if (zmq_msg_recv(&m, sock, ZMQ_DONTWAIT) >= 0) {
    got = true;
    const auto* p = static_cast<const uint8_t*>(zmq_msg_data(&m));
    out = json::from_msgpack(p, p + zmq_msg_size(&m), true, false);
    bad = out.is_discarded() || !out.is_object();
  }
  zmq_msg_close(&m);
  return got;
}

// Sends `request` on `sock` and waits up to `timeout_ms` for a reply of type `t`.
expected<json> ask(void* sock, const json& request, const std::string& t, int timeout_ms) {
  if (!send_json(sock, request)) return fail(errc::internal, std::string("send failed: ") + zmq_strerror(zmq_errno()));
  const auto until = load_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (load_clock::now() < until) {
    zmq_pollitem_t item{sock, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, 50) <= 0) continue;
    json reply;
    bool bad = false;
    while (recv_json(sock, reply, bad)) {
      if (!bad && reply.value("t", "") == t) return reply;
    }
  }
  return fail(errc::not_ready, "no '" + t + "' reply within " + std::to_string(timeout_ms) + " ms");
}

}  // namespace

expected<std::unique_ptr<wire_transport>> wire_transport::connect(const std::string& endpoint, int n_streams,
                                                                  double ready_timeout_s, const cli::curve_client_keys& curve,
                                                                  const std::string& auth) {
  std::unique_ptr<wire_transport> t(new wire_transport());
  t->auth_ = auth;
  t->ctx_ = zmq_ctx_new();
  for (int i = 0; i < n_streams; ++i) {
    void* s = zmq_socket(t->ctx_, ZMQ_DEALER);
    const int linger = 0, hwm = 0;  // hwm 0: never drop or block a submit on the client side
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(s, ZMQ_RCVHWM, &hwm, sizeof hwm);
    t->sockets_.push_back(s);
    std::string error;
    if (curve.enabled() && !cli::apply_curve_client(s, curve, error)) return fail(errc::invalid_param, error);
    if (zmq_connect(s, endpoint.c_str()) != 0) {
      return fail(errc::invalid_param, "cannot connect to '" + endpoint + "': " + zmq_strerror(zmq_errno()) +
                        " (expected tcp://HOST:PORT or ipc://PATH)");
    }
  }
  // cortexd binds before it loads the model: wait for `ready`.
  const auto until = load_clock::now() + std::chrono::duration<double>(ready_timeout_s);
  std::string last = "no reply";
  for (;;) {
    auto h = ask(t->sockets_[0], json{{"v", 1}, {"t", "health"}}, "health", 1000);
    if (h && h->value("status", "") == "ready") break;
    last = h ? "health status '" + h->value("status", "?") + "'" : h.error().message;
    if (load_clock::now() >= until) {
      return fail(errc::not_ready, "server at '" + endpoint + "' not ready within " + std::to_string(int(ready_timeout_s)) +
                        " s (" + last + "); is cortexd running there?" +
                        (curve.enabled() ? " With CURVE: is this key's curve_public in its keys file, and is the"
                                           " server key its public key?"
                                         : ""));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // polling readiness, bounded by `until`
  }
  auto m = ask(t->sockets_[0], json{{"v", 1}, {"t", "models"}}, "models", 5000);
  if (!m) return fail(m.error().code, "models: " + m.error().message);
  const auto list = m->find("models");
  if (list == m->end() || !list->is_array() || list->empty()) return fail(errc::malformed, "models reply lists no model: " + m->dump());
  const json& first = (*list)[0];
  t->info_.name = first.value("name", "");
  t->info_.quant = first.value("quant", "");
  t->info_.n_vocab = first.value("n_vocab", 0);
  t->info_.n_ctx = first.value("n_ctx", 0);
  if (t->info_.n_vocab <= 0) return fail(errc::malformed, "models reply has no n_vocab: " + m->dump());
  return t;
}

wire_transport::~wire_transport() {
  for (void* s : sockets_) zmq_close(s);
  if (ctx_) zmq_ctx_term(ctx_);
}

expected<std::string> wire_transport::server_stats() {
  auto s = ask(sockets_[0], json{{"v", 1}, {"t", "stats"}}, "stats", 5000);
  if (!s) return s.error();
  return s->dump();
}

void wire_transport::submit(const planned_request& r) {
  json msg = {{"v", 1},
                    {"t", "submit"},
                    {"id", std::to_string(r.index)},
                    {"tokens", r.tokens},
                    {"stream", true},
                    {"want", {{"text", true}, {"token_ids", true}}},
                    {"params", {{"max_tokens", r.max_tokens}, {"temperature", 0.0}, {"ignore_eos", true}}}};
  if (!auth_.empty()) msg["auth"] = auth_;
  if (!send_json(sockets_[size_t(r.stream)], msg)) {
    // Reported like a server error so the request is counted, not lost.
    pending_errors_.push_back(r.index);
  }
}

void wire_transport::poll(std::vector<load_event>& out, std::chrono::milliseconds timeout) {
  for (int idx : pending_errors_) {
    load_event e;
    e.request = idx;
    e.what = load_event::kind::error;
    e.at = load_clock::now();
    e.error_code = 0;
    e.error_name = "client_send_failed";
    out.push_back(e);
  }
  pending_errors_.clear();
  std::vector<zmq_pollitem_t> items(sockets_.size());
  for (size_t i = 0; i < sockets_.size(); ++i) items[i] = {sockets_[i], 0, ZMQ_POLLIN, 0};
  if (zmq_poll(items.data(), int(items.size()), out.empty() ? long(timeout.count()) : 0) <= 0) return;
  json msg;
  for (size_t i = 0; i < sockets_.size(); ++i) {
    if (!(items[i].revents & ZMQ_POLLIN)) continue;
    bool bad = false;
    while (recv_json(sockets_[i], msg, bad)) {
      const auto at = load_clock::now();
      if (bad) continue;
      const auto id = msg.find("id");
      if (id == msg.end() || !id->is_string()) continue;  // connection-level replies
      load_event e;
      e.at = at;
      e.request = std::atoi(id->get_ref<const std::string&>().c_str());
      const std::string t = msg.value("t", "");
      auto count_payload = [&] {
        if (auto ids = msg.find("token_ids"); ids != msg.end() && ids->is_array()) e.n_tokens = int(ids->size());
        if (auto text = msg.find("text"); text != msg.end() && text->is_string()) e.has_text = !text->get_ref<const std::string&>().empty();
      };
      if (t == "accepted") {
        e.what = load_event::kind::accepted;
      } else if (t == "chunk") {
        e.what = load_event::kind::chunk;
        count_payload();
      } else if (t == "finished") {
        e.what = load_event::kind::finished;
        count_payload();
        e.reason = msg.value("reason", "");
        if (auto u = msg.find("usage"); u != msg.end() && u->is_object()) e.completion_tokens = u->value("completion_tokens", 0);
      } else if (t == "error") {
        e.what = load_event::kind::error;
        e.error_code = msg.value("code", 0);
        e.error_name = msg.value("name", "");
      } else {
        continue;
      }
      out.push_back(std::move(e));
    }
  }
}

}  // namespace cortex::load
