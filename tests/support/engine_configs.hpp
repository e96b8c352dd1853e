// Config builders for the scheduler and KV-cache tests: each field is set by
// name, so reordering a config struct cannot silently change a test.
#pragma once

#include <cstdint>

#include "actors/kv_cache/kv_cache_manager.hpp"
#include "actors/scheduler/scheduler_core.hpp"

namespace cortex::testing {

inline kv_cache_config kv_cfg(int32_t n_blocks, int32_t block_size, bool enable_prefix_caching) {
  kv_cache_config c;
  c.n_blocks = n_blocks;
  c.block_size = block_size;
  c.enable_prefix_caching = enable_prefix_caching;
  return c;
}

inline scheduler_config sched_cfg(int32_t max_batch_tokens, int32_t max_running, double aging_per_step = 0.0) {
  scheduler_config c;
  c.max_batch_tokens = max_batch_tokens;
  c.max_running = max_running;
  c.aging_per_step = aging_per_step;
  return c;
}

}  // namespace cortex::testing
