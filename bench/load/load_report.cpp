#include "bench/load/load_report.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <sstream>

namespace cortex::load {

percentiles compute_percentiles(std::vector<double>& v) {
  percentiles p;
  p.n = v.size();
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  auto rank = [&](double q) {  // the smallest value with at least q of the samples at or below it
    const size_t k = size_t(std::ceil(q * double(v.size())));
    return v[std::min(v.size(), std::max<size_t>(k, 1)) - 1];
  };
  p.p50 = rank(0.50);
  p.p90 = rank(0.90);
  p.p99 = rank(0.99);
  p.max = v.back();
  p.mean = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
  return p;
}

load_summary summarize(phase_result& res) {
  load_summary s;
  s.wall_s = std::chrono::duration<double>(res.end - res.start).count();
  s.requests_total = int(res.requests.size());
  int n_ended = 0;
  for (auto& r : res.requests) {
    if (r.ok) ++s.requests_ok;
    if (r.done) ++n_ended;
    s.completion_tokens += r.completion_tokens;
    if (!r.ok) ++s.errors[r.outcome.empty() ? "unknown" : r.outcome];
  }
  if (s.wall_s > 0) {
    s.tok_per_s = double(s.completion_tokens) / s.wall_s;
    s.req_per_s = double(n_ended) / s.wall_s;
  }
  s.ttft_ms = compute_percentiles(res.ttft_ms);
  s.itl_ms = compute_percentiles(res.itl_ms);
  return s;
}

namespace {

nlohmann::json percentiles_json(const percentiles& p) {
  return {{"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"mean", p.mean}, {"max", p.max}, {"n", p.n}};
}

}  // namespace

nlohmann::json summary_json(const load_summary& s) {
  nlohmann::json j = {{"wall_s", s.wall_s},
                      {"requests_total", s.requests_total},
                      {"requests_ok", s.requests_ok},
                      {"completion_tokens", s.completion_tokens},
                      {"tok_per_s", s.tok_per_s},
                      {"req_per_s", s.req_per_s},
                      {"ttft_ms", percentiles_json(s.ttft_ms)},
                      {"itl_ms", percentiles_json(s.itl_ms)},
                      {"errors", s.errors}};
  if (s.cpu_s >= 0) {
    j["cpu_s"] = s.cpu_s;
    j["cpu_pct_of_wall"] = s.wall_s > 0 ? 100.0 * s.cpu_s / s.wall_s : 0.0;
  }
  if (s.server_cpu_s >= 0) {
    j["server_cpu_s"] = s.server_cpu_s;
    j["server_cpu_pct_of_wall"] = s.wall_s > 0 ? 100.0 * s.server_cpu_s / s.wall_s : 0.0;
  }
  return j;
}

std::string summary_text(const load_summary& s, const std::string& cpu_label) {
  char buf[512];
  std::string out;
  std::snprintf(buf, sizeof buf, "requests      %d ok of %d in %.2f s (%.2f req/s)\n", s.requests_ok, s.requests_total, s.wall_s,
                s.req_per_s);
  out += buf;
  std::snprintf(buf, sizeof buf, "throughput    %.2f generated tok/s (%lld tokens)\n", s.tok_per_s, s.completion_tokens);
  out += buf;
  std::snprintf(buf, sizeof buf, "TTFT ms       p50 %.1f  p90 %.1f  p99 %.1f  (mean %.1f, max %.1f, n %zu)\n", s.ttft_ms.p50,
                s.ttft_ms.p90, s.ttft_ms.p99, s.ttft_ms.mean, s.ttft_ms.max, s.ttft_ms.n);
  out += buf;
  std::snprintf(buf, sizeof buf, "ITL ms        p50 %.1f  p90 %.1f  p99 %.1f  (mean %.1f, max %.1f, n %zu)\n", s.itl_ms.p50,
                s.itl_ms.p90, s.itl_ms.p99, s.itl_ms.mean, s.itl_ms.max, s.itl_ms.n);
  out += buf;
  if (s.errors.empty()) {
    out += "errors        none\n";
  } else {
    for (auto& [what, n] : s.errors) {
      std::snprintf(buf, sizeof buf, "errors        %d x %s\n", n, what.c_str());
      out += buf;
    }
  }
  if (s.cpu_s >= 0) {
    std::snprintf(buf, sizeof buf, "%-13s %.2f s CPU (%.1f%% of one core over the window)\n", cpu_label.c_str(), s.cpu_s,
                  s.wall_s > 0 ? 100.0 * s.cpu_s / s.wall_s : 0.0);
    out += buf;
  }
  if (s.server_cpu_s >= 0) {
    std::snprintf(buf, sizeof buf, "server        %.2f s CPU (%.1f%% of one core over the window)\n", s.server_cpu_s,
                  s.wall_s > 0 ? 100.0 * s.server_cpu_s / s.wall_s : 0.0);
    out += buf;
  }
  return out;
}

double process_cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto sec = [](const timeval& tv) { return double(tv.tv_sec) + double(tv.tv_usec) * 1e-6; };
  return sec(ru.ru_utime) + sec(ru.ru_stime);
}

double pid_cpu_seconds(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return -1;
  // Fields after the parenthesised command name (which may hold spaces):
  // state is field 3; utime and stime are fields 14 and 15.
  const auto close = line.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  double utime = -1, stime = -1;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::atof(field.c_str());
    if (i == 15) stime = std::atof(field.c_str());
  }
  if (utime < 0 || stime < 0) return -1;
  return (utime + stime) / double(sysconf(_SC_CLK_TCK));
}

nlohmann::json load_average_json() {
  double l[3] = {-1, -1, -1};
  if (getloadavg(l, 3) != 3) l[0] = l[1] = l[2] = -1;
  return {l[0], l[1], l[2]};
}

}  // namespace cortex::load
