// request_validator: every protocol rule gives its error code and names the
// field; prompts are tokenized with the model's BOS default or the request's
// choice; max_tokens is capped to the context; seeds are resolved. And
// admission_limits accounting.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "actors/intake/request_validator.hpp"
#include "gguf/gguf.hpp"
#include "tests/actors/stories_tokenizer.hpp"
#include "tests/support/golden.hpp"

namespace cortex {
namespace {

using testing_support::stories_tokenizer;

validation_limits limits() {
  validation_limits l;
  l.n_ctx = 64;
  l.n_vocab = 512;
  l.max_logit_bias = 4;
  return l;
}

generation_request valid_request() {
  generation_request r;
  r.client_id = "abc";
  r.prompt = "Once upon a time";
  return r;
}

TEST(request_validator, tokenizes_with_the_models_bos_default) {
  const tokenizer* tok = stories_tokenizer();
  ASSERT_TRUE(tok);
  ASSERT_TRUE(tok->add_bos());  // SentencePiece: BOS by default
  request_validator v(limits(), *tok, 1);
  const auto text_ids = tok->encode("Once upon a time", false);
  ASSERT_FALSE(text_ids.empty());

  auto r = v.validate(valid_request());
  ASSERT_TRUE(r.ok()) << r.error.message;
  ASSERT_EQ(r.request.tokens_prompt.size(), text_ids.size() + 1);
  EXPECT_EQ(r.request.tokens_prompt[0], tok->bos_id());
  EXPECT_EQ(std::vector<int32_t>(r.request.tokens_prompt.begin() + 1, r.request.tokens_prompt.end()), text_ids);

  auto req = valid_request();
  req.add_bos = 0;
  r = v.validate(req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.request.tokens_prompt, text_ids);

  req.prompt = "";
  req.add_bos = -1;
  r = v.validate(req);
  ASSERT_TRUE(r.ok());  // BOS alone: an unconditional start
  EXPECT_EQ(r.request.tokens_prompt, std::vector<int32_t>{tok->bos_id()});
  req.add_bos = 0;
  EXPECT_EQ(v.validate(req).error.code, errc::invalid_param);
}

TEST(request_validator, token_prompts_are_taken_as_given) {
  ASSERT_TRUE(stories_tokenizer());
  request_validator v(limits(), *stories_tokenizer(), 1);
  auto req = valid_request();
  req.prompt.clear();
  req.use_tokens = true;
  req.tokens = {5, 6, 511};
  req.add_bos = 1;  // for prompt only
  auto r = v.validate(req);
  ASSERT_TRUE(r.ok()) << r.error.message;
  EXPECT_EQ(r.request.tokens_prompt, req.tokens);
}

TEST(request_validator, max_tokens_is_capped_to_the_context) {
  ASSERT_TRUE(stories_tokenizer());
  request_validator v(limits(), *stories_tokenizer(), 1);
  auto req = valid_request();
  req.prompt.clear();
  req.use_tokens = true;
  req.tokens.assign(60, 300);
  auto r = v.validate(req);  // default max_tokens 256
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.request.max_tokens, 4u);
  req.params.max_tokens = 3;
  EXPECT_EQ(v.validate(req).request.max_tokens, 3u);

  req.tokens.assign(63, 300);
  req.params.max_tokens = 256;
  r = v.validate(req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.request.max_tokens, 1u);

  req.tokens.assign(64, 300);
  r = v.validate(req);
  EXPECT_EQ(r.error.code, errc::context_overflow);
  EXPECT_EQ(errc_code(r.error.code), 422);
  EXPECT_NE(r.error.message.find("at most 63 tokens"), std::string::npos) << r.error.message;

  auto text = valid_request();
  text.prompt.clear();
  for (int i = 0; i < 40; ++i) text.prompt += "Once upon a time ";
  EXPECT_EQ(v.validate(text).error.code, errc::context_overflow);
}

TEST(request_validator, seeds_are_kept_or_drawn_reproducibly) {
  ASSERT_TRUE(stories_tokenizer());
  auto req = valid_request();
  req.params.has_seed = true;
  req.params.seed = 42;
  request_validator a(limits(), *stories_tokenizer(), 9), b(limits(), *stories_tokenizer(), 9);
  auto r = a.validate(req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.request.seed, 42u);

  req.params.has_seed = false;
  const auto a1 = a.validate(req).request, a2 = a.validate(req).request;
  const auto b1 = b.validate(req).request;
  EXPECT_EQ(a1.seed, b1.seed);  // same generator seed, same draws
  EXPECT_NE(a1.seed, a2.seed);  // each request gets its own
}

struct rule_case {
  const char* name;
  std::function<void(generation_request&)> edit;
  errc code;
  const char* message_part;  // the field the message must name
};

TEST(request_validator, every_rule_has_its_code_and_names_the_field) {
  ASSERT_TRUE(stories_tokenizer());
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<rule_case> cases = {
      {"empty id", [](auto& r) { r.client_id.clear(); }, errc::invalid_param, "id"},
      {"bad grammar", [](auto& r) { r.params.grammar = "root ::= x"; }, errc::invalid_param,
       "params.grammar: grammar: rule 'x' is used but never defined"},
      {"bad schema", [](auto& r) { r.params.json_schema = R"({"type": "array", "contains": {}})"; }, errc::invalid_param,
       "params.json_schema: keyword 'contains' at # is not supported"},
      {"grammar opening too many parses",
       [](auto& r) {
         r.params.grammar = "root ::= \"a\"";
         for (int i = 0; i < 5000; ++i) r.params.grammar += " | \"a\"";
       },
       errc::invalid_param, "params.grammar: the grammar opens 5001 parses at its start"},
      {"both", [](auto& r) { r.params.grammar = "root ::= \"a\""; r.params.json_schema = "{}"; }, errc::invalid_param,
       "params.grammar or params.json_schema, not both"},
      {"grammar on embed", [](auto& r) { r.params.grammar = "root ::= \"a\""; r.kind = request_kind::embed; },
       errc::invalid_param, "an embedding request takes no grammar"},
      {"long id", [](auto& r) { r.client_id.assign(65, 'x'); }, errc::too_large, "id is 65 bytes"},
      {"logprobs", [](auto& r) { r.n_logprobs = 21; }, errc::invalid_param, "want.logprobs"},
      {"max_tokens 0", [](auto& r) { r.params.max_tokens = 0; }, errc::invalid_param, "params.max_tokens"},
      {"temperature <0", [](auto& r) { r.params.temperature = -0.1f; }, errc::invalid_param, "params.temperature"},
      {"temperature nan", [=](auto& r) { r.params.temperature = nan; }, errc::invalid_param, "params.temperature"},
      {"top_k", [](auto& r) { r.params.top_k = -1; }, errc::invalid_param, "params.top_k"},
      {"top_p 0", [](auto& r) { r.params.top_p = 0; }, errc::invalid_param, "params.top_p"},
      {"top_p 1.5", [](auto& r) { r.params.top_p = 1.5f; }, errc::invalid_param,
       "params.top_p must be in (0, 1], got 1.5"},
      {"top_p nan", [=](auto& r) { r.params.top_p = nan; }, errc::invalid_param, "params.top_p"},
      {"min_p", [](auto& r) { r.params.min_p = 1.5f; }, errc::invalid_param, "params.min_p"},
      {"repetition_penalty", [](auto& r) { r.params.repetition_penalty = 0; }, errc::invalid_param,
       "params.repetition_penalty"},
      {"presence_penalty", [=](auto& r) { r.params.presence_penalty = inf; }, errc::invalid_param,
       "params.presence_penalty"},
      {"frequency_penalty", [=](auto& r) { r.params.frequency_penalty = nan; }, errc::invalid_param,
       "params.frequency_penalty"},
      {"penalty_last_n", [](auto& r) { r.params.penalty_last_n = -2; }, errc::invalid_param, "params.penalty_last_n"},
      {"min > max", [](auto& r) { r.params.min_tokens = 10, r.params.max_tokens = 5; }, errc::invalid_param,
       "params.min_tokens"},
      {"17 stops", [](auto& r) { r.params.stop.assign(17, "x"); }, errc::too_large, "params.stop has 17"},
      {"long stop", [](auto& r) { r.params.stop = {"a", std::string(257, 'y')}; }, errc::too_large,
       "params.stop[1] is 257 bytes"},
      {"empty stop", [](auto& r) { r.params.stop = {""}; }, errc::invalid_param, "params.stop[0]"},
      {"bad utf8 stop", [](auto& r) { r.params.stop = {"ok", "\xC3("}; }, errc::invalid_param, "params.stop[1]"},
      {"stop id", [](auto& r) { r.params.stop_token_ids = {2, 512}; }, errc::invalid_param,
       "params.stop_token_ids[1]"},
      {"bias count", [](auto& r) { r.params.logit_bias_ids.assign(5, 1), r.params.logit_bias_values.assign(5, 1.0f); },
       errc::too_large, "params.logit_bias has 5"},
      {"bias id", [](auto& r) { r.params.logit_bias_ids = {-1}, r.params.logit_bias_values = {1.0f}; },
       errc::invalid_param, "params.logit_bias key"},
      {"bias value", [](auto& r) { r.params.logit_bias_ids = {7}, r.params.logit_bias_values = {100.5f}; },
       errc::invalid_param, "params.logit_bias[7]"},
      {"bias mismatch", [](auto& r) { r.params.logit_bias_ids = {7}; }, errc::invalid_param, "params.logit_bias"},
      {"both prompts", [](auto& r) { r.use_tokens = true, r.tokens = {5}; }, errc::invalid_param,
       "exactly one of prompt / tokens"},
      {"empty tokens", [](auto& r) { r.use_tokens = true, r.prompt.clear(); }, errc::invalid_param, "tokens"},
      {"token >= vocab", [](auto& r) { r.use_tokens = true, r.prompt.clear(), r.tokens = {1, 512}; },
       errc::invalid_param, "tokens[1] = 512"},
      {"token < 0", [](auto& r) { r.use_tokens = true, r.prompt.clear(), r.tokens = {-3}; }, errc::invalid_param,
       "tokens[0] = -3"},
  };
  request_validator v(limits(), *stories_tokenizer(), 1);
  ASSERT_TRUE(v.validate(valid_request()).ok());
  for (const auto& c : cases) {
    auto req = valid_request();
    c.edit(req);
    const auto r = v.validate(req);
    EXPECT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(errc_name(r.error.code), std::string(errc_name(c.code))) << c.name;
    EXPECT_NE(r.error.message.find(c.message_part), std::string::npos) << c.name << ": " << r.error.message;
  }
  // Limits at their bounds are accepted.
  auto req = valid_request();
  req.client_id.assign(64, 'x');
  req.n_logprobs = 20;
  req.params.stop.assign(16, std::string(256, 'z'));
  req.params.top_p = 1;
  req.params.temperature = 0;
  req.params.logit_bias_ids = {0, 511, 3, 4};
  req.params.logit_bias_values = {-100, 100, 0, 1};
  req.params.min_tokens = req.params.max_tokens;
  req.params.stop.back() = "\xE6\x97\xA5";
  const auto r = v.validate(req);
  EXPECT_TRUE(r.ok()) << r.error.message;
}

TEST(request_validator, utf8_check) {
  EXPECT_TRUE(is_valid_utf8("caf\xC3\xA9 \xE6\x97\xA5 \xF0\x9F\x99\x82"));
  EXPECT_FALSE(is_valid_utf8("\xC3"));              // truncated
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // > U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xA9"));              // lone continuation
}

TEST(admission_limits, requests_and_tokens_are_bounded_and_released) {
  admission_limits a(/*max_waiting=*/3, /*max_queued_tokens=*/100, /*retry_after_ms=*/250);
  EXPECT_TRUE(a.try_admit(60).is_ok());
  auto full = a.try_admit(50);  // 110 tokens > 100
  EXPECT_EQ(full.code, errc::overloaded);
  EXPECT_TRUE(errc_retryable(full.code));
  EXPECT_EQ(full.retry_after_ms, 250u);
  EXPECT_NE(full.message.find("prompt tokens"), std::string::npos) << full.message;
  EXPECT_EQ(a.n_waiting(), 1u);
  EXPECT_EQ(a.n_queued_tokens(), 60u);

  EXPECT_TRUE(a.try_admit(40).is_ok());  // exactly 100
  EXPECT_TRUE(a.try_admit(0).is_ok());
  auto many = a.try_admit(0);  // 3 waiting
  EXPECT_EQ(many.code, errc::overloaded);
  EXPECT_NE(many.message.find("3 requests are waiting"), std::string::npos) << many.message;

  EXPECT_TRUE(a.release(60));
  EXPECT_EQ(a.n_waiting(), 2u);
  EXPECT_EQ(a.n_queued_tokens(), 40u);
  EXPECT_TRUE(a.try_admit(60).is_ok());
  EXPECT_TRUE(a.release(60));
  EXPECT_TRUE(a.release(40));
  EXPECT_TRUE(a.release(0));
  EXPECT_EQ(a.n_waiting(), 0u);
  EXPECT_EQ(a.n_queued_tokens(), 0u);

  // An empty queue takes any single request, so a big prompt cannot starve.
  EXPECT_TRUE(a.try_admit(500).is_ok());
  EXPECT_EQ(a.try_admit(1).code, errc::overloaded);
  EXPECT_TRUE(a.release(500));

  EXPECT_DEBUG_DEATH(EXPECT_FALSE(a.release(1)), "without a matching admit");
  EXPECT_EQ(a.n_waiting(), 0u);
  EXPECT_EQ(a.n_queued_tokens(), 0u);

  admission_limits none(0, 100);
  EXPECT_EQ(none.try_admit(1).code, errc::overloaded);
}

// An embed request generates nothing: its input may fill the whole context.
TEST(request_validator, embed_input_may_fill_the_context) {
  ASSERT_TRUE(stories_tokenizer());
  request_validator v(limits(), *stories_tokenizer(), 1);
  auto req = valid_request();
  req.kind = request_kind::embed;
  req.prompt.clear();
  req.use_tokens = true;
  req.tokens.assign(64, 300);
  EXPECT_TRUE(v.validate(req).ok());
  req.tokens.assign(65, 300);
  auto r = v.validate(req);
  EXPECT_EQ(r.error.code, errc::context_overflow);
  EXPECT_NE(r.error.message.find("at most 64 tokens"), std::string::npos) << r.error.message;
}

}  // namespace
}  // namespace cortex

namespace cortex {
namespace {

// protocol.md "Cost before checks": a prompt whose bytes cannot fit the
// context is refused without being tokenized; one that might fit is
// tokenized and judged by its tokens.
TEST(request_validator, a_prompt_too_long_in_bytes_is_422_before_tokenizing) {
  const tokenizer* tok = testing_support::stories_tokenizer();
  ASSERT_TRUE(tok);
  request_validator v(limits(), *tok, 1);  // n_ctx 64
  generation_request huge = valid_request();
  huge.prompt.assign(50u << 20, 'a');  // 50 MiB: far past 64 tokens of any length
  auto r = v.validate(huge);
  EXPECT_EQ(r.error.code, errc::context_overflow);
  EXPECT_NE(r.error.message.find("bytes"), std::string::npos) << r.error.message;

  generation_request words = valid_request();
  for (int i = 0; i < 80; ++i) words.prompt += " time";  // ~80 tokens in 416 bytes: might fit by bytes
  auto w = v.validate(words);
  EXPECT_EQ(w.error.code, errc::context_overflow);
  EXPECT_NE(w.error.message.find("tokens; the context holds"), std::string::npos) << w.error.message;
}

TEST(request_validator, a_json_schema_becomes_the_requests_grammar) {
  ASSERT_TRUE(stories_tokenizer());
  request_validator v(limits(), *stories_tokenizer(), 1);
  auto req = valid_request();
  auto r = v.validate(req);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.request.grammar.empty());
  req.params.json_schema = R"({"type": "boolean"})";
  r = v.validate(req);
  ASSERT_TRUE(r.ok()) << r.error.message;
  EXPECT_EQ(r.request.grammar.rfind("root ::= json-boolean\n", 0), 0u) << r.request.grammar;
  req.params.json_schema.clear();
  req.params.grammar = "root ::= \"a\"";
  r = v.validate(req);
  ASSERT_TRUE(r.ok()) << r.error.message;
  EXPECT_EQ(r.request.grammar, "root ::= \"a\"");
}

// An encoder's limits (embeds_only), with the bert-bge WordPiece vocabulary.
class encoder_validator : public ::testing::Test {
 protected:
  void SetUp() override {
    CORTEX_NEEDS_REFERENCE_DATA();
    auto f = gguf::file::open(cortex::testing::shared_dir() + "/golden/tokenizer/vocab/ggml-vocab-bert-bge.gguf");
    ASSERT_TRUE(f) << f.error().message;
    file_ = std::move(*f);
    auto t = tokenizer::from_gguf(*file_);
    ASSERT_TRUE(t) << t.error().message;
    tok_ = std::move(*t);
  }
  validation_limits encoder_limits(encoder_output output) const {
    validation_limits l;
    l.n_ctx = 512;
    l.n_vocab = tok_->n_vocab();
    l.embeds_only = true;
    l.output = output;
    l.model_name = "bge";
    return l;
  }
  generation_request embed(const std::string& text) const {
    generation_request r;
    r.client_id = "e";
    r.kind = request_kind::embed;
    r.prompt = text;
    return r;
  }
  std::unique_ptr<gguf::file> file_;
  std::unique_ptr<tokenizer> tok_;
};

TEST_F(encoder_validator, frames_texts_and_refuses_generation) {
  request_validator v(encoder_limits(encoder_output::pooled_vector), *tok_, 1);
  auto ok = v.validate(embed("Hello world"));
  ASSERT_TRUE(ok.ok()) << ok.error.message;
  EXPECT_EQ(ok.request.tokens_prompt, tok_->encode("Hello world", true));
  EXPECT_EQ(ok.request.tokens_prompt.front(), 101);  // [CLS]
  EXPECT_EQ(ok.request.tokens_prompt.back(), 102);   // [SEP]

  auto gen = embed("Hello");
  gen.kind = request_kind::generate;
  auto refused = v.validate(gen);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error.code, errc::invalid_param);
  EXPECT_NE(refused.error.message.find("only embeds"), std::string::npos) << refused.error.message;

  auto doc = embed("query");
  doc.document = "a document";
  auto not_reranker = v.validate(doc);
  ASSERT_FALSE(not_reranker.ok());
  EXPECT_NE(not_reranker.error.message.find("not a reranker"), std::string::npos) << not_reranker.error.message;

  request_validator none(encoder_limits(encoder_output::per_token), *tok_, 1);
  auto unpooled = none.validate(embed("Hello"));
  ASSERT_FALSE(unpooled.ok());
  EXPECT_NE(unpooled.error.message.find("pooling_type none"), std::string::npos) << unpooled.error.message;
}

TEST_F(encoder_validator, reranker_takes_query_document_pairs) {
  request_validator v(encoder_limits(encoder_output::score), *tok_, 1);
  auto pair = embed("What is the capital of France?");
  pair.document = "Paris is the capital of France.";
  auto ok = v.validate(pair);
  ASSERT_TRUE(ok.ok()) << ok.error.message;
  std::vector<int32_t> want{101};
  for (int32_t id : tok_->encode(pair.prompt, false)) want.push_back(id);
  want.push_back(102);
  for (int32_t id : tok_->encode(pair.document, false)) want.push_back(id);
  EXPECT_EQ(ok.request.tokens_prompt, want) << "[CLS] query [SEP] document, as llama-server frames it";
  EXPECT_EQ(tok_->encode_pair(pair.prompt, pair.document), want);

  auto plain = v.validate(embed("no document"));
  ASSERT_FALSE(plain.ok());
  EXPECT_NE(plain.error.message.find("reranker"), std::string::npos) << plain.error.message;
}

}  // namespace
}  // namespace cortex
