// The shared gateway core with a fake port and a fake clock: routing,
// per-connection ids, cancels before `accepted`, slow-reader merging with its
// bound, client gone, accounting of every terminal event, latency reservoirs.
#include "actors/gateway_core/gateway_core.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cortex {
namespace {

struct extra {
  int tag = 0;
};

// Records every port call as a line, so tests assert the exact sequence.
struct fake_port final : gateway_port<extra> {
  std::vector<std::string> log;
  std::vector<request_chunk> chunks;
  void cancel(request_id rid, finish_reason why) override {
    log.push_back("cancel " + std::to_string(rid) + " " + finish_reason_name(why));
  }
  void send_accepted(gateway_route<extra>& r, const request_accepted& a) override {
    log.push_back("accepted " + r.conn + "/" + a.client_id + " rid " + std::to_string(a.rid) + " tag " + std::to_string(r.extra.tag));
  }
  void send_chunk(gateway_route<extra>& r, const request_chunk& c) override {
    log.push_back("chunk " + r.conn + "/" + c.client_id + " '" + c.text + "'");
    chunks.push_back(c);
  }
  void send_finished(gateway_route<extra>& r, const request_finished& f) override {
    log.push_back("finished " + r.conn + "/" + f.client_id + " " + finish_reason_name(f.reason));
  }
  void send_rejected(gateway_route<extra>& r, const status& e) override {
    log.push_back("rejected " + r.conn + "/" + r.client_id + " " + errc_name(e.code));
  }
  // Terminal events for accounting, apart from `log` (which holds what is sent).
  std::vector<std::string> ended_log;
  void ended(gateway_route<extra>& r, const request_finished& f) override {
    ended_log.push_back("ended " + r.conn + "/" + f.client_id + " " + finish_reason_name(f.reason));
  }
  void ended_rejected(gateway_route<extra>& r, const status& e) override {
    ended_log.push_back("ended " + r.conn + "/" + r.client_id + " " + errc_name(e.code));
  }
};

struct core_test : ::testing::Test {
  fake_port port;
  gateway_clock::time_point now{};
  gateway_core_limits limits;
  std::unique_ptr<gateway_core<extra>> core;
  void SetUp() override { make_core(); }
  void make_core() {
    core = std::make_unique<gateway_core<extra>>(port, limits, [this] { return now; });
  }
  void advance_ms(int ms) { now += std::chrono::milliseconds(ms); }

  // Opens conn/id and has the engine accept it as `rid`; returns its key.
  route_key start(const std::string& conn, const std::string& id, request_id rid) {
    auto key = core->open(conn, id);
    EXPECT_TRUE(key.has_value());
    request_accepted a;
    a.rid = rid;
    a.client_id = key->str();
    core->on_accepted(a);
    return *key;
  }
  void chunk(const route_key& key, const std::string& text, std::vector<int32_t> ids = {}) {
    request_chunk c;
    c.client_id = key.str();
    c.text = text;
    c.token_ids = std::move(ids);
    core->on_chunk(c);
  }
  void finish(const route_key& key, finish_reason why = finish_reason::stop, double ttft_ms = 0) {
    request_finished f;
    f.client_id = key.str();
    f.reason = why;
    f.timings.ttft_ms = ttft_ms;
    core->on_finished(f);
  }
};

TEST_F(core_test, ids_are_scoped_per_connection_and_free_again_after_the_end) {
  auto k1 = core->open("a", "1", {7});
  ASSERT_TRUE(k1);
  EXPECT_FALSE(core->open("a", "1")) << "a live id on the same connection is a duplicate";
  auto k2 = core->open("b", "1");
  ASSERT_TRUE(k2) << "another connection may use the same id";
  EXPECT_NE(*k1, *k2);
  EXPECT_EQ(core->n_active(), 2u);

  request_accepted a;
  a.rid = 11;
  a.client_id = k1->str();
  core->on_accepted(a);
  finish(*k1);
  EXPECT_EQ(port.log, (std::vector<std::string>{"accepted a/1 rid 11 tag 7", "finished a/1 stop"}));
  EXPECT_EQ(core->n_active(), 1u);
  EXPECT_TRUE(core->open("a", "1")) << "the id is free once its request ended";
}

TEST_F(core_test, a_duplicate_leaves_the_live_request_untouched) {
  auto key = start("a", "x", 5);
  EXPECT_FALSE(core->open("a", "x"));
  chunk(key, "hi");
  EXPECT_EQ(port.log.back(), "chunk a/x 'hi'");
  EXPECT_EQ(core->n_active(), 1u);
}

TEST_F(core_test, cancel_before_accepted_is_sent_once_the_rid_is_known) {
  auto key = core->open("a", "1");
  core->cancel("a", "1");
  EXPECT_TRUE(port.log.empty()) << "no rid yet: nothing to cancel in the engine";
  request_accepted a;
  a.rid = 42;
  a.client_id = key->str();
  core->on_accepted(a);
  EXPECT_EQ(port.log, (std::vector<std::string>{"accepted a/1 rid 42 tag 0", "cancel 42 cancelled"}));
}

TEST_F(core_test, cancel_of_unknown_ids_is_ignored) {
  start("a", "1", 3);
  core->cancel("a", "2");
  core->cancel("b", "1");
  EXPECT_EQ(port.log.size(), 1u);
  core->cancel("a", "1");
  EXPECT_EQ(port.log.back(), "cancel 3 cancelled");
}

TEST_F(core_test, a_blocked_reader_gets_one_merged_chunk_in_order_when_it_drains) {
  auto key = start("a", "1", 1);
  chunk(key, "A", {1});
  core->set_blocked("a", true);
  chunk(key, "B", {2});
  chunk(key, "C", {3, 4});
  EXPECT_EQ(port.chunks.size(), 1u) << "nothing goes out while blocked";
  core->set_blocked("a", false);
  ASSERT_EQ(port.chunks.size(), 2u);
  EXPECT_EQ(port.chunks[1].text, "BC");
  EXPECT_EQ(port.chunks[1].token_ids, (std::vector<int32_t>{2, 3, 4}));
  chunk(key, "D");
  EXPECT_EQ(port.log.back(), "chunk a/1 'D'");
}

TEST_F(core_test, finished_flushes_the_held_chunk_first) {
  auto key = start("a", "1", 1);
  core->set_blocked("a", true);
  chunk(key, "x");
  chunk(key, "y");
  finish(key, finish_reason::length);
  ASSERT_GE(port.log.size(), 3u);
  EXPECT_EQ(port.log[port.log.size() - 2], "chunk a/1 'xy'");
  EXPECT_EQ(port.log.back(), "finished a/1 length");
}

TEST_F(core_test, a_reader_past_the_backlog_bound_is_cancelled_once) {
  limits.max_pending_bytes = 10;
  make_core();
  auto key = start("a", "1", 9);
  auto other = start("a", "2", 10);
  core->set_blocked("a", true);
  chunk(key, "12345", {1});   // 5 + 4 = 9 bytes: within
  EXPECT_EQ(core->n_overflowed(), 0u);
  chunk(key, "6", {2});       // 14 bytes: over
  chunk(key, "7");            // still over: no second cancel
  EXPECT_EQ(core->n_overflowed(), 1u);
  int cancels = 0;
  for (auto& l : port.log) cancels += l == "cancel 9 client_gone";
  EXPECT_EQ(cancels, 1);
  (void)other;
  for (auto& l : port.log) EXPECT_NE(l, "cancel 10 client_gone") << "only the request over the bound ends";
}

TEST_F(core_test, a_gone_connection_cancels_all_its_requests_and_gets_nothing_more) {
  auto k1 = start("a", "1", 1);
  auto k2 = core->open("a", "2");  // not yet accepted
  auto k3 = start("b", "1", 3);
  core->set_blocked("a", true);
  chunk(k1, "held");
  port.log.clear();
  EXPECT_EQ(core->conn_gone("a"), 2u);
  EXPECT_EQ(port.log, (std::vector<std::string>{"cancel 1 client_gone"}));
  request_accepted a;
  a.rid = 2;
  a.client_id = k2->str();
  core->on_accepted(a);
  EXPECT_EQ(port.log.back(), "cancel 2 client_gone") << "the pending cancel carries client_gone";
  chunk(k1, "late");
  finish(k1, finish_reason::client_gone);
  for (auto& l : port.log) EXPECT_EQ(l.find("a/"), std::string::npos) << "nothing is sent to a gone peer: " << l;
  EXPECT_EQ(core->n_active(), 2u);  // a/2 and b/1 still await their terminal events
  chunk(k3, "fine");
  EXPECT_EQ(port.log.back(), "chunk b/1 'fine'");
  EXPECT_FALSE(core->is_blocked("a"));
}

TEST_F(core_test, rejected_ends_the_route_and_unknown_keys_are_dropped) {
  auto key = core->open("a", "1");
  request_rejected rj;
  rj.client_id = key->str();
  rj.error = {errc::overloaded, "full", 100};
  core->on_rejected(rj);
  EXPECT_EQ(port.log, (std::vector<std::string>{"rejected a/1 overloaded"}));
  EXPECT_EQ(core->n_active(), 0u);
  chunk(*key, "late");
  finish(*key);
  EXPECT_EQ(port.log.size(), 1u);
}

TEST_F(core_test, every_terminal_event_is_accounted_even_for_a_gone_connection) {
  auto k1 = start("a", "1", 1);
  auto k2 = start("a", "2", 2);
  auto k3 = core->open("a", "3");
  auto k4 = start("b", "1", 4);
  core->conn_gone("a");
  port.log.clear();
  finish(k1, finish_reason::client_gone);
  finish(k2, finish_reason::length);  // ended on its own before the cancel reached the engine
  request_rejected rj;
  rj.client_id = k3->str();
  rj.error = {errc::overloaded, "full", 100};
  core->on_rejected(rj);
  finish(k4, finish_reason::stop);
  finish(k1);  // already ended: dropped
  EXPECT_EQ(port.ended_log, (std::vector<std::string>{"ended a/1 client_gone", "ended a/2 length",
                                                      "ended a/3 overloaded", "ended b/1 stop"}));
  EXPECT_EQ(port.log, (std::vector<std::string>{"finished b/1 stop"})) << "nothing is sent to the gone peer";
}

TEST_F(core_test, latency_reservoirs_use_the_clock_and_the_engine_ttft) {
  auto key = start("a", "1", 1);
  chunk(key, "a");
  advance_ms(10);
  chunk(key, "b");
  advance_ms(20);
  chunk(key, "");  // an empty chunk carries no token: no sample
  advance_ms(5);
  chunk(key, "c");
  finish(key, finish_reason::stop, 123.0);
  EXPECT_EQ(core->itl_ms().size(), 2u);
  EXPECT_DOUBLE_EQ(core->itl_ms().percentile(0), 10.0);
  EXPECT_DOUBLE_EQ(core->itl_ms().percentile(99), 25.0);
  EXPECT_EQ(core->ttft_ms().size(), 1u);
  EXPECT_DOUBLE_EQ(core->ttft_ms().percentile(50), 123.0);
}

TEST(merge_chunk, appends_text_ids_and_logprobs) {
  request_chunk a, b;
  a.text = "he";
  a.token_ids = {1};
  a.logprobs.resize(1);
  a.logprobs[0].id = 1;
  b.text = "llo";
  b.token_ids = {2, 3};
  b.logprobs.resize(2);
  b.logprobs[1].id = 3;
  merge_chunk(a, std::move(b));
  EXPECT_EQ(a.text, "hello");
  EXPECT_EQ(a.token_ids, (std::vector<int32_t>{1, 2, 3}));
  ASSERT_EQ(a.logprobs.size(), 3u);
  EXPECT_EQ(a.logprobs[2].id, 3);
  EXPECT_EQ(pending_bytes(a), 5u + 12u);
}

}  // namespace
}  // namespace cortex
