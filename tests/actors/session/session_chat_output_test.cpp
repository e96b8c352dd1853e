// session_core with a chat output format (request.output): the text after
// stop strings is read into content, reasoning and tool calls, streamed as
// typed chunk fields and summed up in finished (issue 27).
#include <gtest/gtest.h>

#include "actors/session/session_core.hpp"
#include "tests/actors/stories_tokenizer.hpp"

namespace cortex {
namespace {

using testing_support::stories_tokenizer;

struct run_result {
  std::string content, reasoning;
  std::vector<chat::tool_call> calls;
  request_finished fin;
};

// Runs the tokens of `text` through a session (one token per step), as the
// stories260K tokenizer writes it, then an EOS.
run_result run(const std::string& text, bool stream, chat_output_spec out) {
  generation_request r;
  r.client_id = "c";
  r.stream = stream;
  r.params.max_tokens = 1000;
  r.output = std::move(out);
  session_config cfg;
  cfg.rid = 3;
  cfg.request = r;
  double now = 0;
  session_core core(*stories_tokenizer(), cfg, [&] { return now; });
  core.on_scheduled(0);
  core.on_prefill_done();
  run_result res;
  auto take = [&](session_events ev) {
    if (ev.chunk) {
      res.content += ev.chunk->text;
      res.reasoning += ev.chunk->reasoning;
      for (const auto& d : ev.chunk->tool_calls) {
        EXPECT_EQ(d.index, res.calls.size());
        res.calls.push_back({d.id, d.name, d.arguments});
      }
    }
    if (ev.finished) {
      res.fin = *ev.finished;
      res.content += ev.finished->text;
      res.reasoning += ev.finished->reasoning;
      for (const auto& c : ev.finished->tool_calls) res.calls.push_back(c);
    }
  };
  for (int32_t id : stories_tokenizer()->encode(text, false)) {
    sampled_output o;
    o.rid = 3;
    o.token = id;
    take(core.on_tokens({o}));
  }
  sampled_output eos;
  eos.token = stories_tokenizer()->eos_id();
  take(core.on_tokens({eos}));
  EXPECT_TRUE(core.is_finished());
  return res;
}

chat_output_spec hermes_with_tools() {
  chat_output_spec o;
  o.active = true;
  o.format = "hermes";
  o.parse_tool_calls = true;
  o.think_tags = true;
  return o;
}

TEST(session_chat_output, CallsAndReasoningStreamedAndNot) {
  ASSERT_TRUE(stories_tokenizer());
  const std::string text =
      "<think>the cat wants milk</think>\n\nOk.\n<tool_call>\n{\"name\": \"get_milk\", \"arguments\": {\"cups\": 2}}\n</tool_call>";
  for (bool stream : {true, false}) {
    SCOPED_TRACE(stream ? "streamed" : "not streamed");
    run_result r = run(text, stream, hermes_with_tools());
    EXPECT_EQ(r.reasoning, "the cat wants milk");
    EXPECT_EQ(r.content, "Ok.");
    ASSERT_EQ(r.calls.size(), 1u);
    EXPECT_EQ(r.calls[0].name, "get_milk");
    EXPECT_EQ(r.calls[0].arguments, R"({"cups":2})");
    EXPECT_EQ(r.calls[0].id.rfind("call_", 0), 0u);
    EXPECT_TRUE(r.fin.has_tool_calls);
    EXPECT_EQ(r.fin.reason, finish_reason::stop);
  }
}

TEST(session_chat_output, PlainTextWithoutToolsIsContent) {
  ASSERT_TRUE(stories_tokenizer());
  chat_output_spec o = hermes_with_tools();
  o.parse_tool_calls = false;
  run_result r = run("Once upon a time <tool_call> is text here.", true, o);
  EXPECT_EQ(r.content, " Once upon a time <tool_call> is text here.");
  EXPECT_TRUE(r.calls.empty());
  EXPECT_FALSE(r.fin.has_tool_calls);
}

}  // namespace
}  // namespace cortex
