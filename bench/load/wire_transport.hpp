// The wire mode: one ZeroMQ DEALER socket per stream, all polled from the
// controller's thread, speaking protocol v1 (../shared/docs/protocol.md).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "apps/common/curve_keys.hpp"
#include "bench/load/load_run.hpp"
#include "base/expected.hpp"

namespace cortex::load {

struct wire_model_info {
  std::string name, quant;
  int n_vocab = 0, n_ctx = 0;
};

class wire_transport : public load_transport {
 public:
  // Connects `n_streams` sockets to `endpoint` (CURVE clients with `curve`
  // keys), waits (up to `ready_timeout_s`) until health says `ready`, and
  // reads the first model's vocab and context from `models`. `auth`, when
  // not empty, goes out as every submit's `auth` (auth.md). The error says
  // what failed (connection, timeout, reply).
  static expected<std::unique_ptr<wire_transport>> connect(const std::string& endpoint, int n_streams, double ready_timeout_s,
                                                           const cli::curve_client_keys& curve = {},
                                                           const std::string& auth = "");
  ~wire_transport() override;

  const wire_model_info& model_info() const { return info_; }
  // The server's `stats` reply as JSON text (protocol.md), or the error.
  expected<std::string> server_stats();
  void submit(const planned_request& r) override;
  // Drains every readable socket; events are stamped at receipt.
  void poll(std::vector<load_event>& out, std::chrono::milliseconds timeout) override;

 private:
  wire_transport() = default;
  void* ctx_ = nullptr;
  std::vector<void*> sockets_;  // (n_streams,) DEALER sockets; [0] also asks health and models
  wire_model_info info_;
  std::string auth_;
  std::vector<int> pending_errors_;  // requests whose submit could not be sent; reported by the next poll
};

}  // namespace cortex::load
