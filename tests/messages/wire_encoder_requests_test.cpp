// The encoder requests of the wire (docs/wire-protocol.md `embed`,
// `rerank`): what they decode to, the errors that say what to fix, and the
// `finished` that carries an embedding or a score in place of a stop.
#include <gtest/gtest.h>

#include "messages/wire/client_decode.hpp"
#include "messages/wire/server_decode.hpp"
#include "messages/wire/server_encode.hpp"
#include "tests/messages/wire_test_value.hpp"

namespace cortex::wire {
namespace {

using test::decode;
using test::envelope;
using test::mp;

TEST(wire_encoder_requests, embed_decodes_to_one_embed_request) {
  decode_result d = decode(envelope("embed", {{"id", "e1"}, {"prompt", "hello world"}, {"priority", 3},
                                              {"deadline_ms", 500}, {"tags", mp::map({{"k", "v"}})}, {"bogus", 1}}));
  ASSERT_TRUE(d.ok()) << d.error.message;
  EXPECT_EQ(d.type, client_message_type::embed);
  EXPECT_EQ(d.id, "e1");
  const generation_request& r = d.request;
  EXPECT_EQ(r.client_id, "e1");
  EXPECT_EQ(r.kind, request_kind::embed);
  EXPECT_EQ(r.prompt, "hello world");
  EXPECT_FALSE(r.use_tokens);
  EXPECT_TRUE(r.document.empty());
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.want_text);
  EXPECT_EQ(r.priority, 3);
  EXPECT_EQ(r.deadline_ms, 500u);
  EXPECT_EQ(r.tags.at("k"), "v");
  EXPECT_EQ(d.ignored, (std::vector<std::string>{"bogus"}));

  d = decode(envelope("embed", {{"id", "e2"}, {"tokens", mp::arr({101, 7592, 102})}, {"auth", "cs-x"}}));
  ASSERT_TRUE(d.ok()) << d.error.message;
  EXPECT_TRUE(d.request.use_tokens);
  EXPECT_EQ(d.request.tokens, (std::vector<int32_t>{101, 7592, 102}));
  EXPECT_EQ(d.auth, "cs-x");
  // Submit-only keys mean nothing here: ignored, and listed as such.
  d = decode(envelope("embed", {{"id", "e3"}, {"prompt", "x"}, {"params", mp::map({{"max_tokens", 4}})}}));
  ASSERT_TRUE(d.ok()) << d.error.message;
  EXPECT_EQ(d.ignored, (std::vector<std::string>{"params"}));
}

TEST(wire_encoder_requests, rerank_decodes_query_and_document) {
  const decode_result d = decode(envelope("rerank", {{"id", "r1"}, {"query", "what is a panda?"}, {"document", "hi"}}));
  ASSERT_TRUE(d.ok()) << d.error.message;
  EXPECT_EQ(d.type, client_message_type::rerank);
  EXPECT_EQ(d.request.kind, request_kind::embed);
  EXPECT_EQ(d.request.prompt, "what is a panda?");
  EXPECT_EQ(d.request.document, "hi");
  EXPECT_FALSE(d.request.want_text);
}

TEST(wire_encoder_requests, bad_fields_are_refused_naming_them) {
  struct bad_case {
    mp message;
    errc code;
    const char* says;
  };
  const bad_case cases[] = {
      {envelope("embed", {{"id", "a"}}), errc::invalid_param, "embed needs prompt"},
      {envelope("embed", {{"id", "a"}, {"prompt", "x"}, {"tokens", mp::arr({1})}}), errc::invalid_param, "not both"},
      {envelope("embed", {{"id", "a"}, {"tokens", mp::arr({})}}), errc::invalid_param, "tokens is empty"},
      {envelope("embed", {{"id", "a"}, {"prompt", ""}}), errc::invalid_param, "prompt is an empty string"},
      {envelope("embed", {{"id", "a"}, {"prompt", 5}}), errc::malformed, "prompt"},
      {envelope("embed", {{"prompt", "x"}}), errc::invalid_param, "embed needs an id"},
      {envelope("embed", {{"id", "a"}, {"tokens", mp::arr({-1})}}), errc::invalid_param, "tokens[0]"},
      {envelope("rerank", {{"id", "a"}, {"document", "d"}}), errc::invalid_param, "rerank needs query"},
      {envelope("rerank", {{"id", "a"}, {"query", "q"}}), errc::invalid_param, "rerank needs document"},
      {envelope("rerank", {{"id", "a"}, {"query", "q"}, {"document", ""}}), errc::invalid_param, "document is an empty"},
      {envelope("rerank", {{"id", "a"}, {"query", mp::arr({"q"})}, {"document", "d"}}), errc::malformed, "query"},
      {envelope("rerank", {{"query", "q"}, {"document", "d"}}), errc::invalid_param, "rerank needs an id"},
      {envelope("rerank", {{"id", "a"}, {"query", "q"}, {"document", "d"}, {"deadline_ms", 0}}), errc::invalid_param,
       "deadline_ms"},
  };
  for (const bad_case& c : cases) {
    const decode_result d = decode(c.message);
    ASSERT_FALSE(d.ok()) << c.says;
    EXPECT_EQ(d.error.code, c.code) << c.says << ": " << d.error.message;
    EXPECT_NE(d.error.message.find(c.says), std::string::npos) << d.error.message;
    EXPECT_TRUE(starts_request(d.type)) << c.says << ": a rejected embed/rerank is its request's terminal error";
  }
  decode_limits lim;
  lim.model_names = {"tiny-bert"};
  const decode_result d = decode(envelope("embed", {{"id", "a"}, {"prompt", "x"}, {"model", "other"}}), lim);
  EXPECT_EQ(d.error.code, errc::unknown_model) << d.error.message;
  // The error for an unknown type lists the new ones.
  EXPECT_NE(decode(envelope("embedding", {{"id", "a"}})).error.message.find("embed, rerank"), std::string::npos);
}

server_message read(const wire_bytes& b) {
  server_message m = decode_server_message(b.data(), b.size());
  EXPECT_TRUE(m.ok()) << m.error();
  return m;
}

request_finished encoder_finished(std::vector<float> embedding) {
  request_finished f;
  f.client_id = "e";
  f.reason = finish_reason::stop;
  f.prompt_tokens = 5;
  f.embedding = std::move(embedding);
  return f;
}

TEST(wire_encoder_requests, finished_carries_the_embedding_or_the_score) {
  generation_request embed;
  embed.kind = request_kind::embed;
  embed.want_text = false;
  const output_fields want_embedding = output_fields_of(embed);
  EXPECT_TRUE(want_embedding.embedding);
  EXPECT_FALSE(want_embedding.score);
  server_message m = read(encode_finished(encoder_finished({0.25f, -0.5f, 0.125f}), 1, want_embedding));
  EXPECT_EQ(m.get_string("reason"), "stop");
  EXPECT_EQ(m.get("stop"), nullptr) << "nothing stopped an encoder request";
  EXPECT_EQ(m.get("text"), nullptr);
  ASSERT_NE(m.get("embedding"), nullptr);
  EXPECT_EQ(m.get("embedding")->as<std::vector<float>>(), (std::vector<float>{0.25f, -0.5f, 0.125f}));
  EXPECT_EQ(m.get("embedding")->via.array.ptr[0].type, msgpack::type::FLOAT32);
  EXPECT_EQ(m.get("score"), nullptr);

  embed.document = "a document";
  const output_fields want_score = output_fields_of(embed);
  EXPECT_TRUE(want_score.score);
  EXPECT_FALSE(want_score.embedding);
  m = read(encode_finished(encoder_finished({-1.75f}), 2, want_score));
  ASSERT_NE(m.get("score"), nullptr);
  EXPECT_EQ(m.get("score")->as<double>(), -1.75);
  EXPECT_EQ(m.get("embedding"), nullptr);

  // A request that did not finish computing carries no result.
  request_finished cancelled = encoder_finished({});
  cancelled.reason = finish_reason::cancelled;
  m = read(encode_finished(cancelled, 3, want_score));
  EXPECT_EQ(m.get_string("reason"), "cancelled");
  EXPECT_EQ(m.get("score"), nullptr);
  // A generation request is unchanged: text, a stop, no embedding.
  const output_fields text = output_fields_of(generation_request{});
  EXPECT_FALSE(text.embedding || text.score);
  request_finished gen = encoder_finished({});
  gen.stop_kind = "eos";
  gen.stop_value = "2";
  m = read(encode_finished(gen, 4, text));
  EXPECT_NE(m.get("stop"), nullptr);
  EXPECT_EQ(m.get("embedding"), nullptr);
}

}  // namespace
}  // namespace cortex::wire
