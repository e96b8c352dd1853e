// Latency samples for stats percentiles: a bounded reservoir of the most
// recent samples (ring buffer), so memory stays fixed on a long-running server.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace cortex {

class latency_stats {
 public:
  explicit latency_stats(size_t capacity = 8192) : capacity_(capacity) {}
  void add(double ms) {
    if (samples_.size() < capacity_) {
      samples_.push_back(ms);
    } else {
      samples_[next_] = ms;
      next_ = (next_ + 1) % capacity_;
    }
  }
  // Nearest-rank percentile of the kept samples; 0 when there are none.
  double percentile(double p) const {
    if (samples_.empty()) return 0;
    std::vector<double> s = samples_;
    size_t k = static_cast<size_t>(p / 100.0 * static_cast<double>(s.size()));
    if (k >= s.size()) k = s.size() - 1;
    std::nth_element(s.begin(), s.begin() + static_cast<long>(k), s.end());
    return s[k];
  }
  size_t size() const { return samples_.size(); }

 private:
  size_t capacity_;
  size_t next_ = 0;
  std::vector<double> samples_;
};

}  // namespace cortex
