// The router's engine statistics: the sum of its workers' (issue 14),
// without CAF. Counts and gauges add up; the prefix-cache hit rate is the
// pooled one (hits over lookups of all workers), the step means are
// weighted by each worker's steps, the largest batch is the largest of all.
#pragma once

#include <vector>

#include "messages/engine.hpp"

namespace cortex::cluster {

engine_stats sum_engine_stats(const std::vector<engine_stats>& workers);

}  // namespace cortex::cluster
