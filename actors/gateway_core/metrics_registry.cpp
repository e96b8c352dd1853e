#include "actors/gateway_core/metrics_registry.hpp"

namespace cortex {

namespace {

// Bucket bounds. Latencies on a CPU span milliseconds (a decode step) to
// minutes (a long request under load).
std::vector<double> ttft_buckets() { return {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}; }
std::vector<double> itl_buckets() { return {0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2.5}; }
std::vector<double> duration_buckets() { return {0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}; }
std::vector<double> queue_buckets() { return {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60}; }
std::vector<double> step_buckets() { return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}; }
std::vector<double> batch_buckets() { return {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096}; }

void counter(prometheus_writer& w, const char* name, const char* help, uint64_t v) {
  w.family(name, "counter", help);
  w.sample(name, {}, static_cast<double>(v));
}

void gauge(prometheus_writer& w, const char* name, const char* help, double v) {
  w.family(name, "gauge", help);
  w.sample(name, {}, v);
}

// A family with one label.
template <class V>
void by_label(prometheus_writer& w, const char* name, const char* type, const char* help, const char* label,
              const std::map<std::string, V>& series) {
  w.family(name, type, help);
  for (const auto& [value, v] : series) w.sample(name, {{label, value}}, static_cast<double>(v));
}

// The `key` label, present only with access control on.
void with_key(label_set& labels, const std::string& key) {
  if (!key.empty()) labels.emplace_back("key", key);
}

void hist(prometheus_writer& w, const char* name, const char* help, const histogram& h) {
  w.family(name, "histogram", help);
  h.write(w, name);
}

}  // namespace

metrics_registry::metrics_registry()
    : ttft_(ttft_buckets()),
      itl_(itl_buckets()),
      duration_(duration_buckets()),
      queue_(queue_buckets()),
      step_duration_(step_buckets()),
      step_batch_tokens_(batch_buckets()) {}

void metrics_registry::count_request(std::string_view endpoint, std::string_view reason, std::string_view key) {
  locked([&] { ++requests_[{std::string(endpoint), std::string(reason), std::string(key)}]; });
}
void metrics_registry::add_prompt_tokens(uint64_t n) { locked([&] { prompt_tokens_ += n; }); }
void metrics_registry::add_generation_tokens(uint64_t n) { locked([&] { generation_tokens_ += n; }); }
void metrics_registry::add_prefix_cache_hit_tokens(uint64_t n) { locked([&] { prefix_cache_hit_tokens_ += n; }); }
void metrics_registry::add_preemptions(uint64_t n) { locked([&] { preemptions_ += n; }); }
void metrics_registry::count_malformed_message(std::string_view gateway) {
  locked([&] { ++malformed_[std::string(gateway)]; });
}
void metrics_registry::count_rejection(std::string_view code, std::string_view key) {
  locked([&] { ++rejections_[{std::string(code), std::string(key)}]; });
}

void metrics_registry::set_requests_running(double v) { locked([&] { running_ = v; }); }
void metrics_registry::set_requests_waiting(double v) { locked([&] { waiting_ = v; }); }
void metrics_registry::set_kv_blocks_used(double v) { locked([&] { kv_used_ = v; }); }
void metrics_registry::set_kv_blocks_total(double v) { locked([&] { kv_total_ = v; }); }
void metrics_registry::set_kv_bytes_per_token(double v) { locked([&] { kv_bytes_per_token_ = v; }); }
void metrics_registry::set_kernel_isa(std::string_view isa) { locked([&] { kernel_isa_ = std::string(isa); }); }
void metrics_registry::set_kv_bytes(double used, double full, double total) {
  locked([&] {
    kv_bytes_used_ = used;
    kv_bytes_full_ = full;
    kv_bytes_total_ = total;
  });
}
void metrics_registry::set_kv_groups(const std::vector<kv_group_gauges>& groups) { locked([&] { kv_groups_ = groups; }); }
void metrics_registry::set_connections(std::string_view gateway, double v) {
  locked([&] { connections_[std::string(gateway)] = v; });
}
void metrics_registry::set_model_loaded(bool loaded) { locked([&] { model_loaded_ = loaded ? 1 : 0; }); }
void metrics_registry::set_worker(std::string_view worker, const worker_gauges& g) {
  locked([&] { workers_[std::string(worker)] = g; });
}
void metrics_registry::set_affinity_picks(uint64_t followed, uint64_t overridden) {
  locked([&] { affinity_picks_ = {{"followed", double(followed)}, {"overridden", double(overridden)}}; });
}

void metrics_registry::observe_time_to_first_token(double s) { locked([&] { ttft_.observe(s); }); }
void metrics_registry::observe_inter_token_latency(double s) { locked([&] { itl_.observe(s); }); }
void metrics_registry::observe_request_duration(double s) { locked([&] { duration_.observe(s); }); }
void metrics_registry::observe_queue_time(double s) { locked([&] { queue_.observe(s); }); }

void metrics_registry::observe_step(double duration_s, uint32_t batch_tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  step_duration_.observe(duration_s);
  step_batch_tokens_.observe(batch_tokens);
}

void metrics_registry::record_finished(std::string_view endpoint, const request_finished& f, bool with_inter_token,
                                       std::string_view key) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{std::string(endpoint), finish_reason_name(f.reason), std::string(key)}];
  prompt_tokens_ += f.prompt_tokens;
  generation_tokens_ += f.completion_tokens;
  prefix_cache_hit_tokens_ += f.cached_tokens;
  preemptions_ += f.preemptions;
  spec_drafted_ += f.timings.spec_drafted_tokens;
  spec_accepted_ += f.timings.spec_accepted_tokens;
  if (f.completion_tokens > 0) ttft_.observe(f.timings.ttft_ms / 1000);
  queue_.observe(f.timings.queue_ms / 1000);
  duration_.observe(f.timings.total_ms / 1000);
  if (with_inter_token && f.completion_tokens > 1)
    itl_.observe_n(f.timings.decode_ms / 1000 / (f.completion_tokens - 1), f.completion_tokens - 1);
}

std::string metrics_registry::render() const {
  std::lock_guard<std::mutex> lock(mu_);
  prometheus_writer w;
  w.family("cortex_requests_total", "counter", "Requests ended, by endpoint and finish reason (and API key).");
  for (const auto& [k, v] : requests_) {
    label_set labels{{"endpoint", std::get<0>(k)}, {"reason", std::get<1>(k)}};
    with_key(labels, std::get<2>(k));
    w.sample("cortex_requests_total", labels, static_cast<double>(v));
  }
  counter(w, "cortex_prompt_tokens_total", "Prompt tokens of ended requests.", prompt_tokens_);
  counter(w, "cortex_generation_tokens_total", "Tokens generated by ended requests.", generation_tokens_);
  counter(w, "cortex_prefix_cache_hit_tokens_total", "Prompt tokens served from the prefix cache.",
          prefix_cache_hit_tokens_);
  counter(w, "cortex_preemptions_total", "Times a running request was preempted.", preemptions_);
  counter(w, "cortex_spec_drafted_tokens_total", "Speculative draft tokens verified for ended requests.", spec_drafted_);
  counter(w, "cortex_spec_accepted_tokens_total", "Of those, draft tokens accepted.", spec_accepted_);
  by_label(w, "cortex_malformed_messages_total", "counter", "Malformed messages, by gateway.", "gateway", malformed_);
  w.family("cortex_rejections_total", "counter", "Requests rejected before they started, by error code (and API key).");
  for (const auto& [k, v] : rejections_) {
    label_set labels{{"code", k.first}};
    with_key(labels, k.second);
    w.sample("cortex_rejections_total", labels, static_cast<double>(v));
  }
  gauge(w, "cortex_requests_running", "Requests being computed.", running_);
  gauge(w, "cortex_requests_waiting", "Requests queued.", waiting_);
  gauge(w, "cortex_kv_blocks_used", "KV cache blocks in use.", kv_used_);
  gauge(w, "cortex_kv_blocks_total", "KV cache blocks in the pool.", kv_total_);
  gauge(w, "cortex_kv_bytes_per_token", "KV cache bytes one token takes (K and V, all layers, the cache's element type).",
        kv_bytes_per_token_);
  gauge(w, "cortex_kv_bytes_used", "KV cache bytes the blocks in use hold.", kv_bytes_used_);
  gauge(w, "cortex_kv_bytes_full", "KV cache bytes the same sequences would hold with no block released out of a sliding window.",
        kv_bytes_full_);
  gauge(w, "cortex_kv_bytes_total", "KV cache bytes of the arena.", kv_bytes_total_);
  if (!kv_groups_.empty()) {
    const std::pair<const char*, double kv_group_gauges::*> per_group[] = {
        {"cortex_kv_group_blocks_used", &kv_group_gauges::blocks_used},
        {"cortex_kv_group_blocks_released", &kv_group_gauges::blocks_released}};
    const char* help[] = {"KV cache blocks a K/V group holds, by group and its window (0: full attention).",
                          "Block-table entries a windowed K/V group released (its window had passed), by group and window."};
    for (size_t f = 0; f < 2; ++f) {
      w.family(per_group[f].first, "gauge", help[f]);
      for (size_t g = 0; g < kv_groups_.size(); ++g) {
        w.sample(per_group[f].first, {{"group", std::to_string(g)}, {"window", std::to_string(kv_groups_[g].window)}},
                 kv_groups_[g].*per_group[f].second);
      }
    }
  }
  by_label(w, "cortex_connections", "gauge", "Open client connections, by gateway.", "gateway", connections_);
  gauge(w, "cortex_model_loaded", "1 once the model is loaded.", model_loaded_);
  if (!kernel_isa_.empty()) {
    by_label(w, "cortex_kernel_isa_info", "gauge", "1 for the kernels' instruction set path (avx512, amx...).", "isa",
             std::map<std::string, double>{{kernel_isa_, 1.0}});
  }
  if (!workers_.empty()) {
    const std::pair<const char*, double worker_gauges::*> per_worker[] = {
        {"cortex_worker_requests_running", &worker_gauges::running},
        {"cortex_worker_requests_waiting", &worker_gauges::waiting},
        {"cortex_worker_kv_blocks_used", &worker_gauges::kv_blocks_used},
        {"cortex_worker_requests_in_flight", &worker_gauges::in_flight}};
    std::map<std::string, double> up;
    for (const auto& [name, g] : workers_) up[name] = g.up ? 1 : 0;
    by_label(w, "cortex_worker_up", "gauge", "1 while the router's worker is connected, by worker.", "worker", up);
    for (const auto& [family, field] : per_worker) {
      std::map<std::string, double> v;
      for (const auto& [name, g] : workers_) v[name] = g.*field;
      by_label(w, family, "gauge", "A router's worker: its last reported value (in flight: the router's requests on it).",
               "worker", v);
    }
    by_label(w, "cortex_router_affinity_picks_total", "counter",
             "Requests with a prefix key: sent to their preferred worker, or to the least loaded (balance threshold).",
             "outcome", affinity_picks_);
  }
  hist(w, "cortex_time_to_first_token_seconds", "Time from receipt to the first generated token.", ttft_);
  hist(w, "cortex_inter_token_latency_seconds", "Time between generated tokens of a request.", itl_);
  hist(w, "cortex_request_duration_seconds", "Time from receipt to the end of a request.", duration_);
  hist(w, "cortex_queue_time_seconds", "Time a request waited before its first computation.", queue_);
  hist(w, "cortex_step_duration_seconds", "Duration of one engine step.", step_duration_);
  hist(w, "cortex_step_batch_tokens", "Tokens computed per engine step.", step_batch_tokens_);
  return w.text();
}

}  // namespace cortex
