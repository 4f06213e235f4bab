#pragma once
// Prometheus's text exposition format (version 0.0.4), built from plain
// values: what /metrics serves. Pure: the coordinator gathers the numbers,
// this module only names, checks and prints them, so `promtool check
// metrics` holds by construction (tests/metrics, and tests/e2e with the real
// promtool).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace idlegrid::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

// Upper bounds (seconds) for latencies from milliseconds to an hour.
const std::vector<double>& LatencyBuckets();
// Upper bounds (seconds) for waits and run times from a second to a day.
const std::vector<double>& DurationBuckets();

// Observations bucketed by fixed upper bounds (not thread-safe: the
// coordinator holds its own lock around Observe and copies for Render).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double value);
  const std::vector<double>& bounds() const { return bounds_; }
  // counts()[i]: observations <= bounds()[i] and > bounds()[i-1]; the last
  // entry counts those above every bound.
  const std::vector<uint64_t>& counts() const { return counts_; }
  double sum() const { return sum_; }
  uint64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;
  double sum_ = 0;
  uint64_t count_ = 0;
};

enum class Type { kGauge, kCounter, kHistogram };

struct Family {
  std::string name;  // with its unit and, for counters, "_total"
  std::string help;
  Type type = Type::kGauge;
  struct Sample {
    Labels labels;
    double value = 0;
  };
  std::vector<Sample> samples;                           // gauges and counters
  std::vector<std::pair<Labels, Histogram>> histograms;  // histograms
};

// The families as exposition text. Names that break Prometheus's rules (a
// counter without "_total", a bad character, a reserved label) are a bug in
// the caller: they are left out and named in a comment line instead, so one
// bad family never makes the whole scrape unreadable.
std::string Render(const std::vector<Family>& families);

// The reasons Render would leave `family` out ("" when it is fine).
std::string Problem(const Family& family);

}  // namespace idlegrid::metrics
