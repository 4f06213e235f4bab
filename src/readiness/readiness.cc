#include "readiness/readiness.h"
#include "readiness/result_fields.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string_view>

#include "readiness/kernel.h"

namespace idlegrid::readiness {
namespace {

constexpr size_t kMaxResultSize = 4096;
constexpr size_t kMaxQuotedLine = 80;
// The benchmark prints seconds with 9 fraction digits and the score with 3,
// so an honest score matches iterations / seconds far closer than this.
constexpr double kScoreRelativeTolerance = 1e-6;
constexpr double kScoreAbsoluteTolerance = 1.0;

constexpr std::string_view kChecksumKey = "checksum";
constexpr std::string_view kIterationsKey = "iterations";
constexpr std::string_view kSecondsKey = "seconds";
constexpr std::string_view kScoreKey = "score";

std::string QuoteLine(std::string_view line) {
  if (line.size() <= kMaxQuotedLine) return "\"" + std::string(line) + "\"";
  return "\"" + std::string(line.substr(0, kMaxQuotedLine)) + "...\"";
}

// Stores the value of one key=value line into `result`; false if malformed.
bool ParseValue(std::string_view key, std::string_view value, BenchResult& result) {
  if (key == kChecksumKey) {
    auto checksum = ParseUnsigned(value, 16, 16);
    if (checksum) result.checksum = *checksum;
    return checksum.has_value();
  }
  if (key == kIterationsKey) {
    auto iterations = ParseUnsigned(value, 10, 20);
    if (iterations) result.iterations = *iterations;
    return iterations.has_value();
  }
  auto number = ParseNonNegativeDecimal(value);
  if (number) (key == kSecondsKey ? result.seconds : result.score) = *number;
  return number.has_value();
}

std::string Hex(uint64_t value) {
  char text[19];
  std::snprintf(text, sizeof(text), "0x%016llx", static_cast<unsigned long long>(value));
  return text;
}

std::string Fixed(double value, int fraction_digits) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", fraction_digits, value);
  return text;
}

}  // namespace

std::vector<std::string> BenchArgs(uint64_t iterations, uint64_t seed, const std::string& output_dir) {
  return {std::to_string(iterations), std::to_string(seed), output_dir};
}

uint64_t ExpectedChecksum(uint64_t seed, uint64_t iterations) { return ig_cpu_kernel(seed, iterations); }

Result<BenchResult> ParseBenchResult(const std::string& text) {
  if (text.size() > kMaxResultSize) {
    return Status::InvalidArgument("benchmark result is " + std::to_string(text.size()) + " bytes; at most " +
                                   std::to_string(kMaxResultSize) + " are expected");
  }
  std::map<std::string_view, int> seen_on_line = {
      {kChecksumKey, 0}, {kIterationsKey, 0}, {kSecondsKey, 0}, {kScoreKey, 0}};
  BenchResult result;
  size_t start = 0;
  for (int line_number = 1; start < text.size(); ++line_number) {
    size_t newline = text.find('\n', start);
    std::string_view line(text.data() + start, (newline == std::string::npos ? text.size() : newline) - start);
    auto bad = [&](const std::string& why) {
      return Status::InvalidArgument("benchmark result line " + std::to_string(line_number) + " " + QuoteLine(line) +
                                     ": " + why);
    };
    if (newline == std::string::npos) return bad("not ended by a newline");
    start = newline + 1;
    size_t equals = line.find('=');
    if (equals == std::string_view::npos) return bad("expected key=value");
    std::string_view key = line.substr(0, equals);
    auto seen = seen_on_line.find(key);
    if (seen == seen_on_line.end()) {
      return bad("unknown key; expected checksum, iterations, seconds or score");
    }
    if (seen->second != 0) {
      return bad("repeats " + std::string(key) + " (first on line " + std::to_string(seen->second) + ")");
    }
    seen->second = line_number;
    if (!ParseValue(key, line.substr(equals + 1), result)) {
      return bad(key == kChecksumKey     ? "checksum must be 1 to 16 hex digits"
                 : key == kIterationsKey ? "iterations must be a decimal integer below 2^64"
                                         : std::string(key) + " must be a finite, non-negative decimal number");
    }
  }
  for (const auto& [key, line_number] : seen_on_line) {
    if (line_number == 0) {
      return Status::InvalidArgument("benchmark result has no " + std::string(key) + " line");
    }
  }
  return result;
}

v1::Measurement Judge(const BenchResult& result, uint64_t seed, uint64_t iterations, double min_plausible_score) {
  v1::Measurement measurement;
  measurement.set_cpu_score(result.score);
  auto fail = [&measurement](const std::string& reason) {
    measurement.set_passed(false);
    measurement.set_reason(reason);
    return measurement;
  };
  if (result.iterations != iterations) {
    return fail("wrong iteration count: got " + std::to_string(result.iterations) + ", expected " +
                std::to_string(iterations));
  }
  uint64_t expected = ExpectedChecksum(seed, iterations);
  if (result.checksum != expected) {
    return fail("wrong checksum: got " + Hex(result.checksum) + ", expected " + Hex(expected));
  }
  if (!(result.seconds > 0) || !std::isfinite(result.seconds)) {
    return fail("no plausible duration: seconds is " + Fixed(result.seconds, 9) + "; it must be above 0");
  }
  double computed = static_cast<double>(iterations) / result.seconds;
  double tolerance = std::max(kScoreAbsoluteTolerance, kScoreRelativeTolerance * computed);
  if (!(std::fabs(result.score - computed) <= tolerance)) {
    return fail("inconsistent score: reported " + Fixed(result.score, 3) + " but iterations / seconds is " +
                Fixed(computed, 3));
  }
  if (!(result.score >= min_plausible_score)) {
    return fail("implausibly slow: score " + Fixed(result.score, 3) + " below minimum " +
                Fixed(min_plausible_score, 3));
  }
  measurement.set_passed(true);
  return measurement;
}

}  // namespace idlegrid::readiness
