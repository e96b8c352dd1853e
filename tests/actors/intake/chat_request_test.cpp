// Intake's chat path: a request with `messages` is rendered with the chat
// setup's template and tokenized (one BOS), carries the template's
// end-of-turn tokens as stop ids, and every problem is a 400 naming what to
// fix. Real vocabulary (../golden/tokenizer/vocab, Llama 3) and real
// template (../golden/chat, llama3_1).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "actors/intake/chat_setup.hpp"
#include "model/model.hpp"
#include "actors/intake/request_validator.hpp"
#include "chat/model_chat.hpp"
#include "tests/support/golden.hpp"

namespace cortex {
namespace {

struct chat_request_test : ::testing::Test {
  std::unique_ptr<model> m;
  chat_setup chat;
  void SetUp() override {
    CORTEX_NEEDS_REFERENCE_DATA();
    auto loaded = model::load_vocab_only(testing::shared_dir() + "/golden/tokenizer/vocab/ggml-vocab-llama3.gguf");
    ASSERT_TRUE(loaded) << loaded.error();
    m = std::move(*loaded);
    const std::string text = testing::read_file(testing::shared_dir() + "/golden/chat/templates/llama3_1.jinja");
    auto t = chat_template::parse(text);
    ASSERT_TRUE(t) << t.error();
    chat = chat_setup{std::move(*t), chat_stop_tokens(text, m->tokenizer().vocabulary()), "test",
                      chat::detect_template_traits(text), "auto"};
  }
  validation_limits limits() const {
    validation_limits l;
    l.n_ctx = 4096;
    l.n_vocab = m->tokenizer().n_vocab();
    return l;
  }
  generation_request chat_request(const std::string& messages_json) const {
    generation_request r;
    r.client_id = "c1";
    r.messages_json = messages_json;
    return r;
  }
};

TEST_F(chat_request_test, messages_become_the_rendered_prompt_with_one_bos_and_end_of_turn_stops) {
  request_validator v(limits(), m->tokenizer(), 1);
  v.set_chat(&chat);
  auto res = v.validate(chat_request(R"([{"role": "user", "content": "Hello!"}])"));
  ASSERT_TRUE(res.ok()) << res.error.message;
  // The llama3_1 template as published, rendered by hand for this input.
  const std::string rendered =
      "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>"
      "<|start_header_id|>assistant<|end_header_id|>\n\n";
  const auto expected = m->tokenizer().encode(rendered, /*add_special=*/false, /*parse_special=*/true);
  EXPECT_EQ(res.request.tokens_prompt, expected);
  ASSERT_GE(res.request.tokens_prompt.size(), 2u);
  EXPECT_EQ(res.request.tokens_prompt[0], 128000);  // <|begin_of_text|>, once
  EXPECT_NE(res.request.tokens_prompt[1], 128000);
  EXPECT_NE(std::find(res.request.chat_stop_ids.begin(), res.request.chat_stop_ids.end(), 128009),
            res.request.chat_stop_ids.end())
      << "<|eot_id|> ends the answer";
}

TEST_F(chat_request_test, text_parts_render_like_one_string) {
  request_validator v(limits(), m->tokenizer(), 1);
  v.set_chat(&chat);
  auto parts = v.validate(chat_request(R"([{"role": "user", "content": [{"type": "text", "text": "Hel"}, {"type": "text", "text": "lo!"}]}])"));
  auto whole = v.validate(chat_request(R"([{"role": "user", "content": "Hello!"}])"));
  ASSERT_TRUE(parts.ok()) << parts.error.message;
  ASSERT_TRUE(whole.ok()) << whole.error.message;
  EXPECT_EQ(parts.request.tokens_prompt, whole.request.tokens_prompt);
}

TEST_F(chat_request_test, add_generation_prompt_false_leaves_the_assistant_header_out) {
  request_validator v(limits(), m->tokenizer(), 1);
  v.set_chat(&chat);
  auto r = chat_request(R"([{"role": "user", "content": "Hello!"}])");
  r.add_generation_prompt = false;
  auto res = v.validate(r);
  ASSERT_TRUE(res.ok()) << res.error.message;
  const std::string rendered = "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>";
  EXPECT_EQ(res.request.tokens_prompt, m->tokenizer().encode(rendered, false, true));
}

TEST_F(chat_request_test, bad_requests_are_400_naming_the_problem) {
  request_validator v(limits(), m->tokenizer(), 1);
  v.set_chat(&chat);
  auto not_json = v.validate(chat_request("[{"));
  EXPECT_EQ(not_json.error.code, errc::invalid_param);
  EXPECT_NE(not_json.error.message.find("messages"), std::string::npos);

  auto both = chat_request(R"([{"role": "user", "content": "x"}])");
  both.prompt = "also a prompt";
  auto r2 = v.validate(both);
  EXPECT_EQ(r2.error.code, errc::invalid_param);
  EXPECT_NE(r2.error.message.find("exactly one"), std::string::npos);

  auto kwargs = chat_request(R"([{"role": "user", "content": "x"}])");
  kwargs.chat_template_kwargs_json = "[1, 2]";
  auto r3 = v.validate(kwargs);
  EXPECT_EQ(r3.error.code, errc::invalid_param);
  EXPECT_NE(r3.error.message.find("chat_template_kwargs"), std::string::npos);
}

TEST_F(chat_request_test, a_template_error_is_a_400_carrying_its_message) {
  auto t = chat_template::parse("{{ raise_exception('Conversation roles must alternate user/assistant') }}");
  ASSERT_TRUE(t) << t.error();
  chat_setup strict{std::move(*t), {}, "test", chat::detect_template_traits(""), "auto"};
  request_validator v(limits(), m->tokenizer(), 1);
  v.set_chat(&strict);
  auto res = v.validate(chat_request(R"([{"role": "user", "content": "x"}])"));
  EXPECT_EQ(res.error.code, errc::invalid_param);
  EXPECT_NE(res.error.message.find("Conversation roles must alternate user/assistant"), std::string::npos) << res.error.message;
}

TEST_F(chat_request_test, without_a_chat_setup_messages_are_unsupported) {
  request_validator v(limits(), m->tokenizer(), 1);
  auto res = v.validate(chat_request(R"([{"role": "user", "content": "x"}])"));
  EXPECT_EQ(res.error.code, errc::unsupported);
}

// Tools (issue 27): through the template unless tool_choice is none; a
// forced choice becomes a grammar in the family's syntax (llama3 here).
TEST_F(chat_request_test, tools_render_and_forced_choices_constrain_in_the_family_syntax) {
  // Llama 3.3's published template (the golden llama3_1 has no tool syntax).
  // From the source tree (not __FILE__: ccache's base_dir makes it relative
  // to the build folder, and ctest runs the test from another one).
  const std::string text = testing::read_file(std::string(CORTEX_SOURCE_DIR) + "/tests/data/chat_templates/llama3_3.jinja");
  auto t = chat_template::parse(text);
  ASSERT_TRUE(t) << t.error();
  chat_setup llama{std::move(*t), chat_stop_tokens(text, m->tokenizer().vocabulary()), "test", chat::detect_template_traits(text),
                   "auto"};
  request_validator v(limits(), m->tokenizer(), 1);
  v.set_chat(&llama);
  const std::string tools =
      R"([{"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])";
  auto r = chat_request(R"([{"role": "user", "content": "Weather in Paris?"}])");
  r.tools_json = tools;
  const auto decode = [&](const std::vector<int32_t>& ids) { return m->tokenizer().decode(ids); };

  auto with_auto = v.validate(r);
  ASSERT_TRUE(with_auto.ok()) << with_auto.error.message;
  EXPECT_NE(decode(with_auto.request.tokens_prompt).find("get_weather"), std::string::npos);
  EXPECT_TRUE(with_auto.request.grammar.empty());  // llama3 calls start no mid-text opener: auto is free
  EXPECT_TRUE(with_auto.request.output.active);
  EXPECT_EQ(with_auto.request.output.format, "llama3");
  EXPECT_TRUE(with_auto.request.output.parse_tool_calls);

  r.tool_choice = "none";
  auto none = v.validate(r);
  ASSERT_TRUE(none.ok()) << none.error.message;
  EXPECT_EQ(decode(none.request.tokens_prompt).find("get_weather"), std::string::npos);
  EXPECT_FALSE(none.request.output.parse_tool_calls);

  r.tool_choice = "required";
  auto required = v.validate(r);
  ASSERT_TRUE(required.ok()) << required.error.message;
  EXPECT_NE(required.request.grammar.find("\\\"parameters\\\": "), std::string::npos) << required.request.grammar;

  r.tool_choice = "function";
  r.tool_choice_name = "nope";
  auto unknown = v.validate(r);
  EXPECT_EQ(unknown.error.code, errc::invalid_param);
  EXPECT_NE(unknown.error.message.find("'nope'"), std::string::npos) << unknown.error.message;

  r.tool_choice = "required";
  r.params.grammar = "root ::= \"x\"";
  auto both = v.validate(r);
  EXPECT_EQ(both.error.code, errc::invalid_param);
  EXPECT_NE(both.error.message.find("tool_choice"), std::string::npos) << both.error.message;
}

}  // namespace
}  // namespace cortex
