#include "ledger/accounts.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace idlegrid::ledger {
namespace {

struct KindNameRow {
  Kind kind;
  const char* name;
};
constexpr KindNameRow kKindNames[] = {
    {Kind::kAvailable, "available"}, {Kind::kEscrow, "escrow"},   {Kind::kPending, "pending"}, {Kind::kStake, "stake"},
    {Kind::kFees, "fees"},           {Kind::kSlashed, "slashed"}, {Kind::kWorld, "world"},
};

}  // namespace

const char* KindName(Kind kind) {
  for (const auto& row : kKindNames) {
    if (row.kind == kind) return row.name;
  }
  return "unknown";
}

Result<Kind> KindFromName(std::string_view name) {
  for (const auto& row : kKindNames) {
    if (name == row.name) return row.kind;
  }
  return Status::InvalidArgument("unknown ledger account kind \"" + std::string(name) + "\"");
}

bool MayGoNegative(Kind kind) { return kind == Kind::kWorld; }

std::string AccountName(const AccountKey& key) {
  std::string name = key.owner + "/" + KindName(key.kind);
  if (!key.scope.empty()) name += "/" + key.scope;
  return name;
}

std::string FormatCredits(Micros amount) {
  // Unsigned magnitude: -INT64_MIN does not fit an int64.
  uint64_t magnitude = amount < 0 ? 0 - static_cast<uint64_t>(amount) : static_cast<uint64_t>(amount);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s%llu.%06llu", amount < 0 ? "-" : "",
                static_cast<unsigned long long>(magnitude / kMicrosPerCredit),
                static_cast<unsigned long long>(magnitude % kMicrosPerCredit));
  return buf;
}

Result<Micros> ParseCredits(std::string_view text) {
  const auto bad = [&] {
    return Status::InvalidArgument("\"" + std::string(text) +
                                   "\" is not an amount of credits (digits, at most six decimals, e.g. 12.5)");
  };
  if (text.empty()) return bad();
  size_t dot = text.find('.');
  std::string_view whole = text.substr(0, dot);
  std::string_view frac = dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
  if (whole.empty() || frac.size() > 6 || (dot != std::string_view::npos && frac.empty())) return bad();
  __int128 micros = 0;
  for (char c : whole) {
    if (c < '0' || c > '9') return bad();
    micros = micros * 10 + (c - '0');
    if (micros > std::numeric_limits<Micros>::max()) return bad();
  }
  micros *= kMicrosPerCredit;
  Micros scale = kMicrosPerCredit / 10;
  for (char c : frac) {
    if (c < '0' || c > '9') return bad();
    micros += static_cast<__int128>(c - '0') * scale;
    scale /= 10;
  }
  if (micros > std::numeric_limits<Micros>::max()) return bad();
  return static_cast<Micros>(micros);
}

Result<Micros> MicrosFromCredits(double credits) {
  // 9.2e12 credits is INT64_MAX micros; stay well inside so llround is exact enough.
  if (!std::isfinite(credits) || credits < 0 || credits > 9e12) {
    return Status::InvalidArgument("amount " + std::to_string(credits) + " is not a valid number of credits");
  }
  return static_cast<Micros>(std::llround(credits * kMicrosPerCredit));
}

}  // namespace idlegrid::ledger
