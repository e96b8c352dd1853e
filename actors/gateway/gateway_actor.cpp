#include "actors/gateway/gateway_actor.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/gateway/latency_stats.hpp"
#include "messages/wire/client_decode.hpp"
#include "messages/wire/server_encode.hpp"

namespace cortex {

namespace {

using clock_type = std::chrono::steady_clock;

// One request from one connection, from submit to its terminal message.
struct route {
  std::string peer;
  std::string client_id;
  bool delimiter = false;
  uint64_t rid = 0;                 // 0 until accepted
  uint64_t seq = 0;                 // next seq on the wire
  wire::output_fields want;
  std::vector<std::string> ignored;
  bool cancel_pending = false;      // cancelled before `accepted` arrived
  finish_reason cancel_reason = finish_reason::cancelled;
  bool peer_gone = false;           // nothing more is sent
  std::optional<request_chunk> merged;  // chunks held while the peer is blocked
  clock_type::time_point last_token{};
};

struct gateway_state {
  zmq_server* server = nullptr;
  gateway_config cfg;
  intake_actor intake;
  wire::health_status health = wire::health_status::starting;
  std::vector<wire::model_info> models;
  wire::decode_limits limits;
  std::unordered_map<std::string, route> routes;            // by internal key
  std::map<std::pair<std::string, std::string>, std::string> active;  // (peer, client id) -> key
  std::unordered_set<std::string> blocked_peers;
  uint64_t next_key = 1;
  uint64_t malformed = 0;
  latency_stats ttft, itl;
  clock_type::time_point started = clock_type::now();
  static inline const char* name = "cortex.gateway";
};

using self_ptr = caf::stateful_actor<gateway_state>*;

void post(self_ptr self, const std::string& peer, bool delimiter, const wire::wire_bytes& bytes) {
  self->state.server->post(peer, std::string(bytes.begin(), bytes.end()), delimiter);
}

void post_route(self_ptr self, route& r, const wire::wire_bytes& bytes) {
  if (!r.peer_gone) post(self, r.peer, r.delimiter, bytes);
}

void end_route(self_ptr self, const std::string& key) {
  auto& st = self->state;
  auto it = st.routes.find(key);
  if (it == st.routes.end()) return;
  st.active.erase({it->second.peer, it->second.client_id});
  st.routes.erase(it);
}

void cancel_route(self_ptr self, route& r, finish_reason reason) {
  if (r.rid == 0) {
    r.cancel_pending = true;
    r.cancel_reason = reason;
    return;
  }
  if (self->state.intake) self->send(self->state.intake, cancel_atom_v, r.rid, reason);
}

void flush_merged(self_ptr self, route& r) {
  if (!r.merged) return;
  post_route(self, r, wire::encode_chunk(*r.merged, r.seq++, r.want));
  r.merged.reset();
}

void reply_error(self_ptr self, const gateway_inbound& in, const std::string& id, const error_report& err) {
  post(self, in.peer, in.delimiter, wire::encode_error(id, 0, err));
}

wire::server_stats make_server_stats(self_ptr self, engine_stats engine) {
  auto& st = self->state;
  wire::server_stats s;
  s.engine = std::move(engine);
  s.malformed_messages = st.malformed;
  s.ttft_ms = {st.ttft.percentile(50), st.ttft.percentile(90), st.ttft.percentile(99)};
  s.itl_ms = {st.itl.percentile(50), st.itl.percentile(90), st.itl.percentile(99)};
  s.uptime_s = std::chrono::duration<double>(clock_type::now() - st.started).count();
  return s;
}

void handle_submit(self_ptr self, gateway_inbound& in, wire::decode_result& d) {
  auto& st = self->state;
  if (st.health != wire::health_status::ready || !st.intake) {
    const bool draining = st.health == wire::health_status::draining;
    error_report err{draining ? errc::draining : errc::not_ready,
                     draining ? "the server is shutting down; submit to another instance"
                              : "the model is still loading; retry shortly",
                     draining ? 1000u : 500u};
    reply_error(self, in, d.id, err);
    return;
  }
  const auto slot = std::make_pair(in.peer, d.id);
  if (st.active.count(slot)) {
    reply_error(self, in, d.id,
                {errc::duplicate_id, "id '" + d.id + "' is still active on this connection; use a new id or wait for its finished", 0});
    return;
  }
  const std::string key = "g" + std::to_string(st.next_key++);
  route r;
  r.peer = in.peer;
  r.client_id = d.id;
  r.delimiter = in.delimiter;
  r.want = wire::output_fields_of(d.request);
  r.ignored = std::move(d.ignored);
  st.routes.emplace(key, std::move(r));
  st.active.emplace(slot, key);
  d.request.client_id = key;
  self->send(st.intake, submit_atom_v, std::move(d.request), caf::actor_cast<request_sink_actor>(self));
}

void handle_inbound(self_ptr self, gateway_inbound& in) {
  auto& st = self->state;
  auto d = wire::decode_client_message(reinterpret_cast<const uint8_t*>(in.payload.data()), in.payload.size(), st.limits);
  if (!d.ok()) {
    st.malformed++;
    spdlog::debug("gateway: rejected message ({} {}): {}", errc_code(d.error.code), errc_name(d.error.code), d.error.message);
    reply_error(self, in, d.id, d.error);
    return;
  }
  using wire::client_message_type;
  switch (d.type) {
    case client_message_type::submit: handle_submit(self, in, d); break;
    case client_message_type::cancel:
      for (auto& id : d.cancel_ids) {
        auto it = st.active.find({in.peer, id});
        if (it == st.active.end()) continue;  // unknown ids are ignored
        cancel_route(self, st.routes.at(it->second), finish_reason::cancelled);
      }
      break;
    case client_message_type::ping: {
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch());
      post(self, in.peer, in.delimiter, wire::encode_pong(d.id, 0, d.nonce, static_cast<uint64_t>(ms.count())));
      break;
    }
    case client_message_type::health:
      post(self, in.peer, in.delimiter, wire::encode_health(d.id, 0, st.health, !st.models.empty()));
      break;
    case client_message_type::models:
      post(self, in.peer, in.delimiter, wire::encode_models(d.id, 0, st.models));
      break;
    case client_message_type::stats: {
      if (!st.intake) {
        post(self, in.peer, in.delimiter, wire::encode_stats(d.id, 0, make_server_stats(self, engine_stats{})));
        break;
      }
      auto peer = in.peer;
      auto delim = in.delimiter;
      auto id = d.id;
      self->request(st.intake, std::chrono::seconds(10), stats_atom_v)
          .then([self, peer, delim, id](engine_stats& e) {
                  post(self, peer, delim, wire::encode_stats(id, 0, make_server_stats(self, std::move(e))));
                },
                [self, peer, delim, id](caf::error&) {
                  post(self, peer, delim, wire::encode_error(id, 0, {errc::internal, "the engine did not answer stats", 0}));
                });
      break;
    }
    case client_message_type::none: break;
  }
}

}  // namespace

caf::actor spawn_gateway(caf::actor_system& sys, zmq_server& server, const gateway_config& cfg) {
  auto gw = sys.spawn([&server, cfg](caf::stateful_actor<gateway_state>* self) -> caf::behavior {
    auto& st = self->state;
    st.server = &server;
    st.cfg = cfg;
    return {
        [self](gateway_inbound& in) { handle_inbound(self, in); },
        [self](peer_gone_atom, const std::string& peer) {
          auto& st = self->state;
          int n = 0;
          for (auto& [key, r] : st.routes) {
            if (r.peer != peer || r.peer_gone) continue;
            r.peer_gone = true;
            r.merged.reset();
            cancel_route(self, r, finish_reason::client_gone);
            ++n;
          }
          st.blocked_peers.erase(peer);
          if (n) spdlog::info("gateway: a client left with {} active requests; they are cancelled", n);
        },
        [self](blocked_atom, const std::string& peer, bool blocked) {
          auto& st = self->state;
          if (blocked) {
            st.blocked_peers.insert(peer);
            return;
          }
          st.blocked_peers.erase(peer);
          for (auto& [key, r] : st.routes) {
            if (r.peer == peer) flush_merged(self, r);
          }
        },
        [self](request_accepted& a) {
          auto& st = self->state;
          auto it = st.routes.find(a.client_id);
          if (it == st.routes.end()) return;
          auto& r = it->second;
          r.rid = a.rid;
          a.client_id = r.client_id;
          post_route(self, r, wire::encode_accepted(a, r.seq++, r.ignored));
          if (r.cancel_pending) cancel_route(self, r, r.cancel_reason);
        },
        [self](request_chunk& c) {
          auto& st = self->state;
          auto it = st.routes.find(c.client_id);
          if (it == st.routes.end()) return;
          auto& r = it->second;
          const auto now = clock_type::now();
          if (!c.token_ids.empty() || !c.text.empty()) {
            if (r.last_token != clock_type::time_point{}) {
              st.itl.add(std::chrono::duration<double, std::milli>(now - r.last_token).count());
            }
            r.last_token = now;
          }
          if (r.peer_gone) return;
          c.client_id = r.client_id;
          if (!st.blocked_peers.count(r.peer)) {
            flush_merged(self, r);
            post_route(self, r, wire::encode_chunk(c, r.seq++, r.want));
            return;
          }
          // A slow reader: merge, never block generation; past the bound, the request ends.
          if (!r.merged) {
            r.merged = std::move(c);
          } else {
            r.merged->text += c.text;
            r.merged->token_ids.insert(r.merged->token_ids.end(), c.token_ids.begin(), c.token_ids.end());
            r.merged->logprobs.insert(r.merged->logprobs.end(), c.logprobs.begin(), c.logprobs.end());
          }
          if (r.merged->text.size() + r.merged->token_ids.size() * 4 > st.cfg.max_pending_bytes) {
            spdlog::warn("[rid {}] gateway: the client reads too slowly; ending the request", r.rid);
            cancel_route(self, r, finish_reason::client_gone);
          }
        },
        [self](request_finished& f) {
          auto& st = self->state;
          auto it = st.routes.find(f.client_id);
          if (it == st.routes.end()) return;
          auto& r = it->second;
          if (f.timings.ttft_ms > 0) st.ttft.add(f.timings.ttft_ms);
          f.client_id = r.client_id;
          flush_merged(self, r);
          post_route(self, r, wire::encode_finished(f, r.seq++, r.want));
          end_route(self, it->first);
        },
        [self](request_rejected& rj) {
          auto& st = self->state;
          auto it = st.routes.find(rj.client_id);
          if (it == st.routes.end()) return;
          post_route(self, it->second, wire::encode_error(it->second.client_id, 0, rj.error));
          end_route(self, it->first);
        },
        [self](ready_atom, intake_actor intake, model_info& m) {
          auto& st = self->state;
          st.intake = std::move(intake);
          st.models = {m};
          st.limits.model_names = {m.name};  // a `model` key must name it (else 404)
          st.health = wire::health_status::ready;
        },
        [self](drain_atom) { self->state.health = wire::health_status::draining; },
        [self](active_atom) -> uint64_t { return self->state.routes.size(); },
    };
  });
  server.start({[gw](inbound_frame&& f) {
                  caf::anon_send(gw, gateway_inbound{std::move(f.peer), std::move(f.payload), f.delimiter, f.extra_frames});
                },
                [gw](const std::string& peer) { caf::anon_send(gw, peer_gone_atom_v, peer); },
                [gw](const std::string& peer, bool blocked) { caf::anon_send(gw, blocked_atom_v, peer, blocked); }});
  return gw;
}

}  // namespace cortex
