// Prometheus text exposition format 0.0.4 (what GET /metrics serves, with
// `Content-Type: text/plain; version=0.0.4`): a writer for HELP / TYPE lines
// and samples, and a histogram with fixed buckets. CAF-free; nothing throws.
// Not thread-safe (metrics_registry locks around them).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cortex {

// Label pairs in the order written: {{"endpoint", "chat_completions"}, ...}.
using label_set = std::vector<std::pair<std::string, std::string>>;

// A sample value: shortest round-trip decimal ("3", "0.25", "1e-05"),
// "+Inf", "-Inf" or "NaN".
std::string prometheus_number(double v);
// Label values escape backslash, double quote and newline; HELP text
// escapes backslash and newline.
std::string prometheus_escape_label(std::string_view v);
std::string prometheus_escape_help(std::string_view v);

class prometheus_writer {
 public:
  // "# HELP <name> <help>\n# TYPE <name> <type>\n"; type is counter, gauge,
  // histogram (or summary, untyped). Call once per family, before its samples.
  void family(std::string_view name, std::string_view type, std::string_view help);
  // `<name>{<k>="<v>",...} <value>\n` (no braces without labels).
  // REQUIRES: name and label names match [a-zA-Z_:][a-zA-Z0-9_:]*.
  void sample(std::string_view name, const label_set& labels, double value);
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// Counts of observations per bucket, with their sum (seconds, tokens...).
class histogram {
 public:
  // REQUIRES: upper_bounds finite and strictly increasing; +Inf is implicit.
  explicit histogram(std::vector<double> upper_bounds);

  void observe(double v) { observe_n(v, 1); }
  // `count` observations of `v` at once (sum grows by v * count).
  void observe_n(double v, uint64_t count);

  const std::vector<double>& upper_bounds() const { return bounds_; }
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }
  // Observations <= upper_bounds()[i] (cumulative, as Prometheus counts them).
  uint64_t cumulative(size_t i) const;

  // <name>_bucket{labels..., le="<bound>"} for each bound and "+Inf", then
  // <name>_sum and <name>_count. The family line is the caller's.
  void write(prometheus_writer& w, std::string_view name, const label_set& labels = {}) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; one more for +Inf
  uint64_t count_ = 0;
  double sum_ = 0;
};

}  // namespace cortex
