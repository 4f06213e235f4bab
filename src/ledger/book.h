#pragma once
// An in-memory book: applies postings with the same rules as the stores
// (balanced, idempotent by key, no account but world below zero). For pure
// simulations (bench/verification) and as the reference model in property
// tests. Not thread-safe: one owner.
#include <map>
#include <set>
#include <string>

#include "common/status.h"
#include "ledger/accounts.h"
#include "ledger/posting.h"

namespace idlegrid::ledger {

class MemoryBook {
 public:
  // Applies `posting` all or nothing. Ok (changing nothing) for an empty
  // posting or a key already applied; Internal for an unbalanced one;
  // FailedPrecondition, naming the account, when it would take an account
  // that may not go negative below zero.
  Status Apply(const Posting& posting);

  // 0 for an account never posted to.
  Micros Balance(const AccountKey& account) const;
  // Sum over every scope of (owner, kind): e.g. all of a requester's escrows.
  Micros Total(const std::string& owner, Kind kind) const;
  // Sum over every account but world: deposits minus withdrawals.
  Micros SumExceptWorld() const;
  bool Applied(const std::string& key) const { return applied_.count(key) > 0; }
  const std::map<AccountKey, Micros>& balances() const { return balances_; }

 private:
  std::map<AccountKey, Micros> balances_;
  std::set<std::string> applied_;
};

}  // namespace idlegrid::ledger
