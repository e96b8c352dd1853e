// seq_request_of: what the scheduler takes from an admitted request
// (actors/scheduler/sequence.hpp).
#include <gtest/gtest.h>

#include "actors/scheduler/sequence.hpp"

namespace cortex {
namespace {

sequence_admission admission(uint32_t max_tokens) {
  sequence_admission a;
  a.rid = 42;
  a.priority = 3;
  a.tokens_prompt = {5, 6, 7};
  a.params.max_tokens = max_tokens;
  return a;
}

const spec_config server_default{2, 4};

TEST(seq_request_of, copies_the_request_and_takes_the_servers_speculation_by_default) {
  const seq_request r = seq_request_of(admission(16), server_default, false);
  EXPECT_EQ(r.rid, 42u);
  EXPECT_EQ(r.priority, 3);
  EXPECT_EQ(r.tokens_prompt, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(r.max_tokens, 16);
  EXPECT_FALSE(r.embed);
  EXPECT_EQ(r.spec.ngram, 2);
  EXPECT_EQ(r.spec.max_draft, 4);
}

TEST(seq_request_of, the_requests_own_speculation_wins_even_when_it_turns_it_off) {
  sequence_admission a = admission(16);
  a.params.spec_given = true;
  a.params.spec_ngram = 5;
  a.params.spec_max_draft = 9;
  seq_request r = seq_request_of(a, server_default, false);
  EXPECT_EQ(r.spec.ngram, 5);
  EXPECT_EQ(r.spec.max_draft, 9);
  a.params.spec_max_draft = 0;
  r = seq_request_of(a, server_default, false);
  EXPECT_FALSE(r.spec.on());
}

TEST(seq_request_of, no_speculation_for_embeddings_single_tokens_or_recurrent_models) {
  sequence_admission embed = admission(16);
  embed.kind = request_kind::embed;
  const seq_request e = seq_request_of(embed, server_default, false);
  EXPECT_TRUE(e.embed);
  EXPECT_FALSE(e.spec.on());
  EXPECT_FALSE(seq_request_of(admission(1), server_default, false).spec.on());
  EXPECT_FALSE(seq_request_of(admission(16), server_default, true).spec.on());
}

TEST(seq_request_of, max_tokens_is_at_least_one) {
  EXPECT_EQ(seq_request_of(admission(0), server_default, false).max_tokens, 1);
}

}  // namespace
}  // namespace cortex
