// A token bucket refilled continuously (auth.md "Limits"): it holds at most
// one minute's amount (so a fresh bucket may burst a full minute's worth)
// and gains per_minute / 60 000 tokens per millisecond. Plain value; the
// caller supplies the time and serialises access.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>

namespace cortex::auth {

class token_bucket {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  // A full bucket. REQUIRES: per_minute > 0.
  token_bucket(double per_minute, time_point now) : capacity_(per_minute), level_(per_minute), last_(now) {}

  // Milliseconds until the bucket holds `n` (0: it does now). REQUIRES: n <= capacity().
  uint64_t wait_ms(double n, time_point now) {
    refill(now);
    if (level_ >= n) return 0;
    const double per_ms = capacity_ / 60000.0;
    return static_cast<uint64_t>(std::ceil((n - level_) / per_ms));
  }
  // Takes `n`: after wait_ms(n, now) == 0 (an admission), or past empty
  // for tokens of a request already admitted; then the level goes negative,
  // a debt the refill pays back before anything else is admitted.
  void take(double n, time_point now) {
    refill(now);
    level_ -= n;
  }
  // Gives back `n` (never above the capacity).
  void refund(double n, time_point now) {
    refill(now);
    level_ = std::min(capacity_, level_ + n);
  }
  // A new per-minute amount (a reloaded tier): the level is kept, clamped to the new capacity.
  void set_per_minute(double per_minute, time_point now) {
    refill(now);
    capacity_ = per_minute;
    level_ = std::min(level_, capacity_);
  }

  double capacity() const { return capacity_; }
  double level(time_point now) {
    refill(now);
    return level_;
  }

 private:
  void refill(time_point now) {
    if (now <= last_) return;
    const double ms = std::chrono::duration<double, std::milli>(now - last_).count();
    level_ = std::min(capacity_, level_ + ms * capacity_ / 60000.0);
    last_ = now;
  }

  double capacity_;
  double level_;
  time_point last_;
};

}  // namespace cortex::auth
