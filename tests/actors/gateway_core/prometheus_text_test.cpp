// Prometheus text format 0.0.4 pieces: numbers, escaping, histogram buckets.
#include "actors/gateway_core/prometheus_text.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace cortex {
namespace {

TEST(PrometheusText, Numbers) {
  EXPECT_EQ(prometheus_number(0), "0");
  EXPECT_EQ(prometheus_number(3), "3");
  EXPECT_EQ(prometheus_number(0.25), "0.25");
  EXPECT_EQ(prometheus_number(-1.5), "-1.5");
  EXPECT_EQ(prometheus_number(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(prometheus_number(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(prometheus_number(std::nan("")), "NaN");
}

TEST(PrometheusText, Escaping) {
  EXPECT_EQ(prometheus_escape_label("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(prometheus_escape_help("a\\b\"c\nd"), "a\\\\b\"c\\nd");  // quotes stay in HELP
}

TEST(PrometheusText, WriterLines) {
  prometheus_writer w;
  w.family("x_total", "counter", "Things.\nMore");
  w.sample("x_total", {}, 2);
  w.sample("x_total", {{"a", "1"}, {"b", "q\""}}, 0.5);
  EXPECT_EQ(w.text(),
            "# HELP x_total Things.\\nMore\n"
            "# TYPE x_total counter\n"
            "x_total 2\n"
            "x_total{a=\"1\",b=\"q\\\"\"} 0.5\n");
}

TEST(PrometheusText, HistogramBucketsAreCumulativeAndInclusive) {
  histogram h({0.1, 1, 10});
  h.observe(0.05);
  h.observe(0.1);   // le is inclusive: in the 0.1 bucket
  h.observe(0.5);
  h.observe_n(20, 2);
  EXPECT_EQ(h.count(), 5u);
  EXPECT_DOUBLE_EQ(h.sum(), 0.05 + 0.1 + 0.5 + 40);
  EXPECT_EQ(h.cumulative(0), 2u);
  EXPECT_EQ(h.cumulative(1), 3u);
  EXPECT_EQ(h.cumulative(2), 3u);
  EXPECT_EQ(h.cumulative(3), 5u);  // +Inf
  prometheus_writer w;
  h.write(w, "lat_seconds", {{"k", "v"}});
  EXPECT_EQ(w.text(),
            "lat_seconds_bucket{k=\"v\",le=\"0.1\"} 2\n"
            "lat_seconds_bucket{k=\"v\",le=\"1\"} 3\n"
            "lat_seconds_bucket{k=\"v\",le=\"10\"} 3\n"
            "lat_seconds_bucket{k=\"v\",le=\"+Inf\"} 5\n"
            "lat_seconds_sum{k=\"v\"} 40.65\n"
            "lat_seconds_count{k=\"v\"} 5\n");
}

TEST(PrometheusText, EmptyHistogram) {
  histogram h({1});
  prometheus_writer w;
  h.write(w, "h");
  EXPECT_EQ(w.text(), "h_bucket{le=\"1\"} 0\nh_bucket{le=\"+Inf\"} 0\nh_sum 0\nh_count 0\n");
}

}  // namespace
}  // namespace cortex
