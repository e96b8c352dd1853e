#include "actors/cluster/cluster_intake_actor.hpp"

#include <map>
#include <set>

#include <caf/actor_system.hpp>
#include <caf/system_messages.hpp>
#include <caf/node_id.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <spdlog/spdlog.h>

#include "actors/cluster/cluster_stats.hpp"
#include "actors/cluster/routed_requests.hpp"

namespace cortex {

namespace {

struct worker_slot {
  std::string name;  // "host:port"
  std::string host;
  uint16_t port = 0;
  bool listed = true;       // in the current worker list (else: no reconnect, no new requests)
  bool connecting = false;
  bool warned = false;      // a failed connect was logged (once until it joins)
  bool draining = false;    // it refused a submit with `draining`: no new requests until it rejoins
  worker_actor handle;      // valid while up
  intake_actor intake;
  engine_stats stats;
  uint64_t routed = 0;
  bool up() const { return static_cast<bool>(handle); }
};

struct cluster_state {
  cluster_intake_config cfg;
  std::unique_ptr<cluster::routing_policy> policy;
  std::map<std::string, worker_slot> workers;
  cluster::routed_requests<request_sink_actor> book;
  bool draining = false;
  bool announced = false;  // on_first_worker was called
  uint64_t affinity_followed = 0, affinity_overridden = 0;
  static inline const char* name = "cortex.cluster_intake";
};

using self_ptr = cluster_intake_actor::stateful_pointer<cluster_state>;
using entry = cluster::routed_requests<request_sink_actor>::entry;

request_sink_actor as_sink(self_ptr self) { return caf::actor_cast<request_sink_actor>(self); }

bool split_host_port(const std::string& s, std::string& host, uint16_t& port) {
  const auto colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  host = s.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  char* end = nullptr;
  const long p = std::strtol(s.c_str() + colon + 1, &end, 10);
  if (colon + 1 == s.size() || *end || p <= 0 || p > 65535) return false;
  port = static_cast<uint16_t>(p);
  return true;
}

void set_workers(self_ptr self, const std::vector<std::string>& names) {
  auto& st = self->state;
  std::set<std::string> wanted;
  for (const auto& n : names) {
    worker_slot w;
    if (!split_host_port(n, w.host, w.port)) {
      spdlog::error("cluster: ignoring worker '{}': expected HOST:PORT", n);
      continue;
    }
    wanted.insert(n);
    auto it = st.workers.find(n);
    if (it == st.workers.end()) {
      w.name = n;
      st.workers.emplace(n, std::move(w));
      spdlog::info("cluster: worker {} listed", n);
    } else {
      it->second.listed = true;
    }
  }
  for (auto& [name, w] : st.workers) {
    if (!wanted.count(name) && w.listed) {
      w.listed = false;
      spdlog::info("cluster: worker {} unlisted: no new requests go to it", name);
    }
  }
}

// Ends a request the router accepted (or only received) with `err`: a
// rejection when the sink has not seen `accepted`, else a finished with
// reason error. Exactly one terminal per request: the entry is closed.
void end_with_error(self_ptr self, entry& e, status err) {
  auto& st = self->state;
  if (!e.accepted_sent) {
    self->send(e.sink, request_rejected{e.client_id, std::move(err)});
  } else {
    request_finished f;
    f.rid = e.rid.gateway_rid();
    f.client_id = e.client_id;
    f.reason = finish_reason::error;
    f.error = std::move(err);
    f.tags = e.tags;
    self->send(e.sink, std::move(f));
  }
  st.book.close(e.rid);
}

// Sends `e` to a worker chosen by the policy; ends it when none is up.
void route(self_ptr self, entry& e, bool resubmission) {
  auto& st = self->state;
  std::vector<worker_slot*> live;
  std::vector<cluster::node_load> loads;
  for (auto& [name, w] : st.workers) {
    if (!w.up() || !w.listed || w.draining) continue;
    live.push_back(&w);
    // The waiting queue as last reported (a burst between two polls follows
    // affinity; the bound applies from the next poll), and the router's own
    // exact count of requests on it.
    loads.push_back({cluster::node_id_hash(name), w.stats.waiting, st.book.in_flight(name)});
  }
  const auto key = prefix_key_of(e.request, st.cfg);
  const auto pick = st.policy->pick(key, loads);
  if (!pick) {
    end_with_error(self, e,
                   resubmission ? status{errc::worker_lost, "the worker chosen for this request is gone or shutting down and no other worker is up; retry", 1000}
                                : status{errc::not_ready, "no worker is up behind this router; retry shortly", 1000});
    return;
  }
  if (key && st.cfg.routing == cluster::routing_mode::affinity)
    ++(st.policy->last_pick_followed_affinity() ? st.affinity_followed : st.affinity_overridden);
  worker_slot& w = *live[*pick];
  ++w.routed;
  generation_request copy = e.request;
  copy.client_id = st.book.assign(e, w.name).str();
  spdlog::debug("cluster: [rid {}] '{}' -> {}{}", e.rid.value(), e.client_id, w.name, resubmission ? " (resubmitted)" : "");
  self->send(w.intake, submit_atom_v, std::move(copy), as_sink(self));
}

size_t n_up(const cluster_state& st) {
  size_t n = 0;
  for (const auto& [name, w] : st.workers) n += w.up();
  return n;
}

void worker_down(self_ptr self, worker_slot& w, const caf::error& reason) {
  auto& st = self->state;
  spdlog::warn("cluster: worker {} is down ({}); its requests move or end", w.name, caf::to_string(reason));
  w.handle = nullptr;
  w.intake = nullptr;
  w.stats = engine_stats{};
  w.warned = false;
  size_t moved = 0, lost = 0;
  for (const auto& l : st.book.worker_lost(w.name)) {
    entry* e = st.book.find(l.rid);
    if (!e) continue;
    if (l.resubmit) {
      ++moved;
      route(self, *e, true);
    } else {
      ++lost;
      end_with_error(self, *e, {errc::worker_lost, "the worker serving this request was lost mid-stream; retry the request", 1000});
    }
  }
  if (moved || lost) spdlog::warn("cluster: {} requests resubmitted, {} ended with worker_lost", moved, lost);
  if (n_up(st) == 0) {
    spdlog::error("cluster: no worker is up; health says starting until one joins");
    if (st.cfg.on_serving) st.cfg.on_serving(false);
  }
}

void joined(self_ptr self, const std::string& name, worker_actor handle, intake_actor intake, const model_info& info) {
  auto& st = self->state;
  auto it = st.workers.find(name);
  if (it == st.workers.end() || !it->second.listed) return;  // unlisted while connecting
  auto& w = it->second;
  const bool was_serving = n_up(st) > 0;
  w.connecting = false;
  w.draining = false;
  w.handle = std::move(handle);
  w.intake = std::move(intake);
  w.warned = false;
  self->monitor(w.handle);
  spdlog::info("cluster: worker {} joined: model '{}' ({}), context {}", name, info.name, info.quant, info.n_ctx);
  if (!st.announced) {
    st.announced = true;
    if (st.cfg.on_first_worker) st.cfg.on_first_worker(caf::actor_cast<intake_actor>(self), info);
  } else if (!was_serving && st.cfg.on_serving) {
    st.cfg.on_serving(true);
  }
}

void connect(self_ptr self, worker_slot& w) {
  w.connecting = true;
  const std::string name = w.name;
  auto failed = [self, name](const caf::error& err) {
    auto it = self->state.workers.find(name);
    if (it == self->state.workers.end()) return;
    it->second.connecting = false;
    if (!it->second.warned) spdlog::warn("cluster: worker {} unreachable ({}); retrying", name, caf::to_string(err));
    it->second.warned = true;
  };
  self->request(self->state.cfg.connector, std::chrono::seconds(5), caf::connect_atom_v, w.host, w.port)
      .then(
          [self, name, failed](const caf::node_id&, caf::strong_actor_ptr& ptr, const std::set<std::string>&) {
            auto handle = caf::actor_cast<worker_actor>(ptr);
            if (!handle) return failed(caf::make_error(caf::sec::invalid_argument, "no actor published at that port"));
            self->request(handle, std::chrono::seconds(5), hello_atom_v)
                .then([self, name, handle](intake_actor& intake, model_info& info) { joined(self, name, handle, std::move(intake), info); },
                      failed);
          },
          failed);
}

void tick(self_ptr self) {
  auto& st = self->state;
  std::vector<cluster_worker_view> views;
  for (auto& [name, w] : st.workers) {
    if (w.listed && !w.up() && !w.connecting) connect(self, w);
    if (w.up()) {
      self->request(w.handle, std::chrono::seconds(2), stats_atom_v)
          .then(
              [self, name = name](engine_stats& s) {
                auto it = self->state.workers.find(name);
                if (it == self->state.workers.end() || !it->second.up()) return;
                it->second.stats = std::move(s);
              },
              [](const caf::error&) {});
    }
    if (w.listed || w.up()) views.push_back({name, w.up(), w.stats, st.book.in_flight(name), w.routed});
  }
  if (st.cfg.on_workers) st.cfg.on_workers(views, st.affinity_followed, st.affinity_overridden);
  self->delayed_send(self, st.cfg.tick, tick_atom_v);
}

worker_slot* slot_of(self_ptr self, const std::string& name) {
  auto it = self->state.workers.find(name);
  return it == self->state.workers.end() || !it->second.up() ? nullptr : &it->second;
}

void on_submit(self_ptr self, generation_request& req, request_sink_actor& sink) {
  auto& st = self->state;
  if (st.draining) {
    self->send(sink, request_rejected{req.client_id, {errc::draining, "the router is shutting down; submit to another instance", 1000}});
    return;
  }
  route(self, st.book.open(std::move(req), std::move(sink)), false);
}

// Cancels a routed request here and on its worker.
void cancel_routed(self_ptr self, cluster::routed_request_id rid, finish_reason why) {
  if (auto at = self->state.book.cancel(rid, why)) {
    if (auto* w = slot_of(self, at->first)) self->send(w->intake, cancel_atom_v, at->second, why);
  }
}

void on_shutdown(self_ptr self) {
  auto& st = self->state;
  st.draining = true;
  std::vector<cluster::routed_request_id> rids;
  st.book.for_each([&](entry& e) { rids.push_back(e.rid); });
  for (auto rid : rids) cancel_routed(self, rid, finish_reason::shutdown);
}

engine_stats summed_stats(self_ptr self) {
  std::vector<engine_stats> all;
  for (auto& [name, w] : self->state.workers)
    if (w.up()) all.push_back(w.stats);
  return cluster::sum_engine_stats(all);
}

// The routed request a worker's event is about (its client id is the
// router's route key), or null when it has ended here already.
template <class Event>
entry* entry_of(self_ptr self, const Event& ev) {
  return self->state.book.find_key(route_key::of_client_id(ev.client_id));
}

// A worker's event, renamed to the id and client id the gateway knows.
template <class Event>
void forward(self_ptr self, const entry& e, Event&& ev) {
  ev.rid = e.rid.gateway_rid();
  ev.client_id = e.client_id;
  self->send(e.sink, std::forward<Event>(ev));
}

void on_accepted(self_ptr self, request_accepted& a) {
  auto& st = self->state;
  entry* e = entry_of(self, a);
  if (!e) return;
  if (auto why = st.book.accepted(*e, a.rid)) {
    if (auto* w = slot_of(self, e->worker)) self->send(w->intake, cancel_atom_v, a.rid, *why);
  }
  if (e->accepted_sent) return;  // a resubmission: the client saw the first attempt's
  e->accepted_sent = true;
  forward(self, *e, std::move(a));
}

void on_chunk(self_ptr self, request_chunk& c) {
  entry* e = entry_of(self, c);
  if (!e) return;
  self->state.book.produced(*e);
  forward(self, *e, std::move(c));
}

void on_finished(self_ptr self, request_finished& f) {
  entry* e = entry_of(self, f);
  if (!e) return;
  forward(self, *e, std::move(f));
  self->state.book.close(e->rid);
}

void on_rejected(self_ptr self, request_rejected& r) {
  auto& st = self->state;
  entry* e = entry_of(self, r);
  if (!e) return;
  // A worker shutting down refuses new work: send it to another one
  // (its client saw nothing yet) and that worker nothing more until it rejoins.
  if (r.error.code == errc::draining && !e->produced) {
    if (auto it = st.workers.find(e->worker); it != st.workers.end() && !it->second.draining) {
      it->second.draining = true;
      spdlog::info("cluster: worker {} is draining: no new requests go to it", e->worker);
    }
    st.book.detach(*e);
    return route(self, *e, true);
  }
  end_with_error(self, *e, std::move(r.error));
}

cluster_intake_actor::behavior_type cluster_fn(self_ptr self, cluster_intake_config cfg) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.policy = std::make_unique<cluster::routing_policy>(st.cfg.routing, st.cfg.balance_threshold);
  set_workers(self, st.cfg.workers);
  self->set_down_handler([self](caf::down_msg& dm) {
    for (auto& [name, w] : self->state.workers) {
      if (w.up() && w.handle.address() == dm.source) return worker_down(self, w, dm.reason);
    }
  });
  self->send(self, tick_atom_v);
  return {
      [self](submit_atom, generation_request& req, request_sink_actor sink) { on_submit(self, req, sink); },
      [self](cancel_atom, request_id rid, finish_reason why) {
        cancel_routed(self, cluster::routed_request_id::of_gateway_rid(rid), why);
      },
      [](dequeued_atom, request_id, uint32_t) {},  // sessions live on the workers and tell their own intake
      [self](group_done_atom, const std::string& group) {
        for (auto& [name, w] : self->state.workers)
          if (w.up()) self->send(w.intake, group_done_atom_v, group);
      },
      [self](drain_atom) { self->state.draining = true; },
      [self](shutdown_atom) { on_shutdown(self); },
      [self](stats_atom) { return summed_stats(self); },
      // Events of routed requests, from the workers' sessions.
      [self](request_accepted& a) { on_accepted(self, a); },
      [self](request_chunk& c) { on_chunk(self, c); },
      [self](request_finished& f) { on_finished(self, f); },
      [self](request_rejected& r) { on_rejected(self, r); },
      [self](workers_atom, const std::vector<std::string>& names) { set_workers(self, names); },
      [self](tick_atom) { tick(self); },
  };
}

}  // namespace

std::optional<uint64_t> prefix_key_of(const generation_request& r, const cluster_intake_config& cfg) {
  if (r.use_tokens) return cluster::prefix_key_of_tokens(r.tokens, cfg.block_tokens, cfg.affinity_blocks);
  return cluster::prefix_key_of_bytes(r.messages_json.empty() ? r.prompt : r.messages_json, cfg.block_bytes, cfg.affinity_blocks);
}

cluster_intake_actor spawn_cluster_intake(caf::actor_system& sys, cluster_intake_config cfg) {
  return sys.spawn(cluster_fn, std::move(cfg));
}

}  // namespace cortex
