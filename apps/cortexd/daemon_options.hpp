// cortexd's settings: defaults, then the config file (CAF's config format,
// section [cortex]), then the environment (CORTEX_MODEL), then flags.
#pragma once

#include <string>
#include <vector>

#include "actors/cluster/routing_policy.hpp"
#include "actors/gateway/zmq_server.hpp"
#include "actors/http_gateway/http_server.hpp"
#include "actors/runtime/runtime_config.hpp"
#include "apps/common/args.hpp"
#include "base/expected.hpp"

namespace cortex {

struct daemon_options {
  runtime_config runtime;
  zmq_server_options zmq;
  bool http_enabled = true;  // --http off disables the HTTP gateway
  http_server_options http;
  int grace_ms = 5000;    // SIGTERM: time in-flight requests get to finish
  bool log_json = false;
  std::string config_path;
  // Access control (../shared/docs/auth.md).
  std::string auth_path;              // --auth: the keys file; empty: off
  bool auth_metrics = false;          // --auth-metrics: /metrics needs a key too
  std::string curve_secret_key_path;  // --curve-secret-key: ZeroMQ with CURVE
  bool insecure = false;              // --insecure: allow non-loopback binds without access control
  // Scale-out (issue 14, README "Several machines").
  enum class role_kind { node, worker, router } role = role_kind::node;
  uint16_t cluster_port = 0;               // worker: the middleman port its intake is published on
  std::string cluster_bind = "127.0.0.1";  // worker: the address that port is bound to
  std::vector<std::string> workers;        // router: "host:port" of each worker (--workers, then the file's)
  std::vector<std::string> workers_flag;   // router: those of --workers alone
  std::string workers_file;                // router: one HOST:PORT per line; SIGHUP rereads it
  cluster::routing_mode routing = cluster::routing_mode::affinity;
  uint32_t balance_threshold = 4;
  uint32_t affinity_blocks = 4;
  // The cluster link over TLS (CAF's OpenSSL transport): all three or none.
  std::string cluster_cert, cluster_key, cluster_ca;
  bool cluster_tls() const { return !cluster_cert.empty(); }
};

// A workers file: one HOST:PORT per line; blank lines and '#' comments are
// skipped. Fails naming the file line that is not HOST:PORT.
expected<std::vector<std::string>> read_workers_file(const std::string& path);

// The cluster link without TLS is plaintext and lets anyone who reaches it
// send any actor message: a worker port bound outside loopback, or a router
// reaching a worker outside loopback, needs --cluster-cert/-key/-ca unless
// --insecure. The message says what to give.
status check_cluster_exposure(const daemon_options& o);

// Whether a bind address is reachable only from this machine: loopback
// (127.0.0.0/8, ::1, localhost) or an ipc:// / inproc:// endpoint.
bool is_local_address(const std::string& host);
bool is_local_endpoint(const std::string& zmq_endpoint);

// auth.md "Exposure": a gateway bound outside loopback needs --auth (and
// the ZeroMQ one CURVE, since the `auth` field would cross the network in
// clear), unless --insecure. The message says what to give.
status check_exposure(const daemon_options& o);

// The option table (also the --help text).
std::vector<cli::option_spec> daemon_option_specs();

// Fills `out` from the parsed flags (and the config file they name).
// Fails with invalid_param and a message naming the option or file line.
status resolve_daemon_options(cli::args& a, daemon_options& out);

}  // namespace cortex
