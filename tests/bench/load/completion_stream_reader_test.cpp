// completion_stream_reader: server-sent events of a streamed completion,
// fed in arbitrary pieces, become the load events cortex_load times. The
// streams are written here after the two formats' documentation (OpenAI's
// completions chunks, llama.cpp server's README for POST /completion).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench/load/completion_stream_reader.hpp"

namespace cortex::load {
namespace {

// Feeds `body` in pieces of `piece` bytes (every split point is exercised
// across the sizes the tests use).
std::vector<load_event> read_all(const std::string& body, completion_format format, size_t piece) {
  completion_stream_reader reader(7, format);
  std::vector<load_event> out;
  for (size_t i = 0; i < body.size(); i += piece) reader.feed(std::string_view(body).substr(i, piece), load_clock::now(), out);
  EXPECT_TRUE(reader.done());
  return out;
}

TEST(completion_stream_reader, llama_server_counts_tokens_by_tokens_predicted) {
  // The server sends no event for a token whose text is incomplete UTF-8
  // (here the third): the next event's tokens_predicted jumps by two.
  const std::string body =
      "data: {\"index\":0,\"content\":\"Once\",\"tokens\":[9038],\"stop\":false,\"tokens_predicted\":1}\n\n"
      "data: {\"index\":0,\"content\":\"\",\"tokens\":[2501],\"stop\":false,\"tokens_predicted\":2}\n\n"
      "data: {\"index\":0,\"content\":\"\xc3\xa9\",\"tokens\":[169],\"stop\":false,\"tokens_predicted\":4}\n\n"
      "data: {\"index\":0,\"content\":\"\",\"tokens\":[],\"stop\":true,\"stop_type\":\"limit\",\"tokens_predicted\":4}\n\n";
  for (size_t piece : {size_t(1), size_t(7), body.size()}) {
    const auto ev = read_all(body, completion_format::llama_server, piece);
    ASSERT_EQ(ev.size(), 4u) << "piece " << piece;
    EXPECT_EQ(ev[0].what, load_event::kind::chunk);
    EXPECT_EQ(ev[0].n_tokens, 1);
    EXPECT_TRUE(ev[0].has_text);
    EXPECT_EQ(ev[1].n_tokens, 1);  // a token without text still counts
    EXPECT_EQ(ev[2].n_tokens, 2);
    EXPECT_EQ(ev[3].what, load_event::kind::finished);
    EXPECT_EQ(ev[3].reason, "length");
    EXPECT_EQ(ev[3].completion_tokens, 4);
    EXPECT_EQ(ev[3].request, 7);
  }
}

TEST(completion_stream_reader, llama_server_stop_types_and_errors) {
  auto finished_reason = [](const std::string& type) {
    const auto ev = read_all("data: {\"content\":\"\",\"tokens\":[],\"stop\":true,\"stop_type\":\"" + type +
                                 "\",\"tokens_predicted\":0}\n\n",
                             completion_format::llama_server, 5);
    return ev.empty() ? std::string("none") : ev.back().reason;
  };
  EXPECT_EQ(finished_reason("eos"), "stop");
  EXPECT_EQ(finished_reason("word"), "stop");
  EXPECT_EQ(finished_reason("limit"), "length");
  EXPECT_EQ(finished_reason("odd"), "odd");  // anything else is not a normal end (load_run says finished:odd)
  const auto err = read_all("data: {\"error\":{\"code\":500,\"message\":\"x\",\"type\":\"server_error\"}}\n\n",
                            completion_format::llama_server, 3);
  ASSERT_EQ(err.size(), 1u);
  EXPECT_EQ(err[0].what, load_event::kind::error);
  EXPECT_EQ(err[0].error_name, "server_error");
}

TEST(completion_stream_reader, openai_chunks_then_done) {
  const std::string body =
      "data: {\"choices\":[{\"text\":\"Once\",\"index\":0,\"logprobs\":{\"tokens\":[\"Once\"]},\"finish_reason\":null}]}\n\n"
      ": a comment\n\n"
      "data: {\"choices\":[{\"text\":\" upon a\",\"index\":0,\"logprobs\":{\"tokens\":[\" upon\",\" a\"]},\"finish_reason\":\"length\"}]}\n\n"
      "data: {\"choices\":[],\"usage\":{\"completion_tokens\":3}}\n\n"
      "data: [DONE]\n\n";
  const auto ev = read_all(body, completion_format::openai, 4);
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].n_tokens, 1);
  EXPECT_EQ(ev[1].n_tokens, 2);
  EXPECT_EQ(ev[2].what, load_event::kind::finished);
  EXPECT_EQ(ev[2].reason, "length");
  EXPECT_EQ(ev[2].completion_tokens, 3);
}

}  // namespace
}  // namespace cortex::load
