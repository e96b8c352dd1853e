// metrics_registry: http.md's metric names, types and labels, checked by
// parsing the rendered text with the Prometheus project's own parser
// (Debian's python3-prometheus-client).
#include "actors/gateway_core/metrics_registry.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include <unistd.h>

namespace cortex {
namespace {

using nlohmann::json;

// Families as prometheus_client.parser reads `text`: name -> {type, help, samples}.
json parse_with_prometheus_client(const std::string& text) {
  // Per test and process: ctest runs tests in parallel.
  const std::string stem = ::testing::TempDir() + "cortex_metrics_" +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
                           std::to_string(getpid());
  const std::string path = stem + ".prom";
  std::ofstream(path, std::ios::binary) << text;
  const std::string script =
      "import json, sys\n"
      "from prometheus_client.parser import text_string_to_metric_families\n"
      "out = {}\n"
      "for f in text_string_to_metric_families(open(sys.argv[1]).read()):\n"
      "    out[f.name] = {'type': f.type, 'help': f.documentation,\n"
      "                   'samples': [[s.name, s.labels, s.value] for s in f.samples]}\n"
      "print(json.dumps(out))\n";
  const std::string script_path = stem + ".py";
  std::ofstream(script_path) << script;
  FILE* p = popen(("/usr/bin/python3 " + script_path + " " + path + " 2>&1").c_str(), "r");
  if (!p) return nullptr;
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int rc = pclose(p);
  EXPECT_EQ(rc, 0) << out;
  std::remove(path.c_str());
  std::remove(script_path.c_str());
  json j = json::parse(out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << out;
  return j;
}

// The value of the sample `name` with exactly `labels`, or -1.
double value(const json& families, const std::string& family, const std::string& name, const json& labels) {
  for (const json& s : families[family]["samples"])
    if (s[0] == name && s[1] == labels) return s[2].get<double>();
  return -1;
}

request_finished finished_request() {
  request_finished f;
  f.reason = finish_reason::length;
  f.prompt_tokens = 10;
  f.cached_tokens = 4;
  f.completion_tokens = 5;
  f.preemptions = 1;
  f.timings.ttft_ms = 120;    // 0.12 s: in (0.1, 0.25]
  f.timings.queue_ms = 3;     // 0.003 s: in (0.001, 0.005]
  f.timings.decode_ms = 240;  // 4 gaps of 0.06 s: in (0.05, 0.075]
  f.timings.total_ms = 400;   // 0.4 s: in (0.25, 0.5]
  return f;
}

TEST(MetricsRegistry, EveryFamilyOfHttpMdWithItsType) {
  metrics_registry m;
  const json fams = parse_with_prometheus_client(m.render());
  // The parser drops a counter's _total suffix from the family name.
  const std::map<std::string, std::string> want = {
      {"cortex_requests", "counter"}, {"cortex_prompt_tokens", "counter"},
      {"cortex_generation_tokens", "counter"}, {"cortex_prefix_cache_hit_tokens", "counter"},
      {"cortex_preemptions", "counter"}, {"cortex_malformed_messages", "counter"},
      {"cortex_spec_drafted_tokens", "counter"}, {"cortex_spec_accepted_tokens", "counter"},  // issue 13
      {"cortex_rejections", "counter"}, {"cortex_requests_running", "gauge"},
      {"cortex_requests_waiting", "gauge"}, {"cortex_kv_blocks_used", "gauge"},
      {"cortex_kv_blocks_total", "gauge"}, {"cortex_kv_bytes_per_token", "gauge"}, {"cortex_connections", "gauge"},
      {"cortex_kv_bytes_used", "gauge"}, {"cortex_kv_bytes_full", "gauge"}, {"cortex_kv_bytes_total", "gauge"},  // memory kinds
      {"cortex_model_loaded", "gauge"}, {"cortex_time_to_first_token_seconds", "histogram"},
      {"cortex_inter_token_latency_seconds", "histogram"}, {"cortex_request_duration_seconds", "histogram"},
      {"cortex_queue_time_seconds", "histogram"}, {"cortex_step_duration_seconds", "histogram"},
      {"cortex_step_batch_tokens", "histogram"}};
  ASSERT_TRUE(fams.is_object());
  EXPECT_EQ(fams.size(), want.size()) << fams.dump();
  for (const auto& [name, type] : want) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(fams.contains(name));
    EXPECT_EQ(fams[name]["type"], type);
    EXPECT_FALSE(fams[name]["help"].get<std::string>().empty());
  }
  EXPECT_EQ(value(fams, "cortex_prompt_tokens", "cortex_prompt_tokens_total", json::object()), 0);
  EXPECT_EQ(value(fams, "cortex_model_loaded", "cortex_model_loaded", json::object()), 0);
}

TEST(MetricsRegistry, RecordedValuesParseBack) {
  metrics_registry m;
  m.record_finished("chat_completions", finished_request());
  m.count_request("wire", "stop");
  m.count_malformed_message("http");
  m.count_malformed_message("http");
  m.count_rejection("overloaded");
  m.set_requests_running(3);
  m.set_requests_waiting(2);
  m.set_kv_blocks_used(40);
  m.set_kv_blocks_total(512);
  m.set_kv_bytes_per_token(22528);
  m.set_kv_bytes(1000, 3600, 9000);
  m.set_kv_groups({{0, 10, 0}, {1024, 2, 8}});
  m.set_connections("http", 7);
  m.set_connections("zmq", 1);
  m.set_model_loaded(true);
  m.set_kernel_isa("amx");
  m.observe_step(0.02, 48);
  m.observe_step(0.5, 512);
  // A label value that needs escaping survives the round trip.
  m.count_request("odd\"end\\point\n", "stop");
  const json f = parse_with_prometheus_client(m.render());

  EXPECT_EQ(value(f, "cortex_requests", "cortex_requests_total", {{"endpoint", "chat_completions"}, {"reason", "length"}}), 1);
  EXPECT_EQ(value(f, "cortex_requests", "cortex_requests_total", {{"endpoint", "wire"}, {"reason", "stop"}}), 1);
  EXPECT_EQ(value(f, "cortex_requests", "cortex_requests_total", {{"endpoint", "odd\"end\\point\n"}, {"reason", "stop"}}), 1);
  EXPECT_EQ(value(f, "cortex_prompt_tokens", "cortex_prompt_tokens_total", json::object()), 10);
  EXPECT_EQ(value(f, "cortex_generation_tokens", "cortex_generation_tokens_total", json::object()), 5);
  EXPECT_EQ(value(f, "cortex_prefix_cache_hit_tokens", "cortex_prefix_cache_hit_tokens_total", json::object()), 4);
  EXPECT_EQ(value(f, "cortex_preemptions", "cortex_preemptions_total", json::object()), 1);
  EXPECT_EQ(value(f, "cortex_malformed_messages", "cortex_malformed_messages_total", {{"gateway", "http"}}), 2);
  EXPECT_EQ(value(f, "cortex_rejections", "cortex_rejections_total", {{"code", "overloaded"}}), 1);
  EXPECT_EQ(value(f, "cortex_requests_running", "cortex_requests_running", json::object()), 3);
  EXPECT_EQ(value(f, "cortex_requests_waiting", "cortex_requests_waiting", json::object()), 2);
  EXPECT_EQ(value(f, "cortex_kv_blocks_used", "cortex_kv_blocks_used", json::object()), 40);
  EXPECT_EQ(value(f, "cortex_kv_blocks_total", "cortex_kv_blocks_total", json::object()), 512);
  EXPECT_EQ(value(f, "cortex_kv_bytes_per_token", "cortex_kv_bytes_per_token", json::object()), 22528);
  EXPECT_EQ(value(f, "cortex_kv_bytes_used", "cortex_kv_bytes_used", json::object()), 1000);
  EXPECT_EQ(value(f, "cortex_kv_bytes_full", "cortex_kv_bytes_full", json::object()), 3600);
  EXPECT_EQ(value(f, "cortex_kv_bytes_total", "cortex_kv_bytes_total", json::object()), 9000);
  EXPECT_EQ(value(f, "cortex_kv_group_blocks_used", "cortex_kv_group_blocks_used", {{"group", "0"}, {"window", "0"}}), 10);
  EXPECT_EQ(value(f, "cortex_kv_group_blocks_used", "cortex_kv_group_blocks_used", {{"group", "1"}, {"window", "1024"}}), 2);
  EXPECT_EQ(value(f, "cortex_kv_group_blocks_released", "cortex_kv_group_blocks_released", {{"group", "1"}, {"window", "1024"}}), 8);
  EXPECT_EQ(value(f, "cortex_connections", "cortex_connections", {{"gateway", "http"}}), 7);
  EXPECT_EQ(value(f, "cortex_connections", "cortex_connections", {{"gateway", "zmq"}}), 1);
  EXPECT_EQ(value(f, "cortex_model_loaded", "cortex_model_loaded", json::object()), 1);
  EXPECT_EQ(value(f, "cortex_kernel_isa_info", "cortex_kernel_isa_info", {{"isa", "amx"}}), 1);

  const std::string ttft = "cortex_time_to_first_token_seconds";
  EXPECT_EQ(value(f, ttft, ttft + "_bucket", {{"le", "0.1"}}), 0);
  EXPECT_EQ(value(f, ttft, ttft + "_bucket", {{"le", "0.25"}}), 1);
  EXPECT_EQ(value(f, ttft, ttft + "_bucket", {{"le", "+Inf"}}), 1);
  EXPECT_NEAR(value(f, ttft, ttft + "_sum", json::object()), 0.12, 1e-12);
  EXPECT_EQ(value(f, ttft, ttft + "_count", json::object()), 1);
  const std::string itl = "cortex_inter_token_latency_seconds";
  EXPECT_EQ(value(f, itl, itl + "_bucket", {{"le", "0.05"}}), 0);
  EXPECT_EQ(value(f, itl, itl + "_bucket", {{"le", "0.075"}}), 4);
  EXPECT_EQ(value(f, itl, itl + "_count", json::object()), 4);
  EXPECT_NEAR(value(f, itl, itl + "_sum", json::object()), 0.24, 1e-12);
  const std::string dur = "cortex_request_duration_seconds";
  EXPECT_EQ(value(f, dur, dur + "_bucket", {{"le", "0.25"}}), 0);
  EXPECT_EQ(value(f, dur, dur + "_bucket", {{"le", "0.5"}}), 1);
  const std::string queue = "cortex_queue_time_seconds";
  EXPECT_EQ(value(f, queue, queue + "_bucket", {{"le", "0.001"}}), 0);
  EXPECT_EQ(value(f, queue, queue + "_bucket", {{"le", "0.005"}}), 1);
  const std::string step = "cortex_step_duration_seconds";
  EXPECT_EQ(value(f, step, step + "_bucket", {{"le", "0.025"}}), 1);
  EXPECT_EQ(value(f, step, step + "_bucket", {{"le", "0.5"}}), 2);
  EXPECT_EQ(value(f, step, step + "_count", json::object()), 2);
  const std::string batch = "cortex_step_batch_tokens";
  EXPECT_EQ(value(f, batch, batch + "_bucket", {{"le", "32"}}), 0);
  EXPECT_EQ(value(f, batch, batch + "_bucket", {{"le", "64"}}), 1);
  EXPECT_EQ(value(f, batch, batch + "_bucket", {{"le", "512"}}), 2);
  EXPECT_EQ(value(f, batch, batch + "_sum", json::object()), 560);
}

TEST(MetricsRegistry, ARoutersWorkersAndAffinityPicks) {
  metrics_registry m;
  metrics_registry::worker_gauges a;
  a.up = true;
  a.running = 3;
  a.waiting = 1;
  a.kv_blocks_used = 40;
  a.in_flight = 4;
  m.set_worker("127.0.0.1:7001", a);
  m.set_worker("127.0.0.1:7002", metrics_registry::worker_gauges{});  // down
  m.set_affinity_picks(9, 2);
  const json f = parse_with_prometheus_client(m.render());
  const json w1 = {{"worker", "127.0.0.1:7001"}}, w2 = {{"worker", "127.0.0.1:7002"}};
  EXPECT_EQ(f["cortex_worker_up"]["type"], "gauge");
  EXPECT_EQ(value(f, "cortex_worker_up", "cortex_worker_up", w1), 1);
  EXPECT_EQ(value(f, "cortex_worker_up", "cortex_worker_up", w2), 0);
  EXPECT_EQ(value(f, "cortex_worker_requests_running", "cortex_worker_requests_running", w1), 3);
  EXPECT_EQ(value(f, "cortex_worker_requests_waiting", "cortex_worker_requests_waiting", w1), 1);
  EXPECT_EQ(value(f, "cortex_worker_kv_blocks_used", "cortex_worker_kv_blocks_used", w1), 40);
  EXPECT_EQ(value(f, "cortex_worker_requests_in_flight", "cortex_worker_requests_in_flight", w1), 4);
  EXPECT_EQ(f["cortex_router_affinity_picks"]["type"], "counter");
  EXPECT_EQ(value(f, "cortex_router_affinity_picks", "cortex_router_affinity_picks_total", {{"outcome", "followed"}}), 9);
  EXPECT_EQ(value(f, "cortex_router_affinity_picks", "cortex_router_affinity_picks_total", {{"outcome", "overridden"}}), 2);
}

TEST(MetricsRegistry, NoTokenNoTimeToFirstToken) {
  metrics_registry m;
  request_finished f = finished_request();
  f.reason = finish_reason::cancelled;
  f.completion_tokens = 0;
  m.record_finished("completions", f);
  const json fams = parse_with_prometheus_client(m.render());
  EXPECT_EQ(value(fams, "cortex_time_to_first_token_seconds", "cortex_time_to_first_token_seconds_count",
                  json::object()), 0);
  EXPECT_EQ(value(fams, "cortex_inter_token_latency_seconds", "cortex_inter_token_latency_seconds_count",
                  json::object()), 0);
  EXPECT_EQ(value(fams, "cortex_request_duration_seconds", "cortex_request_duration_seconds_count",
                  json::object()), 1);
}

}  // namespace
}  // namespace cortex
