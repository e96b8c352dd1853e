// cortexd: the CortexStream server. Binds a ZeroMQ ROUTER endpoint speaking
// protocol v1 (../shared/docs/protocol.md), loads the model, and serves
// until SIGTERM/SIGINT (SIGHUP reloads the --auth keys file), then drains: new submits get 503, in-flight requests
// get --grace-ms to finish, the rest end with `shutdown`; exit code 0.
// Roles (apps/cortexd/cluster_roles.hpp, README "Several machines"): a worker
// also publishes its intake for routers; a router loads no model and serves
// the gateways over its workers (SIGHUP also rereads --workers-file).
#include <cstdlib>
#include <signal.h>
#include <sys/stat.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "actors/auth/access_policy.hpp"
#include "actors/auth/credentials.hpp"
#include "apps/common/curve_keys.hpp"
#include "actors/gateway/gateway_actor.hpp"
#include "actors/gateway_core/metrics_registry.hpp"
#include "actors/http_gateway/http_gateway_actor.hpp"
#include "actors/runtime/runtime.hpp"
#include "text/tokenizer.hpp"
#include "apps/cortexd/cluster_roles.hpp"
#include "apps/cortexd/daemon_options.hpp"
#include "kernels/amx_choice.hpp"

namespace {

struct daemon_caf_config : caf::actor_system_config {
  explicit daemon_caf_config(const cortex::daemon_options& o) {
    cortex::register_types(*this);
    cortex::load_cluster_modules(*this, o);
    set("scheduler.policy", caf::atom("sharing"));
    set("logger.verbosity", caf::atom("quiet"));
  }
};

void setup_logging(const cortex::daemon_options& o) {
  auto logger = spdlog::stderr_color_mt("cortexd");
  if (o.log_json) {
    logger->set_pattern(R"({"time":"%Y-%m-%dT%H:%M:%S.%e","level":"%l","msg":"%v"})");
  } else {
    logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] %v");
  }
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(o.runtime.log_level));
}

// Requests the gateways still have open (accepted or submitted, not terminated).
uint64_t active_requests(caf::actor_system& sys, const std::vector<cortex::gateway_actor>& gws) {
  caf::scoped_actor self{sys};
  uint64_t n = 0;
  for (const auto& gw : gws) {
    self->request(gw, std::chrono::seconds(5), cortex::active_atom_v).receive([&](uint64_t v) { n += v; }, [&](caf::error&) {});
  }
  return n;
}

// SIGHUP: reloads the keys file. A file that fails to load leaves the old
// keys in force; running requests keep their admission either way.
void reload_keys(const std::string& path, cortex::auth::access_policy* policy) {
  if (!policy) {
    spdlog::info("SIGHUP: nothing to reload (no --auth)");
    return;
  }
  auto cfg = cortex::auth::load_keys_file(path);
  if (!cfg) {
    spdlog::error("SIGHUP: keeping the keys in force: {}", cfg.error().message);
    return;
  }
  const size_t n_keys = cfg->keys.size(), n_tiers = cfg->tiers.size();
  policy->reload(std::move(*cfg));
  spdlog::info("SIGHUP: reloaded {}: {} keys, {} tiers", path, n_keys, n_tiers);
}

// SIGHUP on a router: rereads --workers-file (plus --workers); a bad file
// keeps the current list. New workers join, removed ones get no new requests.
void reload_workers(const cortex::daemon_options& opts, const cortex::cluster_intake_actor& cluster) {
  auto listed = cortex::read_workers_file(opts.workers_file);
  if (!listed) {
    spdlog::error("SIGHUP: keeping the workers in force: {}", listed.error().message);
    return;
  }
  cortex::daemon_options next = opts;
  next.workers = opts.workers_flag;  // --workers stay; the file's entries are replaced
  next.workers.insert(next.workers.end(), listed->begin(), listed->end());
  if (cortex::status s = cortex::check_cluster_exposure(next); !s) {
    spdlog::error("SIGHUP: keeping the workers in force: {}", s.message);
    return;
  }
  spdlog::info("SIGHUP: {} workers from {}", listed->size(), opts.workers_file);
  caf::anon_send(cluster, cortex::workers_atom_v, next.workers);
}

// --curve-secret-key: the ROUTER becomes a CURVE server whose ZAP handler
// admits the curve_public keys of the keys file (auth.md), binding each
// connection to its key id; refused handshakes are counted and logged.
cortex::status setup_curve(cortex::daemon_options& opts, const std::shared_ptr<cortex::auth::access_policy>& access,
                           const std::shared_ptr<cortex::metrics_registry>& metrics,
                           const std::shared_ptr<cortex::auth::refusal_log>& refusals) {
  std::string key, error;
  if (!cortex::cli::read_curve_key_file(opts.curve_secret_key_path, key, error))
    return cortex::fail(cortex::errc::invalid_param, "--curve-secret-key: " + error);
  struct stat st {};
  if (::stat(opts.curve_secret_key_path.c_str(), &st) == 0 && (st.st_mode & 077))
    spdlog::warn("{} (the server's CURVE secret key) is readable by other users; chmod 600 it",
                 opts.curve_secret_key_path);
  opts.zmq.curve_secret_key = key;
  opts.zmq.curve_authenticate = [access, metrics, refusals](const std::string& client_public, const std::string& peer) {
    auto id = access->authenticate_curve(client_public);
    if (!id) {
      metrics->count_rejection(cortex::errc_name(cortex::errc::unauthenticated), "unknown");
      refusals->refused({}, peer,
                        {cortex::errc::unauthenticated, "CURVE handshake refused: client key " + client_public +
                                                            " is not a curve_public of the keys file", 0});
    }
    return id;
  };
  return cortex::status::ok();
}

// Waits for a signal for up to `ms`; returns the signal or 0.
int wait_signal(const sigset_t& set, int ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  const int sig = sigtimedwait(&set, nullptr, &ts);
  return sig > 0 ? sig : 0;
}

}  // namespace

int main(int argc, char** argv) {
  cortex::cli::args a("cortexd",
                      "The CortexStream server: loads a GGUF model and serves generation requests over ZeroMQ\n"
                      "(protocol v1, msgpack; clients: 'cortex submit', 'cortex chat', clients/python) and over an\n"
                      "OpenAI-compatible HTTP API (--http; /v1/chat/completions, /v1/completions, /v1/embeddings, /v1/rerank,\n"
                      "/v1/models, /health/*, /metrics).\n"
                      "Settings: defaults < --config FILE < CORTEX_MODEL < flags.",
                      cortex::daemon_option_specs(), "");
  if (!a.parse(argc - 1, argv + 1)) {
    std::fprintf(stderr, "cortexd: %s\n", a.error().c_str());
    return 2;
  }
  if (a.help_requested()) {
    std::fputs(a.usage().c_str(), stdout);
    return 0;
  }
  cortex::daemon_options opts;
  if (cortex::status s = cortex::resolve_daemon_options(a, opts); !s) {
    std::fprintf(stderr, "cortexd: %s\n", s.message.c_str());
    return 2;
  }
  setup_logging(opts);
  // Fault injection for tests (actors/runtime/fault_plan.hpp); unset: off.
  if (const char* faults = std::getenv("CORTEX_FAULTS"); faults && *faults) {
    auto plan = cortex::parse_fault_plan(faults);
    if (!plan) {
      spdlog::critical("{}", plan.error().message);
      return 2;
    }
    opts.runtime.faults = *plan;
    opts.zmq.fault_send_fail_at = plan->send_fail_at;
    opts.zmq.fault_send_errno = plan->send_fail_errno;
  }
  if (cortex::status s = cortex::check_cluster_exposure(opts); !s) {
    spdlog::critical("{}", s.message);
    return 2;
  }
  if (cortex::status s = cortex::check_exposure(opts); !s) {
    spdlog::critical("{}", s.message);
    return 2;
  }
  std::shared_ptr<cortex::auth::access_policy> access;
  if (!opts.auth_path.empty()) {
    auto keys = cortex::auth::load_keys_file(opts.auth_path);
    if (!keys) {
      spdlog::critical("{}", keys.error().message);
      return 2;
    }
    spdlog::info("access control on: {} keys in {} tiers from {}", keys->keys.size(), keys->tiers.size(), opts.auth_path);
    access = cortex::auth::access_policy::create(std::move(*keys));
    opts.runtime.intake.access = access;
  }

  // Signals are taken synchronously by this thread; block them before any
  // other thread exists so none of them receives one.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  auto metrics = std::make_shared<cortex::metrics_registry>();
  auto zmq_refusals = std::make_shared<cortex::auth::refusal_log>("zmq");  // the ZAP handler's and the gateway's
  if (!opts.curve_secret_key_path.empty()) {
    if (cortex::status s = setup_curve(opts, access, metrics, zmq_refusals); !s) {
      spdlog::critical("{}", s.message);
      return 2;
    }
  }
  auto server = cortex::zmq_server::bind(opts.zmq);
  if (!server) {
    spdlog::critical("{}", server.error().message);
    return 1;
  }
  std::unique_ptr<cortex::http_server> http;
  if (opts.http_enabled) {
    auto h = cortex::http_server::bind(opts.http);
    if (!h) {
      spdlog::critical("{}", h.error().message);
      (*server)->stop();
      return 1;
    }
    http = std::move(*h);
  }
  daemon_caf_config cfg{opts};
  caf::actor_system sys{cfg};
  cortex::gateway_config zcfg;
  zcfg.metrics = metrics;
  zcfg.access = access;
  zcfg.refusals = zmq_refusals;
  std::vector<cortex::gateway_actor> gateways{cortex::spawn_gateway(sys, **server, zcfg)};
  auto hooks = std::make_shared<cortex::http_model_hooks>();
  if (http) {
    cortex::http_gateway_config hcfg;
    hcfg.hooks = hooks;
    hcfg.metrics = metrics;
    hcfg.access = access;
    hcfg.auth_metrics = opts.auth_metrics;
    cortex::zmq_server* zmq = server->get();
    hcfg.before_scrape = [zmq](cortex::metrics_registry& r) { r.set_connections("zmq", static_cast<double>(zmq->n_peers())); };
    gateways.push_back(cortex::spawn_http_gateway(sys, *http, hcfg));
    spdlog::info("listening on {} and http://{} (health: starting)", (*server)->endpoint(), http->address());
  } else {
    spdlog::info("listening on {} (health: starting; HTTP off)", (*server)->endpoint());
  }
  auto stop_all = [&] {
    for (auto& gw : gateways) caf::anon_send_exit(gw, caf::exit_reason::user_shutdown);
    if (http) http->stop();
    (*server)->stop();
  };

  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<cortex::runtime> rt;
  cortex::intake_actor front;  // the local intake, or the router's cluster intake
  cortex::cluster_intake_actor cluster;
  cortex::worker_actor worker_face;  // --role worker: what routers talk to
  if (opts.role == cortex::daemon_options::role_kind::router) {
    if (!opts.runtime.model_path.empty()) {  // only the vocabulary: token text of HTTP logprobs
      auto vocab = cortex::model::load_vocab_only(opts.runtime.model_path);
      if (!vocab) {
        spdlog::critical("cannot read the vocabulary: {}", vocab.error().message);
        stop_all();
        return 1;
      }
      std::shared_ptr<const cortex::model> v(std::move(*vocab));
      hooks->token_text = [v](int32_t id) { return v->tokenizer().token_to_piece(id); };
      hooks->n_embd = static_cast<uint32_t>(v->hparams().n_embd);
    } else {
      hooks->token_text = [](int32_t) { return std::string(); };
    }
    // The gateways turn ready when the first worker has joined (with its model).
    auto ready = [gateways, t0](const cortex::intake_actor& intake, const cortex::model_info& info) {
      for (auto& gw : gateways) caf::anon_send(gw, cortex::ready_atom_v, intake, info);
      spdlog::info("ready in {:.1f} s: model '{}' ({}, {}) on the first worker",
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), info.name, info.arch, info.quant);
    };
    auto serving = [gateways](bool any_up) {
      for (auto& gw : gateways) caf::anon_send(gw, cortex::ready_atom_v, any_up);
    };
    cluster = cortex::start_router(sys, opts, std::move(ready), std::move(serving), metrics);
    front = caf::actor_cast<cortex::intake_actor>(cluster);
  } else {
    spdlog::info("{}", cortex::kernels::kernel_path_line());
    opts.runtime.on_step = [metrics](double duration_s, uint32_t n_tokens) { metrics->observe_step(duration_s, n_tokens); };
    auto started = cortex::runtime::start(sys, opts.runtime);
    if (!started) {
      spdlog::critical("cannot start: {}", started.error().message);
      stop_all();
      return 1;
    }
    rt = std::move(*started);
    front = rt->intake();
    const auto& m = rt->loaded_model();
    cortex::model_info info{m.name(), m.hparams().arch, static_cast<uint32_t>(rt->n_ctx()),
                            static_cast<uint32_t>(m.hparams().n_vocab), m.quant_name(), m.n_params()};
    auto loaded = rt->shared_model();
    hooks->token_text = [loaded](int32_t id) { return loaded->tokenizer().token_to_piece(id); };
    hooks->n_embd = static_cast<uint32_t>(m.hparams().n_embd);
    if (opts.role == cortex::daemon_options::role_kind::worker) {
      auto face = cortex::publish_worker(sys, opts, front, info);
      if (!face) {
        spdlog::critical("{}", face.error().message);
        rt.reset();
        stop_all();
        return 1;
      }
      worker_face = std::move(*face);
    }
    for (auto& gw : gateways) caf::anon_send(gw, cortex::ready_atom_v, front, info);
    spdlog::info("ready in {:.1f} s: model '{}' ({}, {}), endpoint {}{}",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), info.name, info.arch, info.quant,
                 (*server)->endpoint(), http ? ", http://" + http->address() + "/v1" : std::string());
  }

  int sig = 0;
  while (!(sig = wait_signal(sigs, 1000)) || sig == SIGHUP) {
    if (sig != SIGHUP) continue;
    reload_keys(opts.auth_path, access.get());
    if (cluster && !opts.workers_file.empty()) reload_workers(opts, cluster);
  }
  spdlog::info("received {}: draining (grace {} ms)", sig == SIGTERM ? "SIGTERM" : "SIGINT", opts.grace_ms);
  for (auto& gw : gateways) caf::anon_send(gw, cortex::drain_atom_v);
  caf::anon_send(front, cortex::drain_atom_v);
  const auto grace_end = std::chrono::steady_clock::now() + std::chrono::milliseconds(opts.grace_ms);
  while (active_requests(sys, gateways) > 0 && std::chrono::steady_clock::now() < grace_end) {
    if (int s = wait_signal(sigs, 20); s && s != SIGHUP) break;  // a second SIGTERM/SIGINT cuts the grace period short
  }
  // Whatever is left ends with `shutdown`; wait (bounded) for the gateway to send those.
  caf::anon_send(front, cortex::shutdown_atom_v);
  const auto flush_end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (active_requests(sys, gateways) > 0 && std::chrono::steady_clock::now() < flush_end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // bounded by flush_end
  }
  const auto left = active_requests(sys, gateways);
  if (left) spdlog::error("{} requests did not reach a terminal message before exit", left);
  rt.reset();
  if (cluster) caf::anon_send_exit(cluster, caf::exit_reason::user_shutdown);
  if (worker_face) caf::anon_send_exit(worker_face, caf::exit_reason::user_shutdown);
  stop_all();
  spdlog::info("stopped");
  return 0;
}
