// Fault injection for tests (issue 11): which faults a test server injects.
// cortexd reads it from the environment variable CORTEX_FAULTS (unset or
// empty: off); embedding programs and actor tests set runtime_config::faults.
// Off by default; when off every hook is one compare of a zero field on a
// path that already branches (no allocation, no lookup, no lock).
//
// CORTEX_FAULTS is a comma-separated list of NAME=VALUE:
//   executor_fail=N          engine step N (1-based, every step counts) fails
//                            as if the model had thrown: each request in it
//                            ends with error 500 internal.
//   executor_stall=N:MS      engine step N first sleeps MS milliseconds (the
//                            executor hangs; health, deadlines and cancels of
//                            queued requests must still be served).
//   kv_pin=B                 B blocks of the KV pool are taken at start and
//                            never freed: a request that needs more than the
//                            rest ends with error 500 (pool exhausted).
//   send_fail=N:ERRNO        the gateway's N-th ZeroMQ send (1-based) fails with
//                            ERRNO, EAGAIN (the frame is queued and sent
//                            later) or EHOSTUNREACH (the peer counts as gone:
//                            its requests end with client_gone).
//   session_crash=RID        the session of request RID (server-side ids
//                            count from 1 in admission order) throws on its
//                            first engine update: its request ends with
//                            error 500 internal.
// Thread: plain data; copy it where needed.
#pragma once

#include <cstdint>
#include <string>

#include "messages/request.hpp"  // request_id
#include "base/expected.hpp"

namespace cortex {

struct fault_plan {
  uint64_t executor_fail_step = 0;   // 0: off
  uint64_t executor_stall_step = 0;  // 0: off
  uint32_t executor_stall_ms = 0;
  int32_t kv_pinned_blocks = 0;
  uint64_t send_fail_at = 0;  // 0: off
  int send_fail_errno = 0;
  request_id session_crash_rid = 0;  // 0: off

  bool any() const {
    return executor_fail_step || executor_stall_step || kv_pinned_blocks || send_fail_at || session_crash_rid;
  }
};

// Parses CORTEX_FAULTS' syntax (above). Empty text: no fault. An unknown
// name or a bad value is invalid_param naming it and the accepted syntax.
expected<fault_plan> parse_fault_plan(const std::string& text);

}  // namespace cortex
