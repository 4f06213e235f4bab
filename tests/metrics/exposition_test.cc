#include "metrics/exposition.h"

#include <gtest/gtest.h>

namespace idlegrid::metrics {
namespace {

TEST(Render, GaugesAndCountersHaveHelpTypeAndEscapedLabels) {
  Family g{"idlegrid_tasks", "Tasks by state.\nSecond line \\ here.", Type::kGauge, {}, {}};
  g.samples.push_back({{{"state", "queued"}}, 3});
  g.samples.push_back({{{"state", "a\"b\\c\nd"}}, 0.25});
  Family c{"idlegrid_heartbeats_total", "Heartbeats.", Type::kCounter, {}, {}};
  c.samples.push_back({{}, 12345678});
  EXPECT_EQ(Render({g, c}),
            "# HELP idlegrid_tasks Tasks by state.\\nSecond line \\\\ here.\n"
            "# TYPE idlegrid_tasks gauge\n"
            "idlegrid_tasks{state=\"queued\"} 3\n"
            "idlegrid_tasks{state=\"a\\\"b\\\\c\\nd\"} 0.25\n"
            "# HELP idlegrid_heartbeats_total Heartbeats.\n"
            "# TYPE idlegrid_heartbeats_total counter\n"
            "idlegrid_heartbeats_total 12345678\n");
}

TEST(Render, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  Histogram h({0.5, 1, 0.1});  // unsorted bounds are sorted
  for (double v : {0.05, 0.1, 0.7, 3.0, 3.0}) h.Observe(v);
  Family f{"idlegrid_wait_seconds", "Waits.", Type::kHistogram, {}, {}};
  f.histograms.emplace_back(Labels{{"pool", "x"}}, h);
  EXPECT_EQ(Render({f}),
            "# HELP idlegrid_wait_seconds Waits.\n"
            "# TYPE idlegrid_wait_seconds histogram\n"
            "idlegrid_wait_seconds_bucket{pool=\"x\",le=\"0.1\"} 2\n"
            "idlegrid_wait_seconds_bucket{pool=\"x\",le=\"0.5\"} 2\n"
            "idlegrid_wait_seconds_bucket{pool=\"x\",le=\"1\"} 3\n"
            "idlegrid_wait_seconds_bucket{pool=\"x\",le=\"+Inf\"} 5\n"
            "idlegrid_wait_seconds_sum{pool=\"x\"} 6.85\n"
            "idlegrid_wait_seconds_count{pool=\"x\"} 5\n");
}

TEST(Render, BadFamiliesAreLeftOutWithTheirReason) {
  struct Case {
    Family family;
    std::string why;
  };
  const std::vector<Case> cases = {
      {{"idlegrid_things", "h", Type::kCounter, {}, {}}, "a counter's name must end in _total"},
      {{"idlegrid_things_total", "h", Type::kGauge, {}, {}}, "only counters end in _total"},
      {{"9things", "h", Type::kGauge, {}, {}}, "invalid metric name"},
      {{"idle-grid", "h", Type::kGauge, {}, {}}, "invalid metric name"},
      {{"idlegrid_x", "", Type::kGauge, {}, {}}, "no HELP text"},
      {{"idlegrid_x_count", "h", Type::kGauge, {}, {}}, "names ending in _count are a histogram's"},
      {{"idlegrid_x", "h", Type::kGauge, {{{{"__name", "v"}}, 1}}, {}}, "invalid or reserved label name"},
      {{"idlegrid_x", "h", Type::kGauge, {{{{"bad-label", "v"}}, 1}}, {}}, "invalid or reserved label name"},
      {{"idlegrid_x", "h", Type::kHistogram, {}, {{{{"le", "1"}}, Histogram({1})}}}, "invalid or reserved label name"},
      {{"idlegrid_x", "h", Type::kHistogram, {{{}, 1}}, {}}, "a histogram has no plain samples"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(Problem(c.family), c.why) << c.family.name;
    EXPECT_EQ(Render({c.family}), "# idlegrid: left out " + c.family.name + ": " + c.why + "\n");
  }
  Family fine{"idlegrid_ok", "h", Type::kGauge, {{{}, 1}}, {}};
  EXPECT_EQ(Problem(fine), "");
}

TEST(Histogram, AValueOnABoundCountsInThatBucket) {
  Histogram h({1, 2});
  h.Observe(1);
  h.Observe(2);
  h.Observe(2.0000001);
  EXPECT_EQ(h.counts(), (std::vector<uint64_t>{1, 1, 1}));
  EXPECT_EQ(h.count(), 3u);
}

}  // namespace
}  // namespace idlegrid::metrics
