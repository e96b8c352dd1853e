// session_core on the real stories260K tokenizer: streamed text, stop
// strings with hold-back across tokens and multi-byte characters, EOS and
// min_tokens, stop ids, max_tokens, non-streaming results, exactly one
// terminal event, timings on an injected clock.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "actors/session/session_core.hpp"
#include "tests/actors/stories_tokenizer.hpp"

namespace cortex {
namespace {

using testing_support::stories_tokenizer;

const std::string k_story = "Once upon a time, there was a little girl named Lily. She loved to play outside.";

// Local UTF-8 check, independent of the code under test.
bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

sampled_output tok(int32_t id) {
  sampled_output o;
  o.rid = 7;
  o.token = id;
  o.logprob.id = id;
  o.logprob.lp = -0.5f;
  o.logprob.top_ids = {id, 3, 4};
  o.logprob.top_lps = {-0.5f, -1.0f, -2.0f};
  return o;
}

struct harness {
  double now = 100;
  session_core core;
  std::vector<request_chunk> chunks;
  std::vector<request_finished> finished;

  harness(generation_request req, uint32_t n_tokens_prompt = 5)
      : core(*stories_tokenizer(), config_of(std::move(req), n_tokens_prompt), [this] { return now; }) {}

  static session_config config_of(generation_request req, uint32_t n_tokens_prompt) {
    session_config c;
    c.rid = 7;
    c.request = std::move(req);
    c.n_tokens_prompt = n_tokens_prompt;
    return c;
  }

  void collect(session_events ev) {
    if (ev.chunk) chunks.push_back(*ev.chunk);
    if (ev.finished) finished.push_back(*ev.finished);
  }
  void start() {
    EXPECT_TRUE(core.on_scheduled(0));
    EXPECT_TRUE(core.on_prefill_done());
  }
  // One token per step, until the session ends or the ids run out.
  void run(const std::vector<int32_t>& ids) {
    for (int32_t id : ids) {
      if (core.is_finished()) break;
      collect(core.on_tokens({tok(id)}));
    }
  }
  std::string streamed() const {
    std::string s;
    for (const auto& c : chunks) s += c.text;
    return s;
  }
  std::string all_text() const { return streamed() + (finished.empty() ? "" : finished.back().text); }
};

generation_request request(uint32_t max_tokens = 256) {
  generation_request r;
  r.client_id = "req-1";
  r.params.max_tokens = max_tokens;
  r.tags["user"] = "test";
  return r;
}

std::vector<int32_t> encode(const std::string& text) { return stories_tokenizer()->encode(text, false); }

// Byte offsets in `text` where tokens of `ids` end (pieces as the streaming
// detokenizer renders them after the prompt: " " + text for SPM).
std::vector<size_t> token_ends(const std::vector<int32_t>& ids) {
  std::vector<size_t> ends;
  size_t n = 0;
  for (int32_t id : ids) ends.push_back(n += stories_tokenizer()->token_to_piece(id).size());
  return ends;
}

TEST(session_core, streamed_chunks_concatenate_to_the_text) {
  ASSERT_TRUE(stories_tokenizer());
  const auto ids = encode(k_story);
  ASSERT_EQ(stories_tokenizer()->decode(ids), k_story);
  harness h(request(static_cast<uint32_t>(ids.size())));
  h.start();
  h.run(ids);
  ASSERT_EQ(h.finished.size(), 1u);
  EXPECT_EQ(h.finished[0].reason, finish_reason::length);
  EXPECT_EQ(h.finished[0].completion_tokens, ids.size());
  // Generated text continues a prompt: the first token keeps its space.
  EXPECT_EQ(h.all_text(), " " + k_story);
  EXPECT_EQ(h.chunks.size(), ids.size());  // no stop strings: one chunk per token
  for (const auto& c : h.chunks) {
    EXPECT_TRUE(c.token_ids.empty());  // not asked
    EXPECT_TRUE(c.logprobs.empty());
    EXPECT_EQ(c.rid, 7u);
    EXPECT_EQ(c.client_id, "req-1");
  }
  EXPECT_EQ(h.finished[0].tags.at("user"), "test");
  EXPECT_EQ(h.core.state(), session_state::finished);
}

TEST(session_core, stop_string_split_across_tokens_is_held_back_and_removed) {
  ASSERT_TRUE(stories_tokenizer());
  const auto ids = encode(k_story);
  const std::string rendered = " " + k_story;
  const std::string stop = "girl named";
  const size_t stop_begin = rendered.find(stop), stop_end = stop_begin + stop.size();
  const auto ends = token_ends(ids);
  // Precondition: the stop string spans several tokens.
  size_t first_tok = 0, last_tok = 0;
  while (ends[first_tok] <= stop_begin) ++first_tok;
  while (ends[last_tok] < stop_end) ++last_tok;
  ASSERT_LT(first_tok, last_tok);

  auto req = request();
  req.params.stop = {"cat", stop};
  req.want_token_ids = true;
  harness h(req);
  h.start();
  for (size_t i = 0; i < ids.size() && !h.core.is_finished(); ++i) {
    h.collect(h.core.on_tokens({tok(ids[i])}));
    // Ids are never held back; text inside the stop string never comes out.
    ASSERT_FALSE(h.chunks.empty());
    EXPECT_EQ(h.chunks.back().token_ids, std::vector<int32_t>{ids[i]});
    EXPECT_LE(h.streamed().size(), stop_begin);
    if (i >= first_tok && i < last_tok) {
      EXPECT_FALSE(h.core.held_text().empty()) << "token " << i;
    }
  }
  ASSERT_EQ(h.finished.size(), 1u);
  const auto& f = h.finished[0];
  EXPECT_EQ(f.reason, finish_reason::stop);
  EXPECT_EQ(f.stop_kind, "string");
  EXPECT_EQ(f.stop_value, stop);
  EXPECT_EQ(f.completion_tokens, last_tok + 1);
  EXPECT_EQ(f.text, "");
  EXPECT_EQ(h.all_text(), rendered.substr(0, stop_begin));
}

TEST(session_core, stop_string_that_does_not_match_is_released) {
  ASSERT_TRUE(stories_tokenizer());
  const auto ids = encode(k_story);
  const std::string rendered = " " + k_story;
  auto req = request(static_cast<uint32_t>(ids.size()));
  req.params.stop = {"little boy"};  // the text has "little girl"
  harness h(req);
  h.start();
  bool held_some = false;
  std::string so_far;
  for (int32_t id : ids) {
    if (h.core.is_finished()) break;
    h.collect(h.core.on_tokens({tok(id)}));
    held_some = held_some || !h.core.held_text().empty();
    // What came out plus what is held is always a prefix of the text.
    const std::string known = h.streamed() + h.core.held_text();
    EXPECT_EQ(rendered.compare(0, known.size(), known), 0) << known;
  }
  EXPECT_TRUE(held_some);
  ASSERT_EQ(h.finished.size(), 1u);
  EXPECT_EQ(h.finished[0].reason, finish_reason::length);
  EXPECT_EQ(h.all_text(), rendered);
}

TEST(session_core, multibyte_characters_split_over_byte_tokens_are_never_cut) {
  ASSERT_TRUE(stories_tokenizer());
  const std::string text = "Lily said caf\xC3\xA9 and \xE6\x97\xA5\xE6\x9C\xAC and \xF0\x9F\x99\x82!";
  const auto ids = encode(text);
  // Precondition: byte fallback splits characters (single tokens that are not UTF-8).
  int n_partial = 0;
  for (int32_t id : ids) n_partial += !valid_utf8(stories_tokenizer()->token_to_piece(id));
  ASSERT_GE(n_partial, 6);
  harness h(request(static_cast<uint32_t>(ids.size())));
  h.start();
  h.run(ids);
  for (const auto& c : h.chunks) EXPECT_TRUE(valid_utf8(c.text)) << c.text;
  EXPECT_LT(h.chunks.size(), ids.size());  // steps inside a character give no chunk
  EXPECT_EQ(h.all_text(), " " + text);
}

TEST(session_core, multibyte_stop_string_over_byte_tokens) {
  ASSERT_TRUE(stories_tokenizer());
  const std::string text = "Lily said \xE6\x97\xA5\xE6\x9C\xAC is far.";
  const auto ids = encode(text);
  auto req = request();
  req.params.stop = {"\xE6\x97\xA5\xE6\x9C\xAC"};
  harness h(req);
  h.start();
  h.run(ids);
  ASSERT_EQ(h.finished.size(), 1u);
  EXPECT_EQ(h.finished[0].stop_kind, "string");
  EXPECT_EQ(h.all_text(), " Lily said ");
}

TEST(session_core, min_tokens_suppresses_eos_until_enough_tokens) {
  ASSERT_TRUE(stories_tokenizer());
  const int32_t eos = stories_tokenizer()->eos_id();
  ASSERT_TRUE(stories_tokenizer()->is_eog(eos));
  const auto ids = encode("Once upon a time");
  ASSERT_GE(ids.size(), 3u);
  const std::vector<int32_t> stream = {ids[0], ids[1], eos, ids[2], eos, ids[3]};
  {
    auto req = request();
    req.params.min_tokens = 3;  // the first EOS has only 2 tokens before it
    harness h(req);
    h.start();
    h.run(stream);
    ASSERT_EQ(h.finished.size(), 1u);
    EXPECT_EQ(h.finished[0].reason, finish_reason::stop);
    EXPECT_EQ(h.finished[0].stop_kind, "eos");
    EXPECT_EQ(h.finished[0].stop_value, std::to_string(eos));
    EXPECT_EQ(h.finished[0].completion_tokens, 5u);
    EXPECT_EQ(h.all_text(), " " + stories_tokenizer()->decode({ids[0], ids[1], ids[2]}));
  }
  {
    auto req = request();
    req.params.min_tokens = 2;
    harness h(req);
    h.start();
    h.run(stream);
    ASSERT_EQ(h.finished.size(), 1u);
    EXPECT_EQ(h.finished[0].stop_kind, "eos");
    EXPECT_EQ(h.finished[0].completion_tokens, 3u);
  }
  {
    auto req = request(5);
    req.params.ignore_eos = true;
    harness h(req);
    h.start();
    h.run(stream);
    ASSERT_EQ(h.finished.size(), 1u);
    EXPECT_EQ(h.finished[0].reason, finish_reason::length);
    EXPECT_EQ(h.finished[0].completion_tokens, 5u);
  }
}

TEST(session_core, stop_token_id_ends_without_its_text) {
  ASSERT_TRUE(stories_tokenizer());
  const auto ids = encode("Once upon a time");
  ASSERT_GE(ids.size(), 4u);
  auto req = request();
  req.params.stop_token_ids = {ids[2]};
  req.want_token_ids = true;
  harness h(req);
  h.start();
  h.run(ids);
  ASSERT_EQ(h.finished.size(), 1u);
  EXPECT_EQ(h.finished[0].stop_kind, "token");
  EXPECT_EQ(h.finished[0].stop_value, std::to_string(ids[2]));
  EXPECT_EQ(h.all_text(), " " + stories_tokenizer()->decode({ids[0], ids[1]}));
  std::vector<int32_t> streamed_ids;
  for (const auto& c : h.chunks) streamed_ids.insert(streamed_ids.end(), c.token_ids.begin(), c.token_ids.end());
  EXPECT_EQ(streamed_ids, (std::vector<int32_t>{ids[0], ids[1], ids[2]}));  // the stop id is reported
}

TEST(session_core, max_tokens_gives_length_and_drops_later_tokens_of_the_step) {
  ASSERT_TRUE(stories_tokenizer());
  const auto ids = encode("Once upon a time, there was");
  ASSERT_GE(ids.size(), 5u);
  auto req = request(3);
  req.want_token_ids = true;
  harness h(req);
  h.start();
  std::vector<sampled_output> step;
  for (int32_t id : ids) step.push_back(tok(id));
  h.collect(h.core.on_tokens(step));  // one step with more tokens than allowed
  ASSERT_EQ(h.finished.size(), 1u);
  EXPECT_EQ(h.finished[0].reason, finish_reason::length);
  EXPECT_EQ(h.finished[0].completion_tokens, 3u);
  ASSERT_EQ(h.chunks.size(), 1u);
  EXPECT_EQ(h.chunks[0].token_ids, (std::vector<int32_t>{ids[0], ids[1], ids[2]}));
  EXPECT_EQ(h.all_text(), " " + stories_tokenizer()->decode({ids[0], ids[1], ids[2]}));
}

TEST(session_core, not_streaming_gives_everything_in_finished) {
  ASSERT_TRUE(stories_tokenizer());
  const auto ids = encode(k_story);
  auto req = request();
  req.stream = false;
  req.want_token_ids = true;
  req.n_logprobs = 2;
  req.params.stop = {"She loved"};
  harness h(req);
  h.start();
  h.run(ids);
  EXPECT_TRUE(h.chunks.empty());
  ASSERT_EQ(h.finished.size(), 1u);
  const auto& f = h.finished[0];
  EXPECT_EQ(f.reason, finish_reason::stop);
  const std::string rendered = " " + k_story;
  EXPECT_EQ(f.text, rendered.substr(0, rendered.find("She loved")));
  ASSERT_EQ(f.token_ids.size(), f.completion_tokens);
  EXPECT_EQ(f.token_ids, std::vector<int32_t>(ids.begin(), ids.begin() + f.completion_tokens));
  ASSERT_EQ(f.logprobs.size(), f.completion_tokens);
  EXPECT_EQ(f.logprobs[0].id, ids[0]);
  EXPECT_EQ(f.logprobs[0].top_ids.size(), 2u);  // trimmed to want.logprobs
}

TEST(session_core, want_text_false_sends_only_ids) {
  ASSERT_TRUE(stories_tokenizer());
  const auto ids = encode("Once upon a time");
  auto req = request(static_cast<uint32_t>(ids.size()));
  req.want_text = false;
  req.want_token_ids = true;
  harness h(req);
  h.start();
  h.run(ids);
  EXPECT_EQ(h.all_text(), "");
  EXPECT_EQ(h.chunks.size(), ids.size());
}

TEST(session_core, exactly_one_terminal_event) {
  ASSERT_TRUE(stories_tokenizer());
  const auto ids = encode("Once upon a time");
  harness h(request(2));
  h.start();
  h.run(ids);  // ends with length after 2 tokens
  ASSERT_EQ(h.finished.size(), 1u);
  auto again = h.core.finish(finish_reason::cancelled);
  EXPECT_FALSE(again.applied);
  EXPECT_FALSE(again.finished);
  auto late = h.core.on_tokens({tok(ids[2])});
  EXPECT_FALSE(late.applied);
  EXPECT_FALSE(late.chunk);
  EXPECT_FALSE(late.finished);
  EXPECT_FALSE(h.core.on_scheduled(0));
  EXPECT_FALSE(h.core.on_prefill_done());
  EXPECT_FALSE(h.core.check_deadline().applied);
  EXPECT_FALSE(h.core.on_update(session_update{}).applied);
  EXPECT_EQ(h.core.n_tokens_generated(), 2u);

  harness c(request());
  auto first = c.core.finish(finish_reason::cancelled);
  EXPECT_TRUE(first.applied);
  ASSERT_TRUE(first.finished);
  EXPECT_EQ(first.finished->reason, finish_reason::cancelled);
  EXPECT_EQ(first.finished->stop_kind, "");
  EXPECT_FALSE(c.core.finish(finish_reason::shutdown).finished);
}

TEST(session_core, cancel_releases_held_back_text) {
  ASSERT_TRUE(stories_tokenizer());
  const auto ids = encode("a little girl named Lily");
  auto req = request();
  req.params.stop = {"Lily!"};
  harness h(req);
  h.start();
  h.run(ids);
  ASSERT_FALSE(h.core.held_text().empty());
  h.collect(h.core.finish(finish_reason::cancelled));
  ASSERT_EQ(h.finished.size(), 1u);
  EXPECT_EQ(h.finished[0].reason, finish_reason::cancelled);
  EXPECT_EQ(h.finished[0].text, "Lily");
  EXPECT_EQ(h.all_text(), " a little girl named Lily");
}

TEST(session_core, error_end_carries_the_report) {
  ASSERT_TRUE(stories_tokenizer());
  harness h(request());
  h.start();
  status e;
  e.code = errc::internal;
  e.message = "step 12 failed";
  h.collect(h.core.finish(finish_reason::error, e));
  ASSERT_EQ(h.finished.size(), 1u);
  EXPECT_EQ(h.finished[0].reason, finish_reason::error);
  EXPECT_EQ(h.finished[0].error.code, errc::internal);
  EXPECT_EQ(h.finished[0].error.message, "step 12 failed");
}

TEST(session_core, timings_usage_and_states_on_an_injected_clock) {
  ASSERT_TRUE(stories_tokenizer());
  const auto ids = encode("Once upon a time, there was");
  ASSERT_GE(ids.size(), 5u);
  harness h(request(5), /*prompt_tokens=*/12);  // accepted at t = 100
  EXPECT_EQ(h.core.state(), session_state::queued);
  h.now = 110;
  session_update u;
  u.rid = 7;
  u.started = true;
  u.cached_tokens = 8;
  h.collect(h.core.on_update(u));
  EXPECT_EQ(h.core.state(), session_state::prefilling);
  h.now = 130;
  u = session_update{};
  u.prefill_done = true;
  u.tokens = {tok(ids[0])};
  h.collect(h.core.on_update(u));
  EXPECT_EQ(h.core.state(), session_state::decoding);
  for (int i = 1; i < 5; ++i) {
    h.now = 130 + 10 * i;
    u = session_update{};
    u.preemptions = i >= 3 ? 1 : 0;
    u.tokens = {tok(ids[static_cast<size_t>(i)])};
    h.collect(h.core.on_update(u));
  }
  ASSERT_EQ(h.finished.size(), 1u);
  const auto& f = h.finished[0];
  EXPECT_EQ(f.reason, finish_reason::length);
  EXPECT_EQ(f.prompt_tokens, 12u);
  EXPECT_EQ(f.cached_tokens, 8u);
  EXPECT_EQ(f.completion_tokens, 5u);
  EXPECT_EQ(f.preemptions, 1u);
  EXPECT_DOUBLE_EQ(f.timings.queue_ms, 10);
  EXPECT_DOUBLE_EQ(f.timings.prefill_ms, 20);
  EXPECT_DOUBLE_EQ(f.timings.ttft_ms, 30);
  EXPECT_DOUBLE_EQ(f.timings.decode_ms, 40);
  EXPECT_DOUBLE_EQ(f.timings.total_ms, 70);
  EXPECT_DOUBLE_EQ(f.timings.tokens_per_s, 100);  // 4 tokens after the first in 40 ms
}

TEST(session_core, cancel_while_queued_counts_all_time_as_queue) {
  ASSERT_TRUE(stories_tokenizer());
  harness h(request());
  h.now = 125;
  h.collect(h.core.finish(finish_reason::cancelled));
  ASSERT_EQ(h.finished.size(), 1u);
  EXPECT_DOUBLE_EQ(h.finished[0].timings.queue_ms, 25);
  EXPECT_DOUBLE_EQ(h.finished[0].timings.total_ms, 25);
  EXPECT_DOUBLE_EQ(h.finished[0].timings.ttft_ms, 0);
  EXPECT_EQ(h.finished[0].completion_tokens, 0u);
}

TEST(session_core, deadline_counts_from_acceptance) {
  ASSERT_TRUE(stories_tokenizer());
  auto req = request();
  req.deadline_ms = 50;
  harness h(req);
  ASSERT_TRUE(h.core.deadline_at_ms());
  EXPECT_DOUBLE_EQ(*h.core.deadline_at_ms(), 150);
  h.now = 149;
  auto early = h.core.check_deadline();
  EXPECT_TRUE(early.applied);
  EXPECT_FALSE(early.finished);
  h.now = 150;
  h.collect(h.core.check_deadline());
  ASSERT_EQ(h.finished.size(), 1u);
  EXPECT_EQ(h.finished[0].reason, finish_reason::deadline);
  harness none(request());
  EXPECT_FALSE(none.core.deadline_at_ms());
}

TEST(session_core, illegal_transitions_assert_in_debug_and_are_ignored_in_release) {
  ASSERT_TRUE(stories_tokenizer());
  harness h(request());
  EXPECT_DEBUG_DEATH(EXPECT_FALSE(h.core.on_prefill_done()), "queued");
  EXPECT_EQ(h.core.state(), session_state::queued);
  ASSERT_TRUE(h.core.on_scheduled(0));
  EXPECT_DEBUG_DEATH(EXPECT_FALSE(h.core.on_scheduled(3)), "not queued");
  EXPECT_EQ(h.core.state(), session_state::prefilling);
}

}  // namespace
}  // namespace cortex
