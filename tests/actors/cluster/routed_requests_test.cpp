// routed_requests (the router's book of requests on workers, issue 14):
// keys per attempt, so a superseded attempt's events are dropped; a lost
// worker resubmits exactly the requests whose client saw no chunk; cancels
// before a worker rid is known wait for it; in-flight counts per worker.
// Sinks are ints here. Also sum_engine_stats (the router's stats).
#include <gtest/gtest.h>

#include <type_traits>

#include "actors/cluster/cluster_stats.hpp"
#include "actors/cluster/routed_requests.hpp"

namespace cortex::cluster {
namespace {

generation_request req(const std::string& id) {
  generation_request r;
  r.client_id = id;
  r.prompt = "Once upon a time";
  r.tags["t"] = "v";
  return r;
}

TEST(routed_requests, events_of_a_superseded_attempt_are_dropped) {
  routed_requests<int> book;
  auto& e = book.open(req("a"), 7);
  const route_key k1 = book.assign(e, "w1");
  EXPECT_EQ(book.find_key(k1), &e);
  book.worker_lost("w1");
  EXPECT_EQ(book.find_key(k1), nullptr) << "no worker serves the attempt any more";
  const route_key k2 = book.assign(e, "w2");
  EXPECT_NE(k1, k2);
  EXPECT_EQ(book.find_key(k1), nullptr);
  EXPECT_EQ(book.find_key(k2), &e);
  EXPECT_EQ(e.client_id, "a");
  EXPECT_EQ(e.sink, 7);
  for (const char* bad : {"", "r", "x1.1", "r1", "r1.", "r1.1x", "r99.1"}) EXPECT_EQ(book.find_key(route_key(bad)), nullptr) << bad;
}

TEST(routed_requests, a_lost_worker_resubmits_only_requests_without_a_chunk) {
  routed_requests<int> book;
  auto& quiet = book.open(req("quiet"), 1);
  auto& streaming = book.open(req("streaming"), 1);
  auto& elsewhere = book.open(req("elsewhere"), 1);
  book.assign(quiet, "w1");
  book.assign(streaming, "w1");
  book.assign(elsewhere, "w2");
  book.accepted(quiet, 10);
  book.accepted(streaming, 11);
  book.produced(streaming);
  EXPECT_EQ(book.in_flight("w1"), 2u);
  auto lost = book.worker_lost("w1");
  ASSERT_EQ(lost.size(), 2u);
  for (const auto& l : lost) EXPECT_EQ(l.resubmit, l.rid == quiet.rid) << l.rid.value();
  EXPECT_EQ(book.in_flight("w1"), 0u);
  EXPECT_EQ(book.in_flight("w2"), 1u);
  EXPECT_EQ(quiet.request.prompt, "Once upon a time") << "kept for the resubmission";
  EXPECT_TRUE(streaming.request.prompt.empty()) << "dropped once a chunk went out";
  EXPECT_EQ(streaming.tags.at("t"), "v") << "tags stay for a terminal the router makes";
}

TEST(routed_requests, a_cancel_without_a_worker_rid_waits_for_the_accepted) {
  routed_requests<int> book;
  auto& e = book.open(req("a"), 1);
  book.assign(e, "w1");
  EXPECT_FALSE(book.cancel(e.rid, finish_reason::client_gone).has_value());
  auto pending = book.accepted(e, 42);
  ASSERT_TRUE(pending.has_value());
  EXPECT_EQ(*pending, finish_reason::client_gone);
  auto now = book.cancel(e.rid, finish_reason::cancelled);
  ASSERT_TRUE(now.has_value());
  EXPECT_EQ(now->first, "w1");
  EXPECT_EQ(now->second, 42u);
  EXPECT_FALSE(book.cancel(routed_request_id(999), finish_reason::cancelled).has_value()) << "unknown rids are ignored";
}

TEST(routed_requests, a_detached_request_starts_a_new_attempt_elsewhere) {
  routed_requests<int> book;
  auto& e = book.open(req("a"), 1);
  const route_key k1 = book.assign(e, "draining");
  book.accepted(e, 5);
  book.detach(e);
  EXPECT_EQ(book.in_flight("draining"), 0u);
  EXPECT_EQ(book.find_key(k1), nullptr);
  EXPECT_FALSE(book.cancel(e.rid, finish_reason::cancelled).has_value()) << "no worker rid until the next accepted";
  const route_key k2 = book.assign(e, "other");
  EXPECT_EQ(book.find_key(k2), &e);
  EXPECT_EQ(book.in_flight("other"), 1u);
  EXPECT_EQ(book.accepted(e, 9), finish_reason::cancelled) << "the cancel made in between is delivered";
}

TEST(routed_requests, close_ends_a_request_and_its_load) {
  routed_requests<int> book;
  auto& a = book.open(req("a"), 1);
  auto& b = book.open(req("b"), 1);
  EXPECT_NE(a.rid, b.rid);
  book.assign(a, "w1");
  book.assign(b, "w1");
  const routed_request_id rid = a.rid;
  const route_key key = routed_requests<int>::key_of(a);
  book.close(rid);
  EXPECT_EQ(book.find(rid), nullptr);
  EXPECT_EQ(book.find_key(key), nullptr);
  EXPECT_EQ(book.in_flight("w1"), 1u);
  EXPECT_EQ(book.size(), 1u);
  book.close(rid);  // twice: nothing
  EXPECT_EQ(book.size(), 1u);
}

TEST(routed_requests, a_key_parses_back_to_its_request_and_attempt) {
  routed_requests<int> book;
  book.open(req("a"), 1);
  auto& e = book.open(req("b"), 1);
  book.assign(e, "w1");
  book.assign(e, "w2");
  const route_key key = routed_requests<int>::key_of(e);
  EXPECT_EQ(key.str(), "r2.2");
  const auto back = parse_routed_key(key);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->rid, e.rid);
  EXPECT_EQ(back->attempt, 2u);
  EXPECT_EQ(e.rid.gateway_rid(), 2u) << "the gateway sees the router's id as the request's rid";
  EXPECT_EQ(routed_request_id::of_gateway_rid(e.rid.gateway_rid()), e.rid);
  // A client's own id or a gateway's key is not one of the router's keys.
  for (const char* other : {"g17", "a", "r2", "r2.x", "r2.99999999999"})
    EXPECT_FALSE(parse_routed_key(route_key(other)).has_value()) << other;
}

// The router's id, an engine request_id, a route key and a client id are
// different things: none converts into another implicitly.
static_assert(!std::is_convertible<routed_request_id, request_id>::value, "");
static_assert(!std::is_convertible<request_id, routed_request_id>::value, "");
static_assert(!std::is_convertible<route_key, std::string>::value, "");
static_assert(!std::is_convertible<std::string, route_key>::value, "");
static_assert(!std::is_convertible<const char*, route_key>::value, "");

TEST(cluster_stats, sums_counts_pools_the_hit_rate_and_weights_the_means) {
  engine_stats a, b;
  a.running = 2;
  a.kv_blocks_total = 100;
  a.prefix_tokens_queried = 100;
  a.prefix_tokens_hit = 90;
  a.prefix_cache_hit_rate = 0.9;
  a.steps = 10;
  a.step_batch_tokens_mean = 4;
  a.step_seqs_max = 3;
  a.finished_by_reason = {1, 2};
  b.running = 1;
  b.kv_blocks_total = 50;
  b.prefix_tokens_queried = 300;
  b.prefix_tokens_hit = 0;
  b.steps = 30;
  b.step_batch_tokens_mean = 8;
  b.step_seqs_max = 5;
  b.finished_by_reason = {0, 1, 4};
  const auto s = sum_engine_stats({a, b});
  EXPECT_EQ(s.running, 3u);
  EXPECT_EQ(s.kv_blocks_total, 150u);
  EXPECT_DOUBLE_EQ(s.prefix_cache_hit_rate, 90.0 / 400.0);  // not the mean of 0.9 and 0
  EXPECT_DOUBLE_EQ(s.step_batch_tokens_mean, (4.0 * 10 + 8.0 * 30) / 40.0);
  EXPECT_EQ(s.step_seqs_max, 5u);
  EXPECT_EQ(s.finished_by_reason, (std::vector<uint64_t>{1, 3, 4}));
  EXPECT_DOUBLE_EQ(sum_engine_stats({}).prefix_cache_hit_rate, 0.0);
}

TEST(cluster_stats, kv_type_and_kernel_isa_are_the_workers_when_they_agree) {
  engine_stats a, b;
  a.kv_type = b.kv_type = "f16";
  a.kernel_isa = b.kernel_isa = "amx";
  a.kv_bytes_per_token = b.kv_bytes_per_token = 640;
  EXPECT_EQ(sum_engine_stats({a, b}).kv_type, "f16");
  EXPECT_EQ(sum_engine_stats({a, b}).kv_bytes_per_token, 640u);
  EXPECT_EQ(sum_engine_stats({a, b}).kernel_isa, "amx");
  b.kernel_isa = "avx512";
  EXPECT_EQ(sum_engine_stats({a, b}).kernel_isa, "mixed");
  b.kv_type = "q8_0";
  b.kv_bytes_per_token = 170;
  EXPECT_EQ(sum_engine_stats({a, b}).kv_type, "mixed");
  EXPECT_EQ(sum_engine_stats({a, b}).kv_bytes_per_token, 640u);
}

TEST(cluster_stats, kv_bytes_add_up_and_groups_add_up_group_by_group_when_the_workers_agree) {
  engine_stats a, b;
  a.kv_bytes_used = 100;
  a.kv_bytes_full = 300;
  a.kv_bytes_total = 1000;
  b.kv_bytes_used = 50;
  b.kv_bytes_full = 50;
  b.kv_bytes_total = 1000;
  a.kv_group_windows = b.kv_group_windows = {0, 1024};
  a.kv_group_layers = b.kv_group_layers = {1, 5};
  a.kv_group_blocks_used = {10, 4};
  a.kv_group_blocks_released = {0, 6};
  b.kv_group_blocks_used = {3, 3};
  b.kv_group_blocks_released = {0, 0};
  engine_stats s = sum_engine_stats({a, b});
  EXPECT_EQ(s.kv_bytes_used, 150u);
  EXPECT_EQ(s.kv_bytes_full, 350u);
  EXPECT_EQ(s.kv_bytes_total, 2000u);
  EXPECT_EQ(s.kv_group_windows, (std::vector<uint32_t>{0, 1024}));
  EXPECT_EQ(s.kv_group_layers, (std::vector<uint32_t>{1, 5}));
  EXPECT_EQ(s.kv_group_blocks_used, (std::vector<uint32_t>{13, 7}));
  EXPECT_EQ(s.kv_group_blocks_released, (std::vector<uint32_t>{0, 6}));
  // Workers of different models: only the bytes add up.
  b.kv_group_windows = {0};
  b.kv_group_layers = {6};
  b.kv_group_blocks_used = {3};
  b.kv_group_blocks_released = {0};
  s = sum_engine_stats({a, b});
  EXPECT_EQ(s.kv_bytes_used, 150u);
  EXPECT_TRUE(s.kv_group_windows.empty());
  EXPECT_TRUE(s.kv_group_blocks_used.empty());
}

}  // namespace
}  // namespace cortex::cluster
