// Server -> client encoding: every message and field, read back with the
// generic server decoder and, for the raw shape, with msgpack-c directly.
#include <gtest/gtest.h>

#include <algorithm>

#include "messages/wire/client_decode.hpp"
#include "messages/wire/server_decode.hpp"
#include "messages/wire/server_encode.hpp"
#include "tests/messages/wire_test_value.hpp"

namespace cortex::wire {
namespace {

server_message read(const wire_bytes& b) {
  server_message m = decode_server_message(b.data(), b.size());
  EXPECT_TRUE(m.ok()) << m.error();
  return m;
}

// Every top-level key of `m`, in order.
std::vector<std::string> keys_of(const server_message& m) {
  std::vector<std::string> keys;
  const msgpack::object& root = m.root();
  for (uint32_t i = 0; i < root.via.map.size; ++i) keys.push_back(root.via.map.ptr[i].key.as<std::string>());
  return keys;
}

std::vector<std::string> strings(const msgpack::object& o) { return o.as<std::vector<std::string>>(); }

TEST(wire_codec, accepted) {
  request_accepted a;
  a.rid = 1ull << 40;
  a.client_id = "req-1";
  a.prompt_tokens = 12;
  a.cached_tokens = 8;
  a.queue_pos = 3;
  a.tags = {{"user", "u"}, {"x", ""}};
  const server_message m = read(encode_accepted(a, 0, {"bogus", "params.mirostat"}));
  EXPECT_EQ(keys_of(m), (std::vector<std::string>{"v", "t", "id", "seq", "rid", "prompt_tokens", "cached_tokens",
                                                  "queue_pos", "ignored", "tags"}));
  EXPECT_EQ(m.get_uint("v"), 1u);
  EXPECT_EQ(m.type(), "accepted");
  EXPECT_EQ(m.id(), "req-1");
  EXPECT_EQ(m.get_uint("seq", 99), 0u);
  EXPECT_EQ(m.get_uint("rid"), 1ull << 40);
  EXPECT_EQ(m.get_uint("prompt_tokens"), 12u);
  EXPECT_EQ(m.get_uint("cached_tokens"), 8u);
  EXPECT_EQ(m.get_uint("queue_pos"), 3u);
  EXPECT_EQ(strings(*m.get("ignored")), (std::vector<std::string>{"bogus", "params.mirostat"}));
  EXPECT_EQ((m.get("tags")->as<std::map<std::string, std::string>>()), a.tags);
}

token_logprob make_logprob(int32_t id, float lp, std::vector<int32_t> top_ids, std::vector<float> top_lps) {
  token_logprob t;
  t.id = id, t.lp = lp, t.top_ids = std::move(top_ids), t.top_lps = std::move(top_lps);
  return t;
}

void expect_logprobs(const msgpack::object& list, const std::vector<token_logprob>& want) {
  ASSERT_EQ(list.type, msgpack::type::ARRAY);
  ASSERT_EQ(list.via.array.size, want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const msgpack::object& e = list.via.array.ptr[i];
    EXPECT_EQ(object_uint(e, "id"), static_cast<uint64_t>(want[i].id));
    EXPECT_EQ(static_cast<float>(object_double(e, "lp", 1)), want[i].lp);
    const auto top = object_get(e, "top")->as<std::vector<std::pair<int32_t, float>>>();
    ASSERT_EQ(top.size(), want[i].top_ids.size());
    for (size_t k = 0; k < top.size(); ++k) {
      EXPECT_EQ(top[k].first, want[i].top_ids[k]);
      EXPECT_EQ(top[k].second, want[i].top_lps[k]);
    }
  }
}

TEST(wire_codec, chunk_with_and_without_optional_outputs) {
  request_chunk c;
  c.client_id = "c";
  c.text = "Once upon \xc3\xa9";
  c.token_ids = {9038, 2501};
  c.logprobs = {make_logprob(9038, -0.25f, {9038, 17}, {-0.25f, -1.5f}), make_logprob(2501, -3.0f, {}, {})};

  server_message m = read(encode_chunk(c, 5, output_fields{}));
  EXPECT_EQ(keys_of(m), (std::vector<std::string>{"v", "t", "id", "seq", "text"}));
  EXPECT_EQ(m.type(), "chunk");
  EXPECT_EQ(m.get_uint("seq"), 5u);
  EXPECT_EQ(m.get_string("text"), c.text);

  m = read(encode_chunk(c, 6, output_fields{false, true, true}));
  EXPECT_EQ(keys_of(m), (std::vector<std::string>{"v", "t", "id", "seq", "token_ids", "logprobs"}));
  EXPECT_EQ(m.get("token_ids")->as<std::vector<int32_t>>(), c.token_ids);
  expect_logprobs(*m.get("logprobs"), c.logprobs);
}

TEST(wire_codec, output_fields_follow_want) {
  generation_request r;
  output_fields f = output_fields_of(r);
  EXPECT_TRUE(f.text);
  EXPECT_FALSE(f.token_ids);
  EXPECT_FALSE(f.logprobs);
  r.want_text = false, r.want_token_ids = true, r.n_logprobs = 1;
  f = output_fields_of(r);
  EXPECT_FALSE(f.text);
  EXPECT_TRUE(f.token_ids);
  EXPECT_TRUE(f.logprobs);
}

request_finished make_finished() {
  request_finished f;
  f.client_id = "fin";
  f.reason = finish_reason::stop;
  f.stop_kind = "string";
  f.stop_value = "The end";
  f.text = "tail";
  f.token_ids = {4, 5};
  f.logprobs = {make_logprob(4, -0.5f, {4}, {-0.5f})};
  f.prompt_tokens = 10, f.cached_tokens = 4, f.completion_tokens = 7;
  f.timings = {1.5, 2.5, 3.5, 4.5, 9.25, 123.0};
  f.preemptions = 2;
  f.tags = {{"k", "v"}};
  return f;
}

TEST(wire_codec, finished_every_field) {
  const request_finished f = make_finished();
  const server_message m = read(encode_finished(f, 9, output_fields{true, true, true}));
  EXPECT_EQ(keys_of(m), (std::vector<std::string>{"v", "t", "id", "seq", "reason", "stop", "text", "token_ids",
                                                  "logprobs", "usage", "timings", "preemptions", "tags"}));
  EXPECT_EQ(m.type(), "finished");
  EXPECT_EQ(m.id(), "fin");
  EXPECT_EQ(m.get_uint("seq"), 9u);
  EXPECT_EQ(m.get_string("reason"), "stop");
  EXPECT_EQ(object_string(*m.get("stop"), "kind"), "string");
  EXPECT_EQ(object_string(*m.get("stop"), "value"), "The end");
  EXPECT_EQ(m.get_string("text"), "tail");
  EXPECT_EQ(m.get("token_ids")->as<std::vector<int32_t>>(), f.token_ids);
  expect_logprobs(*m.get("logprobs"), f.logprobs);
  const msgpack::object& usage = *m.get("usage");
  EXPECT_EQ(object_uint(usage, "prompt_tokens"), 10u);
  EXPECT_EQ(object_uint(usage, "cached_tokens"), 4u);
  EXPECT_EQ(object_uint(usage, "completion_tokens"), 7u);
  const msgpack::object& t = *m.get("timings");
  EXPECT_EQ(object_double(t, "queue_ms"), 1.5);
  EXPECT_EQ(object_double(t, "prefill_ms"), 2.5);
  EXPECT_EQ(object_double(t, "ttft_ms"), 3.5);
  EXPECT_EQ(object_double(t, "decode_ms"), 4.5);
  EXPECT_EQ(object_double(t, "total_ms"), 9.25);
  EXPECT_EQ(object_double(t, "tokens_per_s"), 123.0);
  // Floats stay floats even when integral (msgpack-c would write 123.0 as 123).
  EXPECT_EQ(object_get(t, "tokens_per_s")->type, msgpack::type::FLOAT64);
  EXPECT_EQ(object_get(m.get("logprobs")->via.array.ptr[0], "lp")->type, msgpack::type::FLOAT32);
  EXPECT_EQ(m.get_uint("preemptions"), 2u);
  EXPECT_EQ((m.get("tags")->as<std::map<std::string, std::string>>()), f.tags);
}

TEST(wire_codec, finished_stop_value_is_a_token_id_for_eos_and_token) {
  request_finished f = make_finished();
  for (const char* kind : {"eos", "token"}) {
    f.stop_kind = kind;
    f.stop_value = "2";
    const server_message m = read(encode_finished(f, 1, output_fields{}));
    EXPECT_EQ(object_string(*m.get("stop"), "kind"), kind);
    EXPECT_EQ(object_get(*m.get("stop"), "value")->type, msgpack::type::POSITIVE_INTEGER);
    EXPECT_EQ(object_uint(*m.get("stop"), "value"), 2u);
  }
}

TEST(wire_codec, finished_without_stop_or_outputs) {
  request_finished f = make_finished();
  for (finish_reason r : {finish_reason::length, finish_reason::cancelled, finish_reason::deadline,
                          finish_reason::shutdown, finish_reason::client_gone}) {
    f.reason = r;
    const server_message m = read(encode_finished(f, 1, output_fields{false, false, false}));
    EXPECT_EQ(m.get_string("reason"), finish_reason_name(r));
    EXPECT_EQ(keys_of(m), (std::vector<std::string>{"v", "t", "id", "seq", "reason", "usage", "timings",
                                                    "preemptions", "tags"}));
  }
}

// Regression (issue 11 fault injection): a request that ended with an error
// said only `reason: error`; its client could not tell what failed.
TEST(wire_codec, finished_with_error_says_which_and_why) {
  request_finished f = make_finished();
  f.reason = finish_reason::error;
  f.error = {errc::internal, "the executor failed the step", 0};
  const server_message m = read(encode_finished(f, 3, output_fields{false, false, false}));
  EXPECT_EQ(m.get_string("reason"), "error");
  EXPECT_EQ(keys_of(m), (std::vector<std::string>{"v", "t", "id", "seq", "reason", "error", "usage", "timings",
                                                  "preemptions", "tags"}));
  EXPECT_EQ(object_uint(*m.get("error"), "code"), 500u);
  EXPECT_EQ(object_string(*m.get("error"), "name"), "internal");
  EXPECT_EQ(object_string(*m.get("error"), "message"), "the executor failed the step");
  EXPECT_FALSE(object_bool(*m.get("error"), "retryable", true));
  EXPECT_EQ(object_get(*m.get("error"), "retry_after_ms"), nullptr);
}

TEST(wire_codec, finished_with_a_retryable_error_says_when_to_retry) {
  request_finished f = make_finished();
  f.reason = finish_reason::error;
  f.error = {errc::worker_lost, "the worker serving this request was lost mid-stream", 1000};
  const server_message m = read(encode_finished(f, 3, output_fields{false, false, false}));
  const auto& e = *m.get("error");
  EXPECT_EQ(object_uint(e, "code"), 503u);
  EXPECT_EQ(object_string(e, "name"), "worker_lost");
  EXPECT_TRUE(object_bool(e, "retryable", false));
  EXPECT_EQ(object_uint(e, "retry_after_ms"), 1000u);
}

TEST(wire_codec, error_with_and_without_id) {
  status e{errc::invalid_param, "params.top_p must be in (0, 1], got 1.5", 0};
  server_message m = read(encode_error("r9", 0, e, true));
  EXPECT_EQ(keys_of(m),
            (std::vector<std::string>{"v", "t", "id", "seq", "terminal", "code", "name", "message", "retryable"}));
  EXPECT_TRUE(m.get_bool("terminal", false));
  EXPECT_EQ(m.type(), "error");
  EXPECT_EQ(m.id(), "r9");
  EXPECT_EQ(m.get_uint("code"), 400u);
  EXPECT_EQ(m.get_string("name"), "invalid_param");
  EXPECT_EQ(m.get_string("message"), e.message);
  EXPECT_FALSE(m.get_bool("retryable", true));

  m = read(encode_error("", 0, {errc::malformed, "not a map", 0}, false));
  EXPECT_EQ(keys_of(m), (std::vector<std::string>{"v", "t", "terminal", "code", "name", "message", "retryable"}));
}

// protocol.md: an error that only rejects another message naming a live
// request's id has terminal: false and no seq.
TEST(wire_codec, non_terminal_error_has_no_seq) {
  const server_message m = read(encode_error("r9", 3, {errc::duplicate_id, "id 'r9' is still active", 0}, false));
  EXPECT_EQ(keys_of(m), (std::vector<std::string>{"v", "t", "id", "terminal", "code", "name", "message", "retryable"}));
  EXPECT_FALSE(m.get_bool("terminal", true));
  EXPECT_EQ(m.id(), "r9");
}

TEST(wire_codec, retryable_errors_carry_retry_after) {
  for (errc c : {errc::overloaded, errc::not_ready, errc::draining}) {
    const server_message m = read(encode_error("q", 0, {c, "later", 750}, true));
    EXPECT_TRUE(m.get_bool("retryable"));
    EXPECT_EQ(m.get_uint("retry_after_ms"), 750u);
    EXPECT_EQ(m.get_uint("code"), c == errc::overloaded ? 429u : 503u);
  }
}

TEST(wire_codec, unsupported_version_lists_supported) {
  const server_message m = read(encode_error("", 0, {errc::unsupported_version, "send v = 1", 0}, false));
  EXPECT_EQ(m.get_uint("code"), 505u);
  EXPECT_EQ(m.get_string("name"), "unsupported_version");
  EXPECT_EQ(m.get("supported")->as<std::vector<uint64_t>>(), std::vector<uint64_t>{1});
}

TEST(wire_codec, pong_echoes_the_decoded_nonce) {
  const test::mp nonce =
      test::mp::arr({"abc", -1, test::mp::map({{"k", 2.5}}), 3.0, test::mp::f32(4.0f), test::mp::raw("\xd4\x01\x02")});
  const std::vector<uint8_t> ping = test::envelope("ping", {{"nonce", nonce}, {"id", "p"}}).bytes();
  const decode_result d = decode_client_message(ping.data(), ping.size(), {});
  ASSERT_TRUE(d.ok()) << d.error.message;
  const wire_bytes pong = encode_pong(d.id, 0, d.nonce, 1700000000123ull);
  const server_message m = read(pong);
  EXPECT_EQ(m.type(), "pong");
  EXPECT_EQ(m.id(), "p");
  EXPECT_EQ(m.get_uint("server_time_ms"), 1700000000123ull);
  // The nonce comes back byte for byte: integral floats stay floats, ext stays ext.
  const std::vector<uint8_t> sent = nonce.bytes();
  EXPECT_NE(std::search(pong.begin(), pong.end(), sent.begin(), sent.end()), pong.end());
  const msgpack::object& echoed = *m.get("nonce");
  ASSERT_EQ(echoed.type, msgpack::type::ARRAY);
  ASSERT_EQ(echoed.via.array.size, 6u);
  EXPECT_EQ(echoed.via.array.ptr[3].type, msgpack::type::FLOAT64);
  EXPECT_EQ(echoed.via.array.ptr[4].type, msgpack::type::FLOAT32);
  EXPECT_EQ(echoed.via.array.ptr[5].type, msgpack::type::EXT);

  const server_message bare = read(encode_pong("", 0, {}, 5));
  EXPECT_EQ(keys_of(bare), (std::vector<std::string>{"v", "t", "server_time_ms"}));
}

TEST(wire_codec, stats_every_field) {
  server_stats s;
  s.engine.running = 3;
  s.engine.waiting = 4;
  s.engine.kv_blocks_used = 50;
  s.engine.kv_blocks_total = 64;
  s.engine.kv_type = "q8_0";
  s.engine.kv_bytes_per_token = 3740;
  s.engine.kernel_isa = "amx";
  s.engine.kv_bytes_used = 4000;
  s.engine.kv_bytes_full = 12000;
  s.engine.kv_bytes_total = 64000;
  s.engine.kv_group_windows = {0, 1024};
  s.engine.kv_group_layers = {1, 5};
  s.engine.kv_group_blocks_used = {30, 20};
  s.engine.kv_group_blocks_released = {0, 10};
  s.engine.prefix_cache_hit_rate = 0.25;
  s.engine.prefix_cache_enabled = false;
  s.engine.state_slots_used = 3;
  s.engine.state_bytes_per_slot = 1 << 20;
  s.engine.tokens_generated = 1000;
  s.engine.tokens_prefilled = 5000;
  s.engine.finished_by_reason = {10, 2, 1};  // stop, length, cancelled; the rest missing -> 0
  s.engine.preemptions = 6;
  s.engine.step_batch_tokens_mean = 7.5;
  s.malformed_messages = 8;
  s.ttft_ms = {10, 20, 30};
  s.itl_ms = {1, 2, 3};
  s.uptime_s = 42.5;
  const server_message m = read(encode_stats("", 0, s));
  EXPECT_EQ(keys_of(m), (std::vector<std::string>{"v", "t", "running", "waiting", "kv_blocks_used", "kv_blocks_total",
                                                  "kv_type", "kernel_isa", "kv_bytes_per_token", "kv_bytes_used", "kv_bytes_full", "kv_bytes_total",
                                                  "kv_groups", "prefix_cache_hit_rate", "prefix_cache_enabled", "state_slots_used",
                                                  "state_bytes_per_slot", "tokens_generated", "tokens_prefilled",
                                                  "requests_finished", "preemptions", "spec_drafted_tokens",
                                                  "spec_accepted_tokens", "malformed_messages",
                                                  "step_batch_tokens_mean", "ttft_ms", "itl_ms", "uptime_s"}));
  EXPECT_EQ(m.type(), "stats");
  EXPECT_EQ(m.get_uint("running"), 3u);
  EXPECT_EQ(m.get_uint("waiting"), 4u);
  EXPECT_EQ(m.get_uint("kv_blocks_used"), 50u);
  EXPECT_EQ(m.get_uint("kv_blocks_total"), 64u);
  EXPECT_EQ(m.get_string("kv_type"), "q8_0");
  EXPECT_EQ(m.get_string("kernel_isa"), "amx");
  EXPECT_EQ(m.get_uint("kv_bytes_per_token"), 3740u);
  EXPECT_EQ(m.get_uint("kv_bytes_used"), 4000u);
  EXPECT_EQ(m.get_uint("kv_bytes_full"), 12000u);
  EXPECT_EQ(m.get_uint("kv_bytes_total"), 64000u);
  const auto groups = m.get("kv_groups")->as<std::vector<std::map<std::string, uint64_t>>>();
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0], (std::map<std::string, uint64_t>{{"window", 0}, {"layers", 1}, {"blocks_used", 30}, {"blocks_released", 0}}));
  EXPECT_EQ(groups[1], (std::map<std::string, uint64_t>{{"window", 1024}, {"layers", 5}, {"blocks_used", 20}, {"blocks_released", 10}}));
  EXPECT_EQ(m.get_double("prefix_cache_hit_rate"), 0.25);
  EXPECT_EQ(m.get("prefix_cache_enabled")->as<bool>(), false);
  EXPECT_EQ(m.get_uint("state_slots_used"), 3u);
  EXPECT_EQ(m.get_uint("state_bytes_per_slot"), 1u << 20);
  EXPECT_EQ(m.get_uint("tokens_generated"), 1000u);
  EXPECT_EQ(m.get_uint("tokens_prefilled"), 5000u);
  EXPECT_EQ((m.get("requests_finished")->as<std::map<std::string, uint64_t>>()),
            (std::map<std::string, uint64_t>{{"stop", 10}, {"length", 2}, {"cancelled", 1}, {"deadline", 0},
                                             {"shutdown", 0}, {"client_gone", 0}, {"error", 0}}));
  EXPECT_EQ(m.get_uint("preemptions"), 6u);
  EXPECT_EQ(m.get_uint("malformed_messages"), 8u);
  EXPECT_EQ(m.get_double("step_batch_tokens_mean"), 7.5);
  EXPECT_EQ((m.get("ttft_ms")->as<std::map<std::string, double>>()),
            (std::map<std::string, double>{{"p50", 10}, {"p90", 20}, {"p99", 30}}));
  EXPECT_EQ((m.get("itl_ms")->as<std::map<std::string, double>>()),
            (std::map<std::string, double>{{"p50", 1}, {"p90", 2}, {"p99", 3}}));
  EXPECT_EQ(m.get_double("uptime_s"), 42.5);
  EXPECT_EQ(m.get("ttft_ms")->via.map.ptr[0].val.type, msgpack::type::FLOAT64);
}

TEST(wire_codec, health) {
  const std::pair<health_status, const char*> cases[] = {
      {health_status::starting, "starting"}, {health_status::ready, "ready"}, {health_status::draining, "draining"}};
  for (const auto& [status, name] : cases) {
    const server_message m = read(encode_health("h", 2, status, status != health_status::starting));
    EXPECT_EQ(m.type(), "health");
    EXPECT_EQ(m.id(), "h");
    EXPECT_EQ(m.get_uint("seq"), 2u);
    EXPECT_EQ(m.get_string("status"), name);
    EXPECT_EQ(m.get_bool("model_loaded", status == health_status::starting), status != health_status::starting);
  }
}

TEST(wire_codec, models) {
  model_info a{"stories260K", "llama", 512, 512, "f32", 260000};
  model_info b{"tiny", "llama", 2048, 32000, "q4_0", 1100000000ull};
  const server_message m = read(encode_models("", 0, {a, b}));
  EXPECT_EQ(m.type(), "models");
  const msgpack::object& list = *m.get("models");
  ASSERT_EQ(list.type, msgpack::type::ARRAY);
  ASSERT_EQ(list.via.array.size, 2u);
  const model_info* want[] = {&a, &b};
  for (uint32_t i = 0; i < 2; ++i) {
    const msgpack::object& e = list.via.array.ptr[i];
    EXPECT_EQ(object_string(e, "name"), want[i]->name);
    EXPECT_EQ(object_string(e, "arch"), want[i]->arch);
    EXPECT_EQ(object_uint(e, "n_ctx"), want[i]->n_ctx);
    EXPECT_EQ(object_uint(e, "n_vocab"), want[i]->n_vocab);
    EXPECT_EQ(object_string(e, "quant"), want[i]->quant);
    EXPECT_EQ(object_uint(e, "n_params"), want[i]->n_params);
  }
  EXPECT_EQ(read(encode_models("", 0, {})).get("models")->via.array.size, 0u);
}

TEST(wire_codec, server_decoder_rejects_non_messages) {
  const auto bad = [](const std::vector<uint8_t>& b) { return !decode_server_message(b.data(), b.size()).ok(); };
  EXPECT_TRUE(bad({}));
  EXPECT_TRUE(bad({0xc1}));
  EXPECT_TRUE(bad(test::mp::arr({1}).bytes()));
  EXPECT_TRUE(bad(test::mp::map({{"t", 1}}).bytes()));
  EXPECT_FALSE(bad(test::mp::map({{"t", "x"}}).bytes()));
}

}  // namespace
}  // namespace cortex::wire
