#include "actors/gateway_core/prometheus_text.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace cortex {

std::string prometheus_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

namespace {

std::string escape(std::string_view v, bool quote) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '"' && quote) out += "\\\"";
    else out += c;
  }
  return out;
}

}  // namespace

std::string prometheus_escape_label(std::string_view v) { return escape(v, true); }
std::string prometheus_escape_help(std::string_view v) { return escape(v, false); }

void prometheus_writer::family(std::string_view name, std::string_view type, std::string_view help) {
  text_.append("# HELP ").append(name).append(" ").append(prometheus_escape_help(help)).append("\n");
  text_.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void prometheus_writer::sample(std::string_view name, const label_set& labels, double value) {
  text_.append(name);
  if (!labels.empty()) {
    text_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i) text_ += ',';
      text_.append(labels[i].first).append("=\"").append(prometheus_escape_label(labels[i].second)).append("\"");
    }
    text_ += '}';
  }
  text_.append(" ").append(prometheus_number(value)).append("\n");
}

histogram::histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void histogram::observe_n(double v, uint64_t count) {
  if (count == 0 || std::isnan(v)) return;
  // The first bucket whose bound is >= v (le is inclusive); past the last: +Inf.
  const size_t b = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  counts_[b] += count;
  count_ += count;
  sum_ += v * static_cast<double>(count);
}

uint64_t histogram::cumulative(size_t i) const {
  uint64_t c = 0;
  for (size_t k = 0; k <= i && k < counts_.size(); ++k) c += counts_[k];
  return c;
}

void histogram::write(prometheus_writer& w, std::string_view name, const label_set& labels) const {
  const std::string base(name);
  label_set with_le = labels;
  with_le.emplace_back("le", "");
  uint64_t c = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    c += counts_[i];
    with_le.back().second = i < bounds_.size() ? prometheus_number(bounds_[i]) : "+Inf";
    w.sample(base + "_bucket", with_le, static_cast<double>(c));
  }
  w.sample(base + "_sum", labels, sum_);
  w.sample(base + "_count", labels, static_cast<double>(count_));
}

}  // namespace cortex
