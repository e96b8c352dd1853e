#include "apps/cortexd/cluster_roles.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/publish.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/openssl/publish.hpp>
#include <caf/send.hpp>
#include <spdlog/spdlog.h>

#include "actors/cluster/cluster_intake_actor.hpp"
#include "actors/cluster/worker_actor.hpp"

namespace cortex {

void load_cluster_modules(caf::actor_system_config& cfg, const daemon_options& o) {
  if (o.role == daemon_options::role_kind::node) return;
  cfg.load<caf::io::middleman>();
  // Heartbeats find a peer that vanished without closing its connection
  // (a cut cable); a killed process closes it and is seen at once.
  cfg.set("middleman.heartbeat-interval", caf::timespan{std::chrono::milliseconds(500)});
  cfg.set("middleman.connection-timeout", caf::timespan{std::chrono::seconds(5)});
  if (o.cluster_tls()) {
    cfg.openssl_certificate = o.cluster_cert;
    cfg.openssl_key = o.cluster_key;
    cfg.openssl_cafile = o.cluster_ca;
    cfg.load<caf::openssl::manager>();
  }
}

expected<worker_actor> publish_worker(caf::actor_system& sys, const daemon_options& o, intake_actor intake,
                                      const model_info& info) {
  auto face = spawn_worker_actor(sys, std::move(intake), info);
  auto port = o.cluster_tls() ? caf::openssl::publish(face, o.cluster_port, o.cluster_bind.c_str(), true)
                              : caf::io::publish(face, o.cluster_port, o.cluster_bind.c_str(), true);
  if (!port) {
    caf::anon_send_exit(face, caf::exit_reason::user_shutdown);
    return fail(errc::invalid_param, "cannot publish the worker on " + o.cluster_bind + ":" + std::to_string(o.cluster_port) +
                                         ": " + sys.render(port.error()) + " (is the port in use?)");
  }
  spdlog::info("worker: intake published on {}:{} ({})", o.cluster_bind, *port, o.cluster_tls() ? "TLS" : "plain TCP");
  return face;
}

cluster_intake_actor start_router(caf::actor_system& sys, const daemon_options& o,
                                  std::function<void(const intake_actor&, const model_info&)> ready,
                                  std::function<void(bool)> serving,
                                  std::shared_ptr<metrics_registry> metrics) {
  cluster_intake_config c;
  c.workers = o.workers;
  c.routing = o.routing;
  c.balance_threshold = o.balance_threshold;
  c.affinity_blocks = o.affinity_blocks;
  c.block_tokens = static_cast<size_t>(o.runtime.block_size);
  c.block_bytes = 4 * c.block_tokens;
  c.connector = o.cluster_tls() ? sys.openssl_manager().actor_handle() : sys.middleman().actor_handle();
  c.on_first_worker = std::move(ready);
  c.on_serving = std::move(serving);
  c.on_workers = [metrics](const std::vector<cluster_worker_view>& views, uint64_t followed, uint64_t overridden) {
    metrics->set_affinity_picks(followed, overridden);
    for (const auto& v : views) {
      metrics_registry::worker_gauges g;
      g.up = v.up;
      g.running = v.stats.running;
      g.waiting = v.stats.waiting;
      g.kv_blocks_used = v.stats.kv_blocks_used;
      g.in_flight = v.in_flight;
      metrics->set_worker(v.name, g);
    }
  };
  spdlog::info("router: {} workers, routing {}, cluster link {}", c.workers.size(), cluster::routing_mode_name(c.routing),
               o.cluster_tls() ? "TLS" : "plain TCP");
  return spawn_cluster_intake(sys, std::move(c));
}

}  // namespace cortex
