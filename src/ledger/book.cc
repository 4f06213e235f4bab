#include "ledger/book.h"

namespace idlegrid::ledger {

Status MemoryBook::Apply(const Posting& posting) {
  if (posting.empty() || Applied(posting.key)) return Status::Ok();
  IG_RETURN_IF_ERROR(CheckBalanced(posting));
  for (const Entry& entry : posting.entries) {
    IG_RETURN_IF_ERROR(BalanceAfter(entry, Balance(entry.account), posting.key).status());
  }
  for (const Entry& entry : posting.entries) balances_[entry.account] += entry.amount;
  applied_.insert(posting.key);
  return Status::Ok();
}

Micros MemoryBook::Balance(const AccountKey& account) const {
  auto it = balances_.find(account);
  return it == balances_.end() ? 0 : it->second;
}

Micros MemoryBook::Total(const std::string& owner, Kind kind) const {
  Micros total = 0;
  for (const auto& [key, balance] : balances_) {
    if (key.owner == owner && key.kind == kind) total += balance;
  }
  return total;
}

Micros MemoryBook::SumExceptWorld() const {
  Micros total = 0;
  for (const auto& [key, balance] : balances_) {
    if (key.kind != Kind::kWorld) total += balance;
  }
  return total;
}

}  // namespace idlegrid::ledger
