// CORTEX_FAULTS parsing (actors/runtime/fault_plan.hpp): every fault, the
// empty plan, and the errors that name the bad item.
#include <cerrno>

#include <gtest/gtest.h>

#include "actors/runtime/fault_plan.hpp"

namespace cortex {
namespace {

TEST(fault_plan, empty_text_is_no_fault) {
  auto p = parse_fault_plan("");
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->any());
  EXPECT_FALSE(fault_plan{}.any());
}

TEST(fault_plan, parses_every_fault) {
  auto p = parse_fault_plan("executor_fail=3,executor_stall=2:1500,kv_pin=12,send_fail=7:EHOSTUNREACH,session_crash=4");
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_TRUE(p->any());
  EXPECT_EQ(p->executor_fail_step, 3u);
  EXPECT_EQ(p->executor_stall_step, 2u);
  EXPECT_EQ(p->executor_stall_ms, 1500u);
  EXPECT_EQ(p->kv_pinned_blocks, 12);
  EXPECT_EQ(p->send_fail_at, 7u);
  EXPECT_EQ(p->send_fail_errno, EHOSTUNREACH);
  EXPECT_EQ(p->session_crash_rid, 4u);
  auto q = parse_fault_plan("send_fail=1:EAGAIN");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->send_fail_errno, EAGAIN);
  EXPECT_EQ(q->executor_fail_step, 0u);
}

TEST(fault_plan, bad_items_are_named) {
  for (const char* bad : {"executor_fail", "executor_fail=0", "executor_fail=-1", "executor_fail=x", "executor_stall=2",
                          "executor_stall=2:0", "executor_stall=2:999999", "kv_pin=", "send_fail=3",
                          "send_fail=3:ENOENT", "session_crash=1e3", "frobnicate=1"}) {
    auto p = parse_fault_plan(std::string("kv_pin=1,") + bad);
    ASSERT_FALSE(p) << bad;
    EXPECT_EQ(p.error().code, errc::invalid_param) << bad;
    EXPECT_NE(p.error().message.find(bad), std::string::npos) << p.error().message;
    EXPECT_NE(p.error().message.find("CORTEX_FAULTS"), std::string::npos);
  }
}

}  // namespace
}  // namespace cortex
