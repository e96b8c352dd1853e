// The one status <-> caf::error conversion: our code and message survive the
// round trip; CAF's own errors become internal with their text and the
// caller's context.
#include <gtest/gtest.h>

#include <caf/sec.hpp>

#include "messages/caf_status.hpp"

namespace cortex {
namespace {

TEST(caf_status, round_trip_keeps_code_and_message) {
  for (const errc code : {errc::duplicate_id, errc::context_overflow, errc::internal, errc::overloaded}) {
    const status s = fail(code, "what went wrong");
    const caf::error e = to_caf_error(s);
    ASSERT_TRUE(static_cast<bool>(e));
    EXPECT_EQ(e.category(), caf::atom("cortex"));
    const status back = to_status(e, "executor");
    EXPECT_EQ(back.code, code) << errc_name(code);
    EXPECT_EQ(back.message, "executor: what went wrong");
  }
}

TEST(caf_status, other_categories_become_internal) {
  const status s = to_status(caf::make_error(caf::sec::request_receiver_down), "executor unreachable");
  EXPECT_EQ(s.code, errc::internal);
  EXPECT_EQ(s.message.rfind("executor unreachable: ", 0), 0u) << s.message;
  EXPECT_GT(s.message.size(), std::string("executor unreachable: ").size());
}

TEST(caf_status, no_error_is_ok) {
  EXPECT_TRUE(to_status(caf::error{}, "x").is_ok());
}

}  // namespace
}  // namespace cortex
