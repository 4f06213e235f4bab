#include "metrics/exposition.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace idlegrid::metrics {
namespace {

bool ValidName(const std::string& name, bool allow_colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (allow_colon && c == ':');
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Shortest text that reads back as the same double; integers without ".0".
std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  for (int precision = 1; precision <= 17; ++precision) {
    char shorter[32];
    std::snprintf(shorter, sizeof shorter, "%.*g", precision, v);
    if (std::strtod(shorter, nullptr) == v) return shorter;
  }
  return buf;
}

// Label values escape backslash, double quote and newline; HELP text
// backslash and newline.
std::string Escape(const std::string& s, bool quote) {
  std::string out;
  for (char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (quote && c == '"')
      out += "\\\"";
    else
      out.push_back(c);
  }
  return out;
}

std::string LabelText(const Labels& labels) {
  if (labels.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out += ",";
    out += labels[i].first + "=\"" + Escape(labels[i].second, true) + "\"";
  }
  return out + "}";
}

const char* TypeName(Type t) {
  switch (t) {
    case Type::kCounter:
      return "counter";
    case Type::kHistogram:
      return "histogram";
    default:
      return "gauge";
  }
}

}  // namespace

const std::vector<double>& LatencyBuckets() {
  static const std::vector<double> b = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  return b;
}

const std::vector<double>& DurationBuckets() {
  static const std::vector<double> b = {1, 5, 15, 30, 60, 300, 900, 1800, 3600, 4 * 3600, 24 * 3600};
  return b;
}

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {
  std::sort(bounds_.begin(), bounds_.end());
}

void Histogram::Observe(double value) {
  const size_t i = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  ++counts_[i];
  sum_ += value;
  ++count_;
}

std::string Problem(const Family& f) {
  if (!ValidName(f.name, true)) return "invalid metric name";
  if (f.help.empty()) return "no HELP text";
  const bool counter_name = EndsWith(f.name, "_total");
  if (f.type == Type::kCounter && !counter_name) return "a counter's name must end in _total";
  if (f.type != Type::kCounter && counter_name) return "only counters end in _total";
  for (const char* reserved : {"_bucket", "_sum", "_count"}) {
    if (EndsWith(f.name, reserved)) return std::string("names ending in ") + reserved + " are a histogram's";
  }
  auto bad_labels = [&](const Labels& labels) {
    for (const auto& [k, v] : labels) {
      if (!ValidName(k, false) || k.rfind("__", 0) == 0) return true;
      if (f.type == Type::kHistogram && k == "le") return true;
    }
    return false;
  };
  for (const auto& s : f.samples) {
    if (f.type == Type::kHistogram) return "a histogram has no plain samples";
    if (bad_labels(s.labels)) return "invalid or reserved label name";
  }
  for (const auto& [labels, h] : f.histograms) {
    if (f.type != Type::kHistogram) return "only a histogram has buckets";
    if (bad_labels(labels)) return "invalid or reserved label name";
  }
  return "";
}

std::string Render(const std::vector<Family>& families) {
  std::string out;
  for (const Family& f : families) {
    if (std::string why = Problem(f); !why.empty()) {
      out += "# idlegrid: left out " + Escape(f.name, false) + ": " + why + "\n";
      continue;
    }
    out += "# HELP " + f.name + " " + Escape(f.help, false) + "\n";
    out += "# TYPE " + f.name + " " + TypeName(f.type) + "\n";
    for (const auto& s : f.samples) out += f.name + LabelText(s.labels) + " " + FormatValue(s.value) + "\n";
    for (const auto& [labels, h] : f.histograms) {
      uint64_t cumulative = 0;
      for (size_t i = 0; i <= h.bounds().size(); ++i) {
        cumulative += h.counts()[i];
        Labels with_le = labels;
        with_le.emplace_back("le", i < h.bounds().size() ? FormatValue(h.bounds()[i]) : "+Inf");
        out += f.name + "_bucket" + LabelText(with_le) + " " + std::to_string(cumulative) + "\n";
      }
      out += f.name + "_sum" + LabelText(labels) + " " + FormatValue(h.sum()) + "\n";
      out += f.name + "_count" + LabelText(labels) + " " + std::to_string(h.count()) + "\n";
    }
  }
  return out;
}

}  // namespace idlegrid::metrics
