#include "actors/cluster/cluster_stats.hpp"

#include <algorithm>

namespace cortex::cluster {

namespace {

// A worker's value of a setting the cluster reports as one: the workers'
// when they agree, "mixed" when they do not.
void agree(std::string& cluster, const std::string& worker) {
  if (cluster.empty()) cluster = worker;
  else if (cluster != worker) cluster = "mixed";
}

}  // namespace

engine_stats sum_engine_stats(const std::vector<engine_stats>& workers) {
  engine_stats s;
  double batch_tokens = 0, batch_seqs = 0;
  // K/V groups add up group by group when every worker has the same ones
  // (the same model); otherwise only the bytes add up.
  bool same_groups = true;
  for (const auto& w : workers) {
    same_groups = same_groups && w.kv_group_windows == workers.front().kv_group_windows &&
                  w.kv_group_layers == workers.front().kv_group_layers &&
                  w.kv_group_blocks_used.size() == w.kv_group_windows.size() &&
                  w.kv_group_blocks_released.size() == w.kv_group_windows.size();
  }
  if (same_groups && !workers.empty()) {
    s.kv_group_windows = workers.front().kv_group_windows;
    s.kv_group_layers = workers.front().kv_group_layers;
    s.kv_group_blocks_used.assign(s.kv_group_windows.size(), 0);
    s.kv_group_blocks_released.assign(s.kv_group_windows.size(), 0);
  }
  for (const auto& w : workers) {
    for (size_t g = 0; same_groups && g < s.kv_group_windows.size(); ++g) {
      s.kv_group_blocks_used[g] += w.kv_group_blocks_used[g];
      s.kv_group_blocks_released[g] += w.kv_group_blocks_released[g];
    }
    s.kv_bytes_used += w.kv_bytes_used;
    s.kv_bytes_full += w.kv_bytes_full;
    s.kv_bytes_total += w.kv_bytes_total;
    // The KV element type, its size and the kernel path are the workers'
    // when they agree; a cluster of mixed types says so and reports the
    // largest size.
    agree(s.kv_type, w.kv_type);
    agree(s.kernel_isa, w.kernel_isa);
    s.kv_bytes_per_token = std::max(s.kv_bytes_per_token, w.kv_bytes_per_token);
    s.running += w.running;
    s.waiting += w.waiting;
    s.kv_blocks_used += w.kv_blocks_used;
    s.kv_blocks_total += w.kv_blocks_total;
    s.kv_blocks_cached += w.kv_blocks_cached;
    s.prefix_tokens_queried += w.prefix_tokens_queried;
    s.prefix_tokens_hit += w.prefix_tokens_hit;
    s.prefix_cache_enabled = s.prefix_cache_enabled && w.prefix_cache_enabled;  // on only where every worker has it
    s.state_slots_used += w.state_slots_used;
    s.state_bytes_per_slot = std::max(s.state_bytes_per_slot, w.state_bytes_per_slot);
    s.tokens_generated += w.tokens_generated;
    s.tokens_prefilled += w.tokens_prefilled;
    s.steps += w.steps;
    s.preemptions += w.preemptions;
    s.failed_steps += w.failed_steps;
    s.spec_drafted_tokens += w.spec_drafted_tokens;
    s.spec_accepted_tokens += w.spec_accepted_tokens;
    batch_tokens += w.step_batch_tokens_mean * double(w.steps);
    batch_seqs += w.step_seqs_mean * double(w.steps);
    s.step_seqs_max = std::max(s.step_seqs_max, w.step_seqs_max);
    if (s.finished_by_reason.size() < w.finished_by_reason.size()) s.finished_by_reason.resize(w.finished_by_reason.size());
    for (size_t i = 0; i < w.finished_by_reason.size(); ++i) s.finished_by_reason[i] += w.finished_by_reason[i];
  }
  s.prefix_cache_hit_rate = s.prefix_tokens_queried ? double(s.prefix_tokens_hit) / double(s.prefix_tokens_queried) : 0.0;
  s.step_batch_tokens_mean = s.steps ? batch_tokens / double(s.steps) : 0.0;
  s.step_seqs_mean = s.steps ? batch_seqs / double(s.steps) : 0.0;
  return s;
}

}  // namespace cortex::cluster
