// session_core for an embed request: the update carrying the embedding ends
// the request at once with stop, the embedding, prompt usage and no
// completion tokens or text; a later finish from the scheduler is ignored.
#include <gtest/gtest.h>

#include <vector>

#include "actors/session/session_core.hpp"
#include "tests/actors/stories_tokenizer.hpp"

namespace cortex {
namespace {

TEST(session_embed, the_embedding_update_ends_the_request_once) {
  ASSERT_TRUE(testing_support::stories_tokenizer());
  generation_request req;
  req.client_id = "e";
  req.kind = request_kind::embed;
  double now = 10;
  session_core core(*testing_support::stories_tokenizer(), session_config{3, req, 12}, [&] { return now; });

  session_update started;
  started.rid = 3;
  started.started = true;
  EXPECT_TRUE(core.on_update(started).applied);
  now = 15;
  session_update chunk;  // a prompt chunk that does not complete it: nothing to report
  chunk.rid = 3;
  const auto mid = core.on_update(chunk);
  EXPECT_FALSE(mid.finished);
  EXPECT_FALSE(mid.chunk);

  now = 20;
  session_update done;
  done.rid = 3;
  done.prefill_done = true;
  done.embedding = {0.6f, 0.8f};
  const auto ev = core.on_update(done);
  ASSERT_TRUE(ev.finished);
  EXPECT_FALSE(ev.chunk);
  EXPECT_TRUE(core.is_finished());
  const request_finished& f = *ev.finished;
  EXPECT_EQ(f.reason, finish_reason::stop);
  EXPECT_EQ(f.embedding, (std::vector<float>{0.6f, 0.8f}));
  EXPECT_EQ(f.prompt_tokens, 12u);
  EXPECT_EQ(f.completion_tokens, 0u);
  EXPECT_TRUE(f.text.empty());
  EXPECT_DOUBLE_EQ(f.timings.total_ms, 10.0);

  EXPECT_FALSE(core.finish(finish_reason::stop).finished) << "exactly one terminal event";
}

}  // namespace
}  // namespace cortex
