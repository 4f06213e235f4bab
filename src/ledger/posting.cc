#include "ledger/posting.h"

#include <set>

namespace idlegrid::ledger {
namespace {

struct ReasonNameRow {
  Reason reason;
  const char* name;
};
constexpr ReasonNameRow kReasonNames[] = {
    {Reason::kDeposit, "deposit"}, {Reason::kWithdraw, "withdraw"}, {Reason::kEscrow, "escrow"},
    {Reason::kCharge, "charge"},   {Reason::kRelease, "release"},   {Reason::kClawback, "clawback"},
    {Reason::kRefund, "refund"},   {Reason::kStake, "stake"},       {Reason::kUnstake, "unstake"},
    {Reason::kSlash, "slash"},
};

}  // namespace

const char* ReasonName(Reason reason) {
  for (const auto& row : kReasonNames) {
    if (row.reason == reason) return row.name;
  }
  return "unknown";
}

Result<Reason> ReasonFromName(std::string_view name) {
  for (const auto& row : kReasonNames) {
    if (name == row.name) return row.reason;
  }
  return Status::InvalidArgument("unknown ledger posting reason \"" + std::string(name) + "\"");
}

Result<Micros> BalanceAfter(const Entry& entry, Micros balance, const std::string& posting_key) {
  Micros after = 0;
  if (__builtin_add_overflow(balance, entry.amount, &after)) {
    return Status::FailedPrecondition("ledger posting " + posting_key + " would overflow " +
                                      AccountName(entry.account));
  }
  if (after < 0 && !MayGoNegative(entry.account.kind)) {
    return Status::FailedPrecondition("ledger posting " + posting_key + " would leave " + AccountName(entry.account) +
                                      " at " + FormatCredits(after));
  }
  return after;
}

Status CheckBalanced(const Posting& posting) {
  if (posting.key.empty()) return Status::Internal("ledger posting without a key");
  __int128 sum = 0;
  std::set<AccountKey> seen;
  for (const Entry& entry : posting.entries) {
    if (entry.amount == 0) return Status::Internal("ledger posting " + posting.key + " has a zero entry");
    if (!seen.insert(entry.account).second) {
      return Status::Internal("ledger posting " + posting.key + " names " + AccountName(entry.account) + " twice");
    }
    sum += entry.amount;
  }
  if (sum != 0) return Status::Internal("ledger posting " + posting.key + " does not balance");
  return Status::Ok();
}

}  // namespace idlegrid::ledger
