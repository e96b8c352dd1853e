// Turns a measured phase into figures: aggregate throughput, TTFT and ITL
// percentiles, errors by code, and the client's CPU time; prints them and
// writes them as JSON.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "bench/load/load_run.hpp"

namespace cortex::load {

struct percentiles {
  double p50 = 0, p90 = 0, p99 = 0, mean = 0, max = 0;
  size_t n = 0;
};

// Nearest-rank percentiles of `v` (sorted in place); all zero when empty.
percentiles compute_percentiles(std::vector<double>& v);

struct load_summary {
  double wall_s = 0;                  // first submit to last terminal event
  int requests_ok = 0, requests_total = 0;
  long long completion_tokens = 0;    // usage.completion_tokens summed over all requests
  double tok_per_s = 0;               // completion_tokens / wall_s
  double req_per_s = 0;               // requests ended (any outcome) / wall_s
  percentiles ttft_ms, itl_ms;
  std::map<std::string, int> errors;  // outcome ("error:429 overloaded", "finished:cancelled", "timeout") -> count
  double cpu_s = -1;                  // process CPU time (user + system) over the window; < 0 = not measured
  double server_cpu_s = -1;           // wire with --server-pid: cortexd's CPU time over the window
};

load_summary summarize(phase_result& res);

// The figures as a JSON object (keys as in load_summary; percentiles as
// {p50, p90, p99, mean, max, n}).
nlohmann::json summary_json(const load_summary& s);

// Human-readable lines; `cpu_label` names what cpu_s measured.
std::string summary_text(const load_summary& s, const std::string& cpu_label);

// Process CPU time so far (user + system), seconds.
double process_cpu_seconds();

// CPU time (user + system) of process `pid` on this machine, seconds, from
// /proc/PID/stat; -1 when it cannot be read.
double pid_cpu_seconds(int pid);

// The 1, 5 and 15 minute load averages, or -1s when unavailable.
nlohmann::json load_average_json();

}  // namespace cortex::load
