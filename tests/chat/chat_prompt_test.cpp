// Vocabulary-only model files, a model's chat defaults and stop tokens, and
// messages -> prompt tokens, on the real vocabularies of ../golden/tokenizer
// and the real templates of ../golden/chat. Token ids are the published
// ones of those vocabularies (Llama 3: <|begin_of_text|> 128000,
// <|start_header_id|> 128006, <|end_header_id|> 128007, <|eot_id|> 128009;
// Qwen: <|im_start|> 151644, <|im_end|> 151645; Llama SPM: </s> 2; Phi-3:
// <|end|> 32007) or come
// from the golden tokenizer cases.
#include <algorithm>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "chat/chat_prompt.hpp"
#include "chat/model_chat.hpp"
#include "model/model.hpp"
#include "tests/support/golden.hpp"

namespace cortex {
namespace {

std::string vocab_path(const std::string& name) {
  return testing::shared_dir() + "/golden/tokenizer/vocab/ggml-vocab-" + name + ".gguf";
}

std::string golden_template(const std::string& name) {
  std::ifstream f(testing::shared_dir() + "/golden/chat/templates/" + name + ".jinja", std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::unique_ptr<model> vocab_model(const std::string& name) {
  auto m = model::load_vocab_only(vocab_path(name));
  EXPECT_TRUE(m.has_value()) << name << ": " << m.error();
  return m.has_value() ? std::move(*m) : nullptr;
}

chat_template parse(const std::string& text) {
  auto t = chat_template::parse(text);
  EXPECT_TRUE(t.has_value()) << t.error();
  return std::move(*t);
}

TEST(vocab_only_model, loads_the_tokenizer_of_files_without_tensors) {
  CORTEX_NEEDS_REFERENCE_DATA();
  for (const char* name : {"llama3", "qwen3", "llama-spm", "phi-3", "gpt-2", "starcoder", "falcon", "deepseek-llm"}) {
    SCOPED_TRACE(name);
    EXPECT_FALSE(model::load(vocab_path(name)).has_value()) << "the full load still requires the weights";
    auto m = vocab_model(name);
    ASSERT_TRUE(m);
    EXPECT_TRUE(m->is_vocab_only());
    EXPECT_TRUE(m->weights().layers.empty());
    EXPECT_EQ(m->hparams().n_vocab, m->tokenizer().n_vocab());
    EXPECT_GT(m->hparams().n_vocab, 1000);
  }
}

TEST(vocab_only_model, tokenizes_like_llama_cpp) {
  CORTEX_NEEDS_REFERENCE_DATA();
  const auto doc = testing::load_json(testing::shared_dir() + "/golden/tokenizer/llama3.public.json");
  const auto& c = doc["cases"][0];
  auto m = vocab_model("llama3");
  ASSERT_TRUE(m);
  const auto ids = m->tokenizer().encode(testing::hex_to_bytes(c["text_hex"].get<std::string>()), false, false);
  EXPECT_EQ(ids, c["ids"].get<std::vector<int32_t>>());
}

TEST(model_chat, defaults_come_from_the_file_or_chatml) {
  CORTEX_NEEDS_REFERENCE_DATA();
  auto llama3 = vocab_model("llama3");
  ASSERT_TRUE(llama3);
  const auto d = model_chat_defaults(llama3->file(), llama3->tokenizer().vocabulary());
  EXPECT_TRUE(d.template_from_model);
  EXPECT_NE(d.template_text.find("<|start_header_id|>"), std::string::npos);
  EXPECT_EQ(d.bos_token, std::optional<std::string>("<|begin_of_text|>"));

  auto spm = vocab_model("llama-spm");
  ASSERT_TRUE(spm);
  const auto s = model_chat_defaults(spm->file(), spm->tokenizer().vocabulary());
  EXPECT_FALSE(s.template_from_model);
  EXPECT_EQ(s.template_text, chatml_template_text());
  EXPECT_EQ(s.bos_token, std::optional<std::string>("<s>"));
  EXPECT_EQ(s.eos_token, std::optional<std::string>("</s>"));
}

TEST(model_chat, stop_tokens_are_the_templates_end_of_turn_tokens) {
  CORTEX_NEEDS_REFERENCE_DATA();
  auto llama3 = vocab_model("llama3");
  auto qwen3 = vocab_model("qwen3");
  auto spm = vocab_model("llama-spm");
  ASSERT_TRUE(llama3 && qwen3 && spm);
  EXPECT_EQ(chat_stop_tokens(golden_template("llama3_1"), llama3->tokenizer().vocabulary()),
            std::vector<int32_t>({128009}));
  EXPECT_EQ(chat_stop_tokens(golden_template("qwen3"), qwen3->tokenizer().vocabulary()),
            std::vector<int32_t>({151645}));
  EXPECT_EQ(chat_stop_tokens(chatml_template_text(), qwen3->tokenizer().vocabulary()), std::vector<int32_t>({151645}));
  EXPECT_EQ(chat_stop_tokens(golden_template("mistral_v0_3"), spm->tokenizer().vocabulary()),
            std::vector<int32_t>({2}));
  // Phi-3 writes <|end|> (32007) and, without a generation prompt, eos_token.
  auto phi3 = vocab_model("phi-3");
  ASSERT_TRUE(phi3);
  const auto& pv = phi3->tokenizer().vocabulary();
  std::vector<int32_t> want = {32007, pv.eos_id};
  std::sort(want.begin(), want.end());
  want.erase(std::unique(want.begin(), want.end()), want.end());
  EXPECT_EQ(chat_stop_tokens(golden_template("phi3_mini"), pv), want);
  // ChatML's <|im_end|> is no token of Llama 3's vocabulary.
  EXPECT_TRUE(chat_stop_tokens(chatml_template_text(), llama3->tokenizer().vocabulary()).empty());
}

TEST(chat_prompt, template_bos_is_not_doubled) {
  CORTEX_NEEDS_REFERENCE_DATA();
  auto m = vocab_model("llama3");
  ASSERT_TRUE(m);
  ASSERT_TRUE(m->tokenizer().add_bos());
  const auto tmpl = parse(golden_template("llama3_1"));
  chat_prompt_request req;
  req.messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "Hello"}])");
  auto p = build_chat_prompt(tmpl, req, m->tokenizer());
  ASSERT_TRUE(p.has_value()) << p.error();
  EXPECT_EQ(p->text,
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  ASSERT_GE(p->tokens.size(), 4u);
  EXPECT_EQ(std::count(p->tokens.begin(), p->tokens.end(), 128000), 1);
  EXPECT_EQ(p->tokens[0], 128000);
  EXPECT_EQ(p->tokens[1], 128006);
  EXPECT_EQ(std::count(p->tokens.begin(), p->tokens.end(), 128009), 1);
  EXPECT_EQ(p->tokens.back(), m->tokenizer().encode("\n\n", false, false).back());
  // The same text without the template's BOS still gets exactly one.
  const auto no_bos = parse("{{ messages[0]['content'] }}");
  auto q = build_chat_prompt(no_bos, req, m->tokenizer());
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->tokens, m->tokenizer().encode("Hello", true, false));
}

TEST(chat_prompt, special_tokens_in_the_rendered_text_are_parsed) {
  CORTEX_NEEDS_REFERENCE_DATA();
  auto m = vocab_model("qwen3");
  ASSERT_TRUE(m);
  const auto tmpl = parse(golden_template("qwen3"));
  chat_prompt_request req;
  req.messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "Hi"}])");
  req.kwargs = nlohmann::ordered_json{{"enable_thinking", false}};
  auto p = build_chat_prompt(tmpl, req, m->tokenizer());
  ASSERT_TRUE(p.has_value()) << p.error();
  EXPECT_EQ(p->text, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  EXPECT_EQ(p->tokens.front(), 151644);  // no BOS for this vocabulary
  EXPECT_EQ(std::count(p->tokens.begin(), p->tokens.end(), 151645), 1);
}

TEST(chat_prompt, errors_are_values) {
  CORTEX_NEEDS_REFERENCE_DATA();
  auto m = vocab_model("llama-spm");
  ASSERT_TRUE(m);
  const auto tmpl = parse(golden_template("mistral_v0_3"));
  chat_prompt_request req;
  req.messages = nlohmann::ordered_json::parse(R"([{"role": "system", "content": "S"}])");
  auto p = build_chat_prompt(tmpl, req, m->tokenizer());
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().message, "Conversation roles must alternate user/assistant/user/assistant/...");
  req.messages = nlohmann::ordered_json::parse(R"(["not an object"])");
  EXPECT_FALSE(build_chat_prompt(tmpl, req, m->tokenizer()).has_value());
  req.messages = nlohmann::ordered_json::array();
  req.kwargs = nlohmann::ordered_json{{"messages", 1}};
  EXPECT_FALSE(build_chat_prompt(tmpl, req, m->tokenizer()).has_value());
  req.kwargs = 3;
  EXPECT_FALSE(build_chat_prompt(tmpl, req, m->tokenizer()).has_value());
}

}  // namespace
}  // namespace cortex
