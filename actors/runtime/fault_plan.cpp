#include "actors/runtime/fault_plan.hpp"

#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace cortex {

namespace {

constexpr const char* k_syntax =
    "CORTEX_FAULTS is a comma-separated list of executor_fail=N, executor_stall=N:MS, kv_pin=B, "
    "send_fail=N:EAGAIN|EHOSTUNREACH, session_crash=RID (N, MS, B, RID positive integers)";

// A positive decimal integer (no sign, no spaces), at most `max`.
bool parse_positive(const std::string& s, uint64_t max, uint64_t& out) {
  if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos) return false;
  out = std::strtoull(s.c_str(), nullptr, 10);
  return out >= 1 && out <= max;
}

status bad(const std::string& item, const char* what) {
  return fail(errc::invalid_param, "CORTEX_FAULTS item '" + item + "': " + what + "; " + k_syntax);
}

}  // namespace

expected<fault_plan> parse_fault_plan(const std::string& text) {
  fault_plan p;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos) return bad(item, "expected NAME=VALUE");
    const std::string name = item.substr(0, eq), value = item.substr(eq + 1);
    const auto colon = value.find(':');
    const std::string first = value.substr(0, colon), second = colon == std::string::npos ? "" : value.substr(colon + 1);
    uint64_t n = 0, m = 0;
    if (name == "executor_fail") {
      if (!parse_positive(value, UINT64_MAX >> 1, n)) return bad(item, "N must be a positive integer");
      p.executor_fail_step = n;
    } else if (name == "executor_stall") {
      if (!parse_positive(first, UINT64_MAX >> 1, n) || !parse_positive(second, 600000, m))
        return bad(item, "expected N:MS with MS at most 600000");
      p.executor_stall_step = n;
      p.executor_stall_ms = static_cast<uint32_t>(m);
    } else if (name == "kv_pin") {
      if (!parse_positive(value, 1 << 24, n)) return bad(item, "B must be a positive integer");
      p.kv_pinned_blocks = static_cast<int32_t>(n);
    } else if (name == "send_fail") {
      if (!parse_positive(first, UINT64_MAX >> 1, n)) return bad(item, "expected N:EAGAIN or N:EHOSTUNREACH");
      if (second == "EAGAIN") {
        p.send_fail_errno = EAGAIN;
      } else if (second == "EHOSTUNREACH") {
        p.send_fail_errno = EHOSTUNREACH;
      } else {
        return bad(item, "the errno must be EAGAIN or EHOSTUNREACH");
      }
      p.send_fail_at = n;
    } else if (name == "session_crash") {
      if (!parse_positive(value, UINT64_MAX >> 1, n)) return bad(item, "RID must be a positive integer");
      p.session_crash_rid = n;
    } else {
      return bad(item, "unknown fault");
    }
  }
  return p;
}

}  // namespace cortex
