// The service's Prometheus metrics, exactly http.md's "Metrics" names,
// types and labels, and their text for GET /metrics. CAF-free; nothing
// throws. Thread-safe: every method takes one internal lock, so gateways,
// the scheduler's reporter and the /metrics handler may call it from their
// own threads.
//
//   counters   cortex_requests_total{endpoint, reason[, key]}, cortex_prompt_tokens_total,
//              cortex_generation_tokens_total, cortex_prefix_cache_hit_tokens_total,
//              cortex_preemptions_total, cortex_spec_drafted_tokens_total, cortex_spec_accepted_tokens_total, cortex_malformed_messages_total{gateway},
//              cortex_rejections_total{code[, key]}
//   gauges     cortex_requests_running, cortex_requests_waiting, cortex_kv_blocks_used,
//              cortex_kv_blocks_total, cortex_kv_bytes_per_token, cortex_kv_bytes_used,
//              cortex_kv_bytes_full, cortex_kv_bytes_total,
//              cortex_kv_group_blocks_used{group, window}, cortex_kv_group_blocks_released{group, window}
//              (memory kinds: one series per K/V group, window "0" for full attention;
//              the families appear once the groups were set), cortex_connections{gateway},
//              cortex_model_loaded, cortex_kernel_isa_info{isa} (1 for the kernels'
//              path, "avx512", "amx"...; the family appears once it was set);
//              on a router (issue 14), per worker "host:port": cortex_worker_up{worker},
//              cortex_worker_requests_running{worker}, cortex_worker_requests_waiting{worker},
//              cortex_worker_kv_blocks_used{worker}, cortex_worker_requests_in_flight{worker}
//              (these families appear only once a worker was set); and
//              cortex_router_affinity_picks_total{outcome="followed"|"overridden"}
//              (requests with a prefix key that went to their preferred worker, or
//              to the least loaded because of the balance threshold)
//   histograms cortex_time_to_first_token_seconds, cortex_inter_token_latency_seconds,
//              cortex_request_duration_seconds, cortex_queue_time_seconds,
//              cortex_step_duration_seconds (seconds), cortex_step_batch_tokens
//              (tokens per engine step); fixed buckets (metrics_registry.cpp)
//
// Label values are the caller's words; suggested: endpoint "chat_completions"
// | "completions" | "embeddings" | "wire"; reason protocol v1's finish reason
// (finish_reason_name); gateway "http" | "zmq"; code the protocol v1 error
// name ("overloaded", errc_name); key the API key id with access control on
// (auth.md: by key id, never the secret; "unknown" for a credential that
// named no key), the label left out when empty (access control off). Families are rendered in the order above,
// label sets sorted; a labelled family with no series yet has only its
// HELP/TYPE lines.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "actors/gateway_core/prometheus_text.hpp"
#include "messages/request.hpp"

namespace cortex {

class metrics_registry {
 public:
  metrics_registry();

  // Counters.
  void count_request(std::string_view endpoint, std::string_view reason, std::string_view key = {});
  void add_prompt_tokens(uint64_t n);
  void add_generation_tokens(uint64_t n);
  void add_prefix_cache_hit_tokens(uint64_t n);
  void add_preemptions(uint64_t n);
  void count_malformed_message(std::string_view gateway);
  void count_rejection(std::string_view code, std::string_view key = {});

  // Gauges (the latest value wins).
  void set_requests_running(double v);
  void set_requests_waiting(double v);
  void set_kv_blocks_used(double v);
  void set_kv_blocks_total(double v);
  void set_kv_bytes_per_token(double v);
  // What the blocks in use hold, what the same sequences would hold with
  // nothing released out of sliding windows, and the arena.
  void set_kv_bytes(double used, double full, double total);
  // One K/V group (memory kinds, model/kv_groups.hpp): its window (0: full
  // attention), blocks it holds and table entries it released.
  struct kv_group_gauges {
    uint32_t window = 0;
    double blocks_used = 0, blocks_released = 0;
  };
  void set_kv_groups(const std::vector<kv_group_gauges>& groups);
  void set_connections(std::string_view gateway, double v);
  void set_model_loaded(bool loaded);
  void set_kernel_isa(std::string_view isa);  // empty: not known (the family stays out)
  // A router's worker (its last stats; in_flight: the router's requests on it).
  struct worker_gauges {
    bool up = false;
    double running = 0, waiting = 0, kv_blocks_used = 0, in_flight = 0;
  };
  void set_worker(std::string_view worker, const worker_gauges& g);
  void set_affinity_picks(uint64_t followed, uint64_t overridden);  // totals so far

  // Histograms; durations in seconds.
  void observe_time_to_first_token(double s);
  void observe_inter_token_latency(double s);
  void observe_request_duration(double s);
  void observe_queue_time(double s);
  void observe_step(double duration_s, uint32_t batch_tokens);  // one engine step

  // Everything a request's terminal event tells: requests_total{endpoint,
  // reason}, prompt / generation / prefix-cache-hit tokens, preemptions,
  // time to first token (when a token came), queue time, request duration,
  // and the inter-token latency: its mean over the request
  // (decode_ms / (completion_tokens - 1)) counted completion_tokens - 1
  // times, so that counts and sums are exact (buckets approximate). A caller
  // that times every token itself calls observe_inter_token_latency instead
  // and passes with_inter_token = false.
  void record_finished(std::string_view endpoint, const request_finished& f, bool with_inter_token = true,
                       std::string_view key = {});

  // The exposition text (format 0.0.4).
  std::string render() const;

 private:
  template <class F>
  void locked(F&& f) {
    std::lock_guard<std::mutex> lock(mu_);
    f();
  }

  mutable std::mutex mu_;
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> requests_;  // (endpoint, reason, key)
  uint64_t prompt_tokens_ = 0, generation_tokens_ = 0, prefix_cache_hit_tokens_ = 0, preemptions_ = 0;
  uint64_t spec_drafted_ = 0, spec_accepted_ = 0;  // speculative decoding, of ended requests
  std::map<std::string, uint64_t> malformed_;    // by gateway
  std::map<std::pair<std::string, std::string>, uint64_t> rejections_;   // by (code, key)
  double running_ = 0, waiting_ = 0, kv_used_ = 0, kv_total_ = 0, kv_bytes_per_token_ = 0, model_loaded_ = 0;
  double kv_bytes_used_ = 0, kv_bytes_full_ = 0, kv_bytes_total_ = 0;
  std::vector<kv_group_gauges> kv_groups_;
  std::map<std::string, double> connections_;    // by gateway
  std::string kernel_isa_;
  std::map<std::string, worker_gauges> workers_;  // by worker (router only)
  std::map<std::string, double> affinity_picks_;  // by outcome (router only)
  histogram ttft_, itl_, duration_, queue_, step_duration_, step_batch_tokens_;
};

}  // namespace cortex
