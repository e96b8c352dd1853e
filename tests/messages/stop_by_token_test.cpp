// The stop-token rule shared by the scheduler and the session.
#include <gtest/gtest.h>

#include "messages/request.hpp"

namespace cortex {
namespace {

TEST(stop_by_token, eos_and_stop_ids_after_min_tokens) {
  request_params p;
  p.stop_token_ids = {7};
  EXPECT_EQ(stop_by_token(p, true, 2, 1), token_stop::eos);
  EXPECT_EQ(stop_by_token(p, false, 7, 1), token_stop::token);
  EXPECT_EQ(stop_by_token(p, false, 8, 1), token_stop::none);
  p.min_tokens = 2;  // two tokens must precede a stopping one
  EXPECT_EQ(stop_by_token(p, true, 2, 2), token_stop::none);
  EXPECT_EQ(stop_by_token(p, false, 7, 2), token_stop::none);
  EXPECT_EQ(stop_by_token(p, false, 7, 3), token_stop::token);
  p.ignore_eos = true;
  EXPECT_EQ(stop_by_token(p, true, 2, 5), token_stop::none);
  EXPECT_EQ(stop_by_token(p, true, 7, 5), token_stop::token);
}

}  // namespace
}  // namespace cortex
