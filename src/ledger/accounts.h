#pragma once
// The ledger's accounts and amounts (docs/ledger.md). Pure values: no I/O,
// no clock.
//
// Amounts are int64 micro-credits (1 credit = 1'000'000 micros), never
// floating point. An account is (owner, kind, scope):
//   - owner: an idlegrid account name (a requester or a provider; one name may
//     be both) or "" for the grid's own accounts (fees, slashed, world);
//   - kind: what the money is for (below);
//   - scope: "" except where money must be traced to one thing: an escrow is
//     scoped by its job id and a pending balance by its attempt id, so a
//     refund or a release moves exactly what that job or attempt holds, and
//     the non-negative rule (MayGoNegative) holds per job and per attempt.
// A balance is the sum of the entries posted to the account. kWorld is the
// outside: a deposit moves money from world to a user, a withdrawal back, so
// every posting sums to zero and the sum over every account but world is
// always deposits minus withdrawals.
#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace idlegrid::ledger {

using Micros = int64_t;
inline constexpr Micros kMicrosPerCredit = 1'000'000;

enum class Kind {
  kAvailable,  // owner's spendable credits (a requester's funds, a provider's earnings)
  kEscrow,     // requester's funds held for one job (scope: job id)
  kPending,    // provider's earnings for one attempt inside its dispute window (scope: attempt id)
  kStake,      // provider's stake, what a slash takes from
  kFees,       // the operator's fee share (owner "")
  kSlashed,    // slashed stake not given to a requester (owner "")
  kWorld,      // outside the grid: source of deposits, sink of withdrawals (owner "")
};

// "available", "escrow", ... (the stored and printed name).
const char* KindName(Kind kind);
// The inverse of KindName; InvalidArgument for an unknown name.
Result<Kind> KindFromName(std::string_view name);

// Only the world account may go negative (it is minus what was deposited and
// not withdrawn). Every other account, the grid's included, stays >= 0: a plan
// that would take one below zero is refused, and the store re-checks this in
// the transaction that applies it.
bool MayGoNegative(Kind kind);

struct AccountKey {
  std::string owner;
  Kind kind = Kind::kAvailable;
  std::string scope;

  auto operator<=>(const AccountKey&) const = default;
  bool operator==(const AccountKey&) const = default;
};

inline AccountKey Available(std::string owner) { return {std::move(owner), Kind::kAvailable, ""}; }
inline AccountKey Escrow(std::string requester, std::string job_id) {
  return {std::move(requester), Kind::kEscrow, std::move(job_id)};
}
inline AccountKey Pending(std::string provider, std::string attempt_id) {
  return {std::move(provider), Kind::kPending, std::move(attempt_id)};
}
inline AccountKey Stake(std::string provider) { return {std::move(provider), Kind::kStake, ""}; }
inline AccountKey Fees() { return {"", Kind::kFees, ""}; }
inline AccountKey Slashed() { return {"", Kind::kSlashed, ""}; }
inline AccountKey World() { return {"", Kind::kWorld, ""}; }

// "alice/escrow/j-1", "/fees".
std::string AccountName(const AccountKey& key);

// "12.500000" (credits with all six decimals; "-0.000001" for negatives).
std::string FormatCredits(Micros amount);
// Parses "12", "12.5", "0.000001" (at most six decimals, no sign, no
// exponent) into micros. InvalidArgument otherwise, or past int64.
Result<Micros> ParseCredits(std::string_view text);
// The market's double credits (prices, maxCost) to micros, rounded to the
// nearest micro. InvalidArgument for NaN, negatives or out-of-range values.
Result<Micros> MicrosFromCredits(double credits);

}  // namespace idlegrid::ledger
