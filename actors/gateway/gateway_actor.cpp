#include "actors/gateway/gateway_actor.hpp"

#include <chrono>
#include <functional>
#include <memory>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/auth/credentials.hpp"
#include "actors/gateway_core/metrics_registry.hpp"
#include "messages/wire/client_decode.hpp"
#include "messages/wire/server_encode.hpp"

namespace cortex {

namespace {

// What the wire keeps per request besides the core's route.
struct wire_route {
  bool delimiter = false;           // mirror a REQ-style empty frame
  wire::output_fields want;
  std::vector<std::string> ignored;  // unknown submit keys, listed in `accepted`
  std::string key_id;                // the API key (metrics label; "" with access control off)
  std::string peer_address;          // the client's address, for the refusal log
};

using route = gateway_route<wire_route>;

// The core's port: encodes events as protocol v1 frames for the peer.
class wire_port final : public gateway_port<wire_route> {
 public:
  zmq_server* server = nullptr;
  intake_actor intake;
  std::function<void(request_id, finish_reason)> send_cancel;
  std::shared_ptr<metrics_registry> metrics;
  std::shared_ptr<auth::refusal_log> refusals;  // access control on

  void post(const std::string& peer, bool delimiter, const wire::wire_bytes& bytes) {
    server->post(peer, std::string(bytes.begin(), bytes.end()), delimiter);
  }
  void cancel(request_id rid, finish_reason why) override {
    if (intake) send_cancel(rid, why);
  }
  void send_accepted(route& r, const request_accepted& a) override {
    post(r.conn, r.extra.delimiter, wire::encode_accepted(a, r.seq++, r.extra.ignored));
  }
  void send_chunk(route& r, const request_chunk& c) override {
    post(r.conn, r.extra.delimiter, wire::encode_chunk(c, r.seq++, r.extra.want));
  }
  void send_finished(route& r, const request_finished& f) override {
    post(r.conn, r.extra.delimiter, wire::encode_finished(f, r.seq++, r.extra.want));
  }
  void send_rejected(route& r, const status& e) override {
    post(r.conn, r.extra.delimiter, wire::encode_error(r.client_id, 0, e, true));
  }
  // Every request's end, delivered or not (its peer may be gone).
  void ended(route& r, const request_finished& f) override {
    if (metrics) metrics->record_finished("wire", f, true, r.extra.key_id);
  }
  void ended_rejected(route& r, const status& e) override {
    if (refusals && auth::is_access_refusal(e.code)) refusals->refused(r.extra.key_id, r.extra.peer_address, e);
    if (!metrics) return;
    metrics->count_rejection(errc_name(e.code), r.extra.key_id);
    metrics->count_request("wire", "rejected", r.extra.key_id);
  }
};

struct gateway_state {
  wire_port port;
  std::shared_ptr<auth::access_policy> access;
  std::unique_ptr<gateway_core<wire_route>> core;
  health_status health = health_status::starting;
  std::vector<model_info> models;
  wire::decode_limits limits;
  uint64_t malformed = 0;
  gateway_clock::time_point started = gateway_clock::now();
  static inline const char* name = "cortex.gateway";
};

using self_ptr = zmq_gateway_actor::stateful_pointer<gateway_state>;

// `terminal`: the error ends the request `id` (a rejected submit); false
// when it rejects a message naming a live request (which goes on) or one
// that is no request.
void reply_error(self_ptr self, const gateway_inbound& in, const std::string& id, const status& err, bool terminal) {
  self->state.port.post(in.peer, in.delimiter, wire::encode_error(id, 0, err, terminal));
}

// A request (submit, embed, rerank) the gateway itself refuses (not ready, draining, duplicate id, no key).
void refuse_submit(self_ptr self, const gateway_inbound& in, const std::string& id, const status& err,
                   const std::string& key_id = {}) {
  if (auto& m = self->state.port.metrics) m->count_rejection(errc_name(err.code), key_id);
  // A duplicate id names the live request, which goes on: not its terminal.
  reply_error(self, in, id, err, err.code != errc::duplicate_id);
}

// The key a submit belongs to: its connection's CURVE key, else its `auth`
// field. An empty id with the 401 in `err` when neither names a key.
std::string submit_key(self_ptr self, const gateway_inbound& in, const wire::decode_result& d, status& err) {
  auto& st = self->state;
  if (!in.user_id.empty()) return in.user_id;
  auto c = auth::check_auth_field(*st.access, d.auth);
  if (!c.ok()) err = c.error;
  return c.key_id;
}

wire::server_stats make_server_stats(self_ptr self, engine_stats engine) {
  auto& st = self->state;
  wire::server_stats s;
  s.engine = std::move(engine);
  s.malformed_messages = st.malformed;
  const auto& ttft = st.core->ttft_ms();
  const auto& itl = st.core->itl_ms();
  s.ttft_ms = {ttft.percentile(50), ttft.percentile(90), ttft.percentile(99)};
  s.itl_ms = {itl.percentile(50), itl.percentile(90), itl.percentile(99)};
  s.uptime_s = std::chrono::duration<double>(gateway_clock::now() - st.started).count();
  if (st.access) {
    s.access_control = true;
    for (const auto& u : st.access->usage())
      s.keys.push_back({u.id, u.tier, u.revoked, u.running, u.admitted, u.rejected_forbidden, u.rejected_limited,
                        u.rejected_revoked, u.tokens});
  }
  return s;
}

void handle_submit(self_ptr self, gateway_inbound& in, wire::decode_result& d) {
  auto& st = self->state;
  if (st.health != health_status::ready || !st.port.intake) {
    const bool draining = st.health == health_status::draining;
    status err{draining ? errc::draining : errc::not_ready,
                     draining ? "the server is shutting down; submit to another instance"
                              : "the model is still loading; retry shortly",
                     draining ? 1000u : 500u};
    refuse_submit(self, in, d.id, err);
    return;
  }
  std::string key_id;
  if (st.access) {
    status err;
    key_id = submit_key(self, in, d, err);
    if (key_id.empty()) {
      st.port.refusals->refused({}, in.peer_address, err);
      refuse_submit(self, in, d.id, err, "unknown");
      return;
    }
  }
  d.request.key_id = key_id;
  wire_route extra{in.delimiter, wire::output_fields_of(d.request), std::move(d.ignored), key_id, in.peer_address};
  auto key = st.core->open(in.peer, d.id, std::move(extra));
  if (!key) {
    refuse_submit(self, in, d.id,
                {errc::duplicate_id, "id '" + d.id + "' is still active on this connection; use a new id or wait for its finished", 0});
    return;
  }
  d.request.client_id = key->str();
  self->send(st.port.intake, submit_atom_v, std::move(d.request), caf::actor_cast<request_sink_actor>(self));
}

void handle_stats(self_ptr self, const gateway_inbound& in, const std::string& id) {
  auto& st = self->state;
  if (!st.port.intake) {
    st.port.post(in.peer, in.delimiter, wire::encode_stats(id, 0, make_server_stats(self, engine_stats{})));
    return;
  }
  auto peer = in.peer;
  auto delim = in.delimiter;
  self->request(st.port.intake, std::chrono::seconds(10), stats_atom_v)
      .then([self, peer, delim, id](engine_stats& e) {
              self->state.port.post(peer, delim, wire::encode_stats(id, 0, make_server_stats(self, std::move(e))));
            },
            [self, peer, delim, id](caf::error&) {
              self->state.port.post(peer, delim, wire::encode_error(id, 0, {errc::internal, "the engine did not answer stats", 0}, false));
            });
}

void handle_inbound(self_ptr self, gateway_inbound& in) {
  auto& st = self->state;
  auto d = wire::decode_client_message(reinterpret_cast<const uint8_t*>(in.payload.data()), in.payload.size(), st.limits);
  if (in.extra_frames && d.ok()) {  // protocol.md: decoded only to address the error; nothing in it is processed
    d.error = {errc::malformed,
               "a message is one frame (a msgpack map), optionally after one empty delimiter frame; this one had more "
               "frames, so nothing in it was processed",
               0};
  }
  if (!d.ok()) {
    st.malformed++;
    if (auto& m = st.port.metrics) {
      m->count_malformed_message("zmq");
      m->count_rejection(errc_name(d.error.code));
    }
    spdlog::debug("gateway: rejected message ({} {}): {}", errc_code(d.error.code), errc_name(d.error.code), d.error.message);
    // A rejected submit ends its request, unless its id names a live one (which goes on).
    const bool terminal = wire::starts_request(d.type) && (d.id.empty() || st.core->find(in.peer, d.id) == nullptr);
    reply_error(self, in, d.id, d.error, terminal);
    return;
  }
  using wire::client_message_type;
  switch (d.type) {
    case client_message_type::submit:
    case client_message_type::embed:
    case client_message_type::rerank: handle_submit(self, in, d); break;
    case client_message_type::cancel:
      for (auto& id : d.cancel_ids) st.core->cancel(in.peer, id);
      break;
    case client_message_type::ping: {
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch());
      st.port.post(in.peer, in.delimiter, wire::encode_pong(d.id, 0, d.nonce, static_cast<uint64_t>(ms.count())));
      break;
    }
    case client_message_type::health:
      st.port.post(in.peer, in.delimiter, wire::encode_health(d.id, 0, st.health, !st.models.empty()));
      break;
    case client_message_type::models: st.port.post(in.peer, in.delimiter, wire::encode_models(d.id, 0, st.models)); break;
    case client_message_type::stats: handle_stats(self, in, d.id); break;
    case client_message_type::none: break;
  }
}

zmq_gateway_actor::behavior_type gateway_fn(self_ptr self, zmq_server* server, gateway_config cfg) {
  auto& st = self->state;
  st.port.server = server;
  st.port.send_cancel = [self](request_id rid, finish_reason why) { self->send(self->state.port.intake, cancel_atom_v, rid, why); };
  st.core = std::make_unique<gateway_core<wire_route>>(st.port, cfg.core);
  st.port.metrics = cfg.metrics;
  st.access = cfg.access;
  if (st.access) st.port.refusals = cfg.refusals ? cfg.refusals : std::make_shared<auth::refusal_log>("zmq");
  return {
      [self](gateway_inbound& in) { handle_inbound(self, in); },
      [self](peer_gone_atom, const std::string& peer) {
        if (auto n = self->state.core->conn_gone(peer)) {
          spdlog::info("gateway: a client left with {} active requests; they are cancelled", n);
        }
      },
      [self](blocked_atom, const std::string& peer, bool blocked) { self->state.core->set_blocked(peer, blocked); },
      [self](request_accepted& a) { self->state.core->on_accepted(a); },
      [self](request_chunk& c) {
        auto& core = *self->state.core;
        const auto before = core.n_overflowed();
        core.on_chunk(c);
        if (core.n_overflowed() != before) spdlog::warn("gateway: a client reads too slowly; ending its request");
      },
      [self](request_finished& f) { self->state.core->on_finished(f); },
      [self](request_rejected& rj) { self->state.core->on_rejected(rj); },
      [self](ready_atom, intake_actor intake, model_info& m) {
        auto& st = self->state;
        st.port.intake = std::move(intake);
        st.models = {m};
        st.limits.model_names = {m.name};  // a `model` key must name it (else 404)
        st.health = health_status::ready;
      },
      [self](drain_atom) { self->state.health = health_status::draining; },
      [self](ready_atom, bool ready) {  // a router's workers: none up (false), some again (true)
        auto& st = self->state;
        if (st.health != health_status::draining && st.port.intake)
          st.health = ready ? health_status::ready : health_status::starting;
      },
      [self](active_atom) -> uint64_t { return self->state.core->n_active(); },
  };
}

}  // namespace

zmq_gateway_actor spawn_gateway(caf::actor_system& sys, zmq_server& server, const gateway_config& cfg) {
  auto gw = sys.spawn(gateway_fn, &server, cfg);
  server.start({[gw](inbound_frame&& f) {
                  caf::anon_send(gw, gateway_inbound{std::move(f.peer), std::move(f.payload), f.delimiter, f.extra_frames,
                                                     std::move(f.user_id), std::move(f.peer_address)});
                },
                [gw](const std::string& peer) { caf::anon_send(gw, peer_gone_atom_v, peer); },
                [gw](const std::string& peer, bool blocked) { caf::anon_send(gw, blocked_atom_v, peer, blocked); }});
  return gw;
}

}  // namespace cortex
