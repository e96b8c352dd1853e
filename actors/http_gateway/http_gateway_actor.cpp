#include "actors/http_gateway/http_gateway_actor.hpp"

#include <chrono>
#include <iterator>
#include <memory>
#include <optional>
#include <unordered_map>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/auth/credentials.hpp"
#include "actors/http_gateway/anthropic_messages.hpp"
#include "actors/http_gateway/http_routes.hpp"
#include "actors/gateway_core/metrics_registry.hpp"
#include "actors/http_gateway/openai_error.hpp"
#include "actors/http_gateway/openai_json.hpp"
#include "actors/http_gateway/openai_models.hpp"
#include "actors/http_gateway/openai_request.hpp"
#include "actors/http_gateway/openai_response_group.hpp"
#include "actors/http_gateway/responses_api.hpp"

namespace cortex {

namespace {

using namespace cortex::http;

// Which HTTP response a core route (one choice, or one embedding input) feeds.
struct http_route {
  uint64_t response = 0;
  uint32_t index = 0;
  openai_endpoint endpoint = openai_endpoint::chat_completions;  // its metrics label, kept past the response
  std::string key_id;  // the API key (metrics label; "" with access control off)
  std::string peer;    // the client's address, for the refusal log
};
using route = gateway_route<http_route>;

// One HTTP request being answered from engine events.
struct http_response {
  uint64_t conn = 0;
  std::vector<std::string> client_ids;  // the core ids of its choices / inputs
  openai_response_group group;
};

struct http_state;
using self_ptr = http_gateway_actor::stateful_pointer<http_state>;

class http_port final : public gateway_port<http_route> {
 public:
  self_ptr self = nullptr;
  void cancel(request_id rid, finish_reason why) override;
  void send_accepted(route& r, const request_accepted& a) override;
  void send_chunk(route& r, const request_chunk& c) override;
  void send_finished(route& r, const request_finished& f) override;
  void send_rejected(route& r, const status& e) override;
  // Metrics, for every request: also those whose connection is gone
  // (client_gone) or whose response already ended, which get no send_*.
  void ended(route& r, const request_finished& f) override;
  void ended_rejected(route& r, const status& e) override;
};

struct http_state {
  http_server* server = nullptr;
  http_gateway_config cfg;
  http_port port;
  std::unique_ptr<gateway_core<http_route>> core;
  intake_actor intake;
  health_status health = health_status::starting;
  bool model_loaded = false;
  int64_t loaded_at = 0;  // unix seconds: the models' `created`
  model_info model;
  openai_limits limits;
  std::unordered_map<uint64_t, http_response> responses;  // by response id
  uint64_t next_response = 1;
  std::shared_ptr<auth::refusal_log> refusals;
  static inline const char* name = "cortex.http_gateway";
};

std::string conn_key(uint64_t conn) { return std::to_string(conn); }

// The admission group of a response's engine requests (unique for the gateway's life).
std::string admission_group_of(uint64_t response) { return "http:" + std::to_string(response); }

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void respond_json(self_ptr self, uint64_t conn, int status, std::string body, http_header_list headers = {}) {
  http_response_out r;
  r.status = status;
  r.body = std::move(body);
  r.headers = std::move(headers);
  self->state.server->respond(conn, std::move(r));
}

void respond_error(self_ptr self, uint64_t conn, const status& e, std::string_view param = {}) {
  // Every 401 names the scheme, also one from intake (a key revoked by a
  // reload between the head's check and the admission).
  auto er = make_openai_error(e, param);
  respond_json(self, conn, er.status, std::move(er.body), er.headers());
}

void submit(self_ptr self, generation_request req) {
  self->send(self->state.intake, submit_atom_v, std::move(req), caf::actor_cast<request_sink_actor>(self));
}

// A response's connection and the engine, as its group sees them.
class connection_io final : public response_io {
 public:
  connection_io(self_ptr self, uint64_t conn) : self_(self), conn_(conn) {}
  void respond(int status, std::string body, header_list headers) override {
    respond_json(self_, conn_, status, std::move(body), std::move(headers));
  }
  void stream_begin() override {
    self_->state.server->stream_begin(conn_, 200, "text/event-stream",
                                      {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}});
  }
  void stream_write(std::string bytes) override { self_->state.server->stream_write(conn_, std::move(bytes)); }
  void stream_end() override { self_->state.server->stream_end(conn_); }
  void submit(generation_request req) override { cortex::submit(self_, std::move(req)); }

 private:
  self_ptr self_;
  uint64_t conn_;
};

// Forgets a response whose bytes are all sent. `cancel_rest`: it ended
// early (an error), so its choices still running are cancelled; their
// events are dropped when they come.
void end_response(self_ptr self, uint64_t id, bool cancel_rest = false) {
  auto& st = self->state;
  auto it = st.responses.find(id);
  if (it == st.responses.end()) return;
  http_response& rs = it->second;
  const std::vector<generation_request> held_back = rs.group.take_held_back();
  if (cancel_rest) {
    for (auto& cid : rs.client_ids) st.core->cancel(conn_key(rs.conn), cid);
  }
  const bool grouped = rs.client_ids.size() > 1;
  st.responses.erase(it);
  // Never submitted: their routes close without events.
  for (const auto& req : held_back) st.core->forget(route_key::of_client_id(req.client_id));
  // Its admission group takes no more members (intake releases it when the running ones end).
  if (grouped && st.intake) self->send(st.intake, group_done_atom_v, admission_group_of(id));
}

// Hands an event of route `r` to its response's group, and ends the response when the group says so.
template <class Event>
void to_response(self_ptr self, const route& r, Event&& event) {
  auto& st = self->state;
  auto it = st.responses.find(r.extra.response);
  if (it == st.responses.end()) return;
  connection_io io(self, it->second.conn);
  const response_end end = event(it->second.group, io);
  if (end != response_end::none) end_response(self, r.extra.response, end == response_end::cut);
}

void http_port::cancel(request_id rid, finish_reason why) {
  if (self->state.intake) self->send(self->state.intake, cancel_atom_v, rid, why);
}

void http_port::send_accepted(route& r, const request_accepted& a) {
  to_response(self, r, [&](openai_response_group& g, response_io& io) { return g.on_accepted(io, r.extra.index, a); });
}

void http_port::send_chunk(route& r, const request_chunk& c) {
  to_response(self, r, [&](openai_response_group& g, response_io& io) { return g.on_chunk(io, r.extra.index, c); });
}

void http_port::send_finished(route& r, const request_finished& f) {
  to_response(self, r, [&](openai_response_group& g, response_io& io) { return g.on_finished(io, r.extra.index, f); });
}

void http_port::send_rejected(route& r, const status& e) {
  to_response(self, r, [&](openai_response_group& g, response_io& io) { return g.on_rejected(io, r.extra.index, e); });
}

void http_port::ended(route& r, const request_finished& f) {
  if (auto& m = self->state.cfg.metrics) m->record_finished(openai_endpoint_label(r.extra.endpoint), f, true, r.extra.key_id);
}

void http_port::ended_rejected(route& r, const status& e) {
  auto& st = self->state;
  if (auto& m = st.cfg.metrics) {
    m->count_rejection(errc_name(e.code), r.extra.key_id);
    m->count_request(openai_endpoint_label(r.extra.endpoint), "rejected", r.extra.key_id);
  }
  if (st.refusals && auth::is_access_refusal(e.code)) st.refusals->refused(r.extra.key_id, r.extra.peer, e);
}

// Opens one core route per engine request and submits them: all of an
// embeddings request's inputs, a chat or completions request's first choice
// (the group holds the others back).
void submit_all(self_ptr self, uint64_t conn, const std::string& peer, openai_response_group group,
                std::vector<generation_request> reqs) {
  auto& st = self->state;
  const uint64_t id = st.next_response++;
  http_response rs{conn, {}, std::move(group)};
  std::vector<generation_request> ready;
  for (uint32_t i = 0; i < reqs.size(); ++i) {
    if (reqs.size() > 1) {  // one client request: one admission (auth.md), whatever its choices or inputs
      reqs[i].admission_group = admission_group_of(id);
      reqs[i].group_size = static_cast<uint32_t>(reqs.size());
    }
    const std::string cid = std::to_string(id) + "/" + std::to_string(i);
    auto key = st.core->open(conn_key(conn), cid, http_route{id, i, rs.group.endpoint(), reqs[i].key_id, peer});
    if (!key) continue;  // cannot happen: ids are unique per response
    rs.client_ids.push_back(cid);
    reqs[i].client_id = key->str();
    ready.push_back(std::move(reqs[i]));
  }
  if (ready.size() > 1 && rs.group.endpoint() != openai_endpoint::embeddings &&
      rs.group.endpoint() != openai_endpoint::rerank) {
    rs.group.hold_back(std::vector<generation_request>(std::make_move_iterator(ready.begin() + 1),
                                                       std::make_move_iterator(ready.end())));
    ready.resize(1);
  }
  st.responses.emplace(id, std::move(rs));
  for (auto& req : ready) submit(self, std::move(req));
}

// The error of a request refused before it exists, in the shape of its endpoint's API.
openai_error_response api_error(openai_endpoint ep, const status& e, std::string_view param) {
  const bool anthropic = ep == openai_endpoint::messages || ep == openai_endpoint::count_tokens;
  return anthropic ? make_anthropic_error(e) : make_openai_error(e, param);
}

// Refuses a request before it is submitted (counted as a rejection).
void refuse_request(self_ptr self, uint64_t conn, openai_endpoint ep, const status& e, std::string_view param = {}) {
  auto& st = self->state;
  if (st.cfg.metrics) {
    st.cfg.metrics->count_rejection(errc_name(e.code));
    if (e.code == errc::malformed) st.cfg.metrics->count_malformed_message("http");
  }
  auto er = api_error(ep, e, param);
  respond_json(self, conn, er.status, std::move(er.body), er.headers());
}

// Why the gateway takes no request now (loading, draining), if so.
std::optional<status> not_serving(const http_state& st) {
  if (st.health == health_status::ready && st.intake) return std::nullopt;
  const bool draining = st.health == health_status::draining;
  return status{draining ? errc::draining : errc::not_ready,
                      draining ? "the server is shutting down; send to another instance" : "the model is still loading; retry shortly",
                      draining ? 1000u : 500u};
}

// /v1/responses, /v1/messages, /v1/messages/count_tokens: the body mapped
// onto a chat request, answered by the API's encoder (one engine request).
void handle_api(self_ptr self, const http_inbound& in, openai_endpoint ep) {
  auto& st = self->state;
  if (auto e = not_serving(st)) return refuse_request(self, in.conn, ep, *e);
  const std::string stamp = std::to_string(st.next_response) + "-" + std::to_string(unix_now());
  std::unique_ptr<api_encoder> encoder;
  generation_request req;
  if (ep == openai_endpoint::responses) {
    auto parsed = parse_responses_request(in.body, st.limits);
    if (!parsed.ok()) return refuse_request(self, in.conn, ep, parsed.error.report, parsed.error.param);
    encoder = std::make_unique<responses_encoder>(parsed.request, "resp_" + stamp, unix_now());
    req = std::move(parsed.request.chat.request);
  } else {
    auto parsed = parse_anthropic_request(in.body, st.limits, ep == openai_endpoint::count_tokens);
    if (!parsed.ok()) return refuse_request(self, in.conn, ep, parsed.error.report, parsed.error.param);
    encoder = std::make_unique<anthropic_encoder>(parsed.request.stream, "msg_" + stamp, parsed.request.model);
    req = std::move(parsed.request.request);
  }
  req.key_id = in.key_id;
  std::vector<generation_request> reqs;
  reqs.push_back(std::move(req));
  submit_all(self, in.conn, in.peer, openai_response_group::api(ep, std::move(encoder)), std::move(reqs));
}

void handle_openai(self_ptr self, const http_inbound& in, openai_endpoint ep) {
  auto& st = self->state;
  auto refuse = [&](const status& e, std::string_view param = {}) { refuse_request(self, in.conn, ep, e, param); };
  if (auto e = not_serving(st)) return refuse(*e);
  auto parsed = parse_openai_request(ep, in.body, st.limits);
  if (!parsed.ok()) return refuse(parsed.error.report, parsed.error.param);
  if (!parsed.request.user.empty()) spdlog::debug("http: request from user '{}'", parsed.request.user);  // http.md: logged only
  auto& req = parsed.request;
  for (auto& g : req.inputs) g.key_id = in.key_id;
  req.request.key_id = in.key_id;
  if (ep == openai_endpoint::embeddings || ep == openai_endpoint::rerank) {
    auto group = ep == openai_endpoint::rerank ? openai_response_group::rerank(req.model, req.inputs.size(), req.top_n)
                                               : openai_response_group::embeddings(req.model, req.inputs.size(), req.base64);
    return submit_all(self, in.conn, in.peer, std::move(group), std::move(req.inputs));
  }
  const char* prefix = ep == openai_endpoint::chat_completions ? "chatcmpl-" : "cmpl-";
  auto ctx = make_response_context(req, prefix + std::to_string(st.next_response) + "-" + std::to_string(unix_now()),
                                   unix_now(), st.cfg.hooks->token_text);
  submit_all(self, in.conn, in.peer, openai_response_group::choices(ctx, req.stream), choice_requests(req));
}

void handle_metrics(self_ptr self, uint64_t conn) {
  auto& st = self->state;
  auto reg = st.cfg.metrics;
  if (!reg) return respond_error(self, conn, {errc::unsupported, "metrics are not enabled", 0});
  auto send_text = [self, conn, reg](const engine_stats* e) {
    auto& st = self->state;
    reg->set_model_loaded(st.model_loaded);
    reg->set_connections("http", static_cast<double>(st.server->n_connections()));
    if (st.cfg.before_scrape) st.cfg.before_scrape(*reg);
    if (e) {
      reg->set_requests_running(e->running);
      reg->set_requests_waiting(e->waiting);
      reg->set_kv_blocks_used(e->kv_blocks_used);
      reg->set_kv_blocks_total(e->kv_blocks_total);
      reg->set_kv_bytes_per_token(e->kv_bytes_per_token);
      reg->set_kernel_isa(e->kernel_isa);
      reg->set_kv_bytes(static_cast<double>(e->kv_bytes_used), static_cast<double>(e->kv_bytes_full),
                        static_cast<double>(e->kv_bytes_total));
      std::vector<metrics_registry::kv_group_gauges> groups;
      for (size_t g = 0; g < e->kv_group_windows.size(); ++g) {
        metrics_registry::kv_group_gauges gg;
        gg.window = e->kv_group_windows[g];
        if (g < e->kv_group_blocks_used.size()) gg.blocks_used = e->kv_group_blocks_used[g];
        if (g < e->kv_group_blocks_released.size()) gg.blocks_released = e->kv_group_blocks_released[g];
        groups.push_back(gg);
      }
      reg->set_kv_groups(groups);
    }
    http_response_out r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = reg->render();
    st.server->respond(conn, std::move(r));
  };
  if (!st.intake) return send_text(nullptr);
  self->request(st.intake, std::chrono::seconds(10), stats_atom_v)
      .then([send_text](engine_stats& e) { send_text(&e); }, [send_text](caf::error&) { send_text(nullptr); });
}

void handle_inbound(self_ptr self, http_inbound& in) {
  auto& st = self->state;
  const auto route = classify_http_route(in.method, in.target);
  switch (route.kind) {
    case http_route_kind::health_live: return respond_json(self, in.conn, 200, R"({"status":"live"})");
    case http_route_kind::health_ready:
      return st.health == health_status::ready
                 ? respond_json(self, in.conn, 200, R"({"status":"ready"})")
                 : respond_json(self, in.conn, 503, st.health == health_status::draining ? R"({"status":"draining"})" : R"({"status":"starting"})",
                                {{"Retry-After", "1"}});
    case http_route_kind::health_startup:
      return st.model_loaded ? respond_json(self, in.conn, 200, R"({"status":"started"})")
                             : respond_json(self, in.conn, 503, R"({"status":"starting"})", {{"Retry-After", "1"}});
    case http_route_kind::metrics: return handle_metrics(self, in.conn);
    case http_route_kind::models: {
      std::vector<std::string> names;
      if (st.model_loaded) names.push_back(st.model.name);
      return respond_json(self, in.conn, 200, openai_model_list_body(names, st.loaded_at));
    }
    case http_route_kind::model: {
      if (!st.model_loaded || route.model_id != st.model.name) {
        const auto e = openai_model_not_found(route.model_id);
        return respond_error(self, in.conn, e.report, e.param);
      }
      return respond_json(self, in.conn, 200, openai_model_body(st.model.name, st.loaded_at));
    }
    case http_route_kind::chat_completions: return handle_openai(self, in, openai_endpoint::chat_completions);
    case http_route_kind::completions: return handle_openai(self, in, openai_endpoint::completions);
    case http_route_kind::embeddings: return handle_openai(self, in, openai_endpoint::embeddings);
    case http_route_kind::rerank: return handle_openai(self, in, openai_endpoint::rerank);
    case http_route_kind::responses: return handle_api(self, in, openai_endpoint::responses);
    case http_route_kind::messages: return handle_api(self, in, openai_endpoint::messages);
    case http_route_kind::messages_count_tokens: return handle_api(self, in, openai_endpoint::count_tokens);
    case http_route_kind::wrong_method:
      return respond_error(self, in.conn, {errc::invalid_param, "method " + in.method + " is not allowed on " + in.target, 0});
    case http_route_kind::unknown:
      return respond_json(self, in.conn, 404,
                          openai_error_body({errc::unknown_type, "no such endpoint: " + in.method + " " + in.target +
                                                                     " (see /v1/models, /v1/chat/completions, /v1/completions, /v1/embeddings, /v1/rerank, /v1/responses, /v1/messages, /health/*, /metrics)", 0}));
  }
}

http_gateway_actor::behavior_type http_gateway_fn(self_ptr self, http_server* server, http_gateway_config cfg,
                                                  std::shared_ptr<auth::refusal_log> refusals) {
  auto& st = self->state;
  st.refusals = std::move(refusals);
  st.server = server;
  st.cfg = std::move(cfg);
  st.port.self = self;
  st.core = std::make_unique<gateway_core<http_route>>(st.port, st.cfg.core);
  return {
      [self](http_inbound& in) { handle_inbound(self, in); },
      [self](peer_gone_atom, uint64_t conn) {
        auto& st = self->state;
        if (auto n = st.core->conn_gone(conn_key(conn))) spdlog::info("http: a client closed its connection with {} active requests; they are cancelled", n);
        std::vector<uint64_t> gone;
        for (auto& [id, rs] : st.responses) {
          if (rs.conn == conn) gone.push_back(id);
        }
        for (auto id : gone) end_response(self, id);
      },
      [self](blocked_atom, uint64_t conn, bool blocked) { self->state.core->set_blocked(conn_key(conn), blocked); },
      [self](request_accepted& a) { self->state.core->on_accepted(a); },
      [self](request_chunk& c) { self->state.core->on_chunk(c); },
      [self](request_finished& f) { self->state.core->on_finished(f); },
      [self](request_rejected& rj) { self->state.core->on_rejected(rj); },
      [self](ready_atom, intake_actor intake, model_info& m) {
        auto& st = self->state;
        st.intake = std::move(intake);
        st.model = m;
        st.model_loaded = true;
        st.loaded_at = unix_now();
        st.limits.model_name = m.name;
        st.limits.n_embd = st.cfg.hooks->n_embd;
        st.health = health_status::ready;
      },
      [self](drain_atom) { self->state.health = health_status::draining; },
      [self](ready_atom, bool ready) {  // a router's workers: none up (false), some again (true)
        auto& st = self->state;
        if (st.health != health_status::draining && st.intake)
          st.health = ready ? health_status::ready : health_status::starting;
      },
      [self](active_atom) -> uint64_t { return self->state.core->n_active(); },
  };
}

// The head check (on the server's I/O thread; the policy, the metrics and
// the log are thread-safe): /v1 needs a known key, /health/* never, and
// /metrics only with auth_metrics.
std::function<std::optional<status>(const http_head&, std::string&)> head_check(const http_gateway_config& cfg,
                                                                                      std::shared_ptr<auth::refusal_log> log) {
  if (!cfg.access) return {};
  return [access = cfg.access, metrics = cfg.metrics, auth_metrics = cfg.auth_metrics, log](
             const http_head& h, std::string& key_id) -> std::optional<status> {
    const auto kind = classify_http_route(h.method, h.target).kind;
    const bool open = kind == http_route_kind::health_live || kind == http_route_kind::health_ready ||
                      kind == http_route_kind::health_startup || (kind == http_route_kind::metrics && !auth_metrics) ||
                      kind == http_route_kind::unknown;
    if (open) return std::nullopt;
    // Anthropic's clients send the key as `x-api-key`: the same key, read as a bearer token.
    auto c = auth::check_bearer(*access, h.authorization.empty() && !h.api_key.empty() ? "Bearer " + h.api_key : h.authorization);
    if (c.ok()) {
      key_id = std::move(c.key_id);
      return std::nullopt;
    }
    if (metrics) metrics->count_rejection(errc_name(c.error.code), "unknown");
    log->refused({}, h.peer, c.error);
    return c.error;
  };
}


}  // namespace

http_gateway_actor spawn_http_gateway(caf::actor_system& sys, http_server& server, http_gateway_config cfg) {
  auto refusals = std::make_shared<auth::refusal_log>("http");
  auto check = head_check(cfg, refusals);
  auto gw = sys.spawn(http_gateway_fn, &server, std::move(cfg), refusals);
  server.start({[gw](http_inbound&& in) { caf::anon_send(gw, std::move(in)); },
                [gw](uint64_t conn) { caf::anon_send(gw, peer_gone_atom_v, conn); },
                [gw](uint64_t conn, bool blocked) { caf::anon_send(gw, blocked_atom_v, conn, blocked); }, std::move(check)});
  return gw;
}

}  // namespace cortex
