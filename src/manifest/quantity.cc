// Byte quantities, durations and CPU amounts as written in manifests.
#include <charconv>
#include <cmath>
#include <limits>
#include <string_view>

#include "manifest/manifest.h"
#include "manifest/quote.h"

namespace idlegrid::manifest {
namespace {

using Wide = unsigned __int128;

struct ByteUnit {
  std::string_view suffix;
  uint64_t multiplier;
};

constexpr ByteUnit kByteUnits[] = {
    {"", 1},
    {"k", 1000ull},
    {"M", 1000ull * 1000},
    {"G", 1000ull * 1000 * 1000},
    {"T", 1000ull * 1000 * 1000 * 1000},
    {"P", 1000ull * 1000 * 1000 * 1000 * 1000},
    {"E", 1000ull * 1000 * 1000 * 1000 * 1000 * 1000},
    {"Ki", 1ull << 10},
    {"Mi", 1ull << 20},
    {"Gi", 1ull << 30},
    {"Ti", 1ull << 40},
    {"Pi", 1ull << 50},
    {"Ei", 1ull << 60},
};

// The binary units FormatBytes uses, largest first.
constexpr ByteUnit kBinaryUnitsDescending[] = {
    {"Ei", 1ull << 60}, {"Pi", 1ull << 50}, {"Ti", 1ull << 40},
    {"Gi", 1ull << 30}, {"Mi", 1ull << 20}, {"Ki", 1ull << 10},
};

struct DurationUnit {
  char suffix;
  uint32_t seconds;
};

constexpr DurationUnit kDurationUnits[] = {
    {'d', 24 * 60 * 60},
    {'h', 60 * 60},
    {'m', 60},
    {'s', 1},
};

constexpr size_t kMaxFractionDigits = 18;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Consumes the leading run of digits of `s`.
std::string_view TakeDigits(std::string_view* s) {
  size_t n = 0;
  while (n < s->size() && IsDigit((*s)[n])) ++n;
  std::string_view digits = s->substr(0, n);
  s->remove_prefix(n);
  return digits;
}

// Decimal digits to an integer; nullopt when the value exceeds `max`.
std::optional<Wide> DigitsToInt(std::string_view digits, Wide max) {
  Wide value = 0;
  for (char c : digits) {
    value = value * 10 + static_cast<unsigned>(c - '0');
    if (value > max) return std::nullopt;
  }
  return value;
}

Status BadBytes(const std::string& s, const std::string& why) {
  return Status::InvalidArgument("invalid byte quantity " + Quote(s) + ": " + why);
}

Status BadDuration(const std::string& s) {
  return Status::InvalidArgument("invalid duration " + Quote(s) +
                                 ": expected seconds (\"90\") or a duration like \"30s\", "
                                 "\"10m\", \"2h\", \"1d\" or \"1h30m\"");
}

}  // namespace

Result<uint64_t> ParseBytes(const std::string& s) {
  constexpr Wide kMax = std::numeric_limits<uint64_t>::max();
  std::string_view rest = s;
  std::string_view whole = TakeDigits(&rest);
  std::string_view fraction;
  if (!rest.empty() && rest.front() == '.') {
    rest.remove_prefix(1);
    fraction = TakeDigits(&rest);
    if (fraction.empty()) return BadBytes(s, "expected digits after \".\"");
  }
  if (whole.empty()) return BadBytes(s, "expected a number like 256Mi, 1Gi, 2G or 1024");
  if (fraction.size() > kMaxFractionDigits) return BadBytes(s, "too many decimal places");

  const ByteUnit* unit = nullptr;
  for (const ByteUnit& candidate : kByteUnits) {
    if (rest == candidate.suffix) unit = &candidate;
  }
  if (unit == nullptr) {
    return BadBytes(s, "unknown unit " + Quote(rest) + " (use k, M, G, T, P, E or Ki, Mi, Gi, Ti, Pi, Ei)");
  }

  std::optional<Wide> whole_value = DigitsToInt(whole, kMax);
  if (!whole_value) return BadBytes(s, "too large");
  Wide bytes = *whole_value * unit->multiplier;
  if (!fraction.empty()) {
    Wide scale = 1;
    for (size_t i = 0; i < fraction.size(); ++i) scale *= 10;
    Wide fraction_bytes = *DigitsToInt(fraction, kMax) * unit->multiplier;
    if (fraction_bytes % scale != 0) return BadBytes(s, "not a whole number of bytes");
    bytes += fraction_bytes / scale;
  }
  if (bytes > kMax) return BadBytes(s, "too large");
  return static_cast<uint64_t>(bytes);
}

Result<uint32_t> ParseDurationSeconds(const std::string& s) {
  constexpr Wide kMax = std::numeric_limits<uint32_t>::max();
  std::string_view rest = s;
  if (rest.empty()) return BadDuration(s);
  if (rest.find_first_not_of("0123456789") == std::string_view::npos) {
    std::optional<Wide> seconds = DigitsToInt(rest, kMax);
    if (!seconds) return Status::InvalidArgument("duration " + Quote(s) + " is too long");
    return static_cast<uint32_t>(*seconds);
  }
  Wide total = 0;
  size_t next_unit = 0;  // units must appear largest first, each at most once
  while (!rest.empty()) {
    std::string_view digits = TakeDigits(&rest);
    if (digits.empty() || rest.empty()) return BadDuration(s);
    char suffix = rest.front();
    rest.remove_prefix(1);
    size_t unit = next_unit;
    while (unit < std::size(kDurationUnits) && kDurationUnits[unit].suffix != suffix) ++unit;
    if (unit == std::size(kDurationUnits)) return BadDuration(s);
    next_unit = unit + 1;
    std::optional<Wide> amount = DigitsToInt(digits, kMax);
    if (!amount) return Status::InvalidArgument("duration " + Quote(s) + " is too long");
    total += *amount * kDurationUnits[unit].seconds;
    if (total > kMax) return Status::InvalidArgument("duration " + Quote(s) + " is too long");
  }
  return static_cast<uint32_t>(total);
}

Result<double> ParseCpu(const std::string& s) {
  auto bad = [&s] {
    return Status::InvalidArgument("invalid CPU amount " + Quote(s) +
                                   ": expected a positive number of cores like 1, 0.5 or 500m");
  };
  std::string_view rest = s;
  bool millicores = !rest.empty() && rest.back() == 'm';
  if (millicores) rest.remove_suffix(1);
  std::string_view number = rest;
  std::string_view whole = TakeDigits(&rest);
  if (whole.empty()) return bad();
  if (!rest.empty()) {
    if (millicores || rest.front() != '.') return bad();
    rest.remove_prefix(1);
    if (TakeDigits(&rest).empty() || !rest.empty()) return bad();
  }
  double value = 0;
  auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (error != std::errc() || end != number.data() + number.size() || !std::isfinite(value)) {
    return bad();
  }
  return millicores ? value / 1000 : value;
}

std::string FormatBytes(uint64_t bytes) {
  if (bytes == 0) return "0";
  for (const ByteUnit& unit : kBinaryUnitsDescending) {
    if (bytes % unit.multiplier == 0) {
      return std::to_string(bytes / unit.multiplier) + std::string(unit.suffix);
    }
  }
  return std::to_string(bytes);
}

std::string FormatDuration(uint32_t seconds) {
  if (seconds == 0) return "0s";
  std::string out;
  for (const DurationUnit& unit : kDurationUnits) {
    if (seconds >= unit.seconds) {
      out += std::to_string(seconds / unit.seconds) + unit.suffix;
      seconds %= unit.seconds;
    }
  }
  return out;
}

}  // namespace idlegrid::manifest
