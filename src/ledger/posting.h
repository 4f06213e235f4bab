#pragma once
// A posting: one event's balanced set of entries, applied all or nothing.
//
// Plans (ledger/plans.h) produce postings; a book applies them (MemoryBook in
// ledger/book.h, the stores in one database transaction each). A posting's
// key names the event it records ("charge:<attempt id>"); applying a key
// already applied changes nothing, so a shell that crashes between deciding
// and applying may simply redo both.
#include <string>
#include <vector>

#include "common/status.h"
#include "ledger/accounts.h"

namespace idlegrid::ledger {

enum class Reason {
  kDeposit,   // world -> available
  kWithdraw,  // available -> world
  kEscrow,    // available -> escrow(job), at submission
  kCharge,    // escrow(job) -> pending(attempt), a verified attempt's price
  kRelease,   // pending(attempt) -> provider available + operator fees, after the dispute window
  kClawback,  // pending(attempt) -> requester available, a dispute upheld inside the window
  kRefund,    // escrow(job) -> available, what a settled job did not spend
  kStake,     // available -> stake
  kUnstake,   // stake -> available
  kSlash,     // stake -> harmed requester's available + slashed
};

const char* ReasonName(Reason reason);
Result<Reason> ReasonFromName(std::string_view name);

struct Entry {
  AccountKey account;
  Micros amount = 0;  // added to the account's balance (negative: taken from it)

  bool operator==(const Entry&) const = default;
};

struct Posting {
  std::string key;  // unique per event; see above
  Reason reason = Reason::kDeposit;
  std::string job_id;          // the job it concerns, "" if none (history filters on it)
  std::string memo;            // why, in words, for `ledger history`
  std::vector<Entry> entries;  // empty: nothing moves (memo says why); applying it is a no-op

  bool empty() const { return entries.empty(); }
};

// The account's balance after `entry` is posted to it from `balance`, or
// FailedPrecondition naming the posting and the account when the account may
// not go negative (MayGoNegative) and would, or the sum overflows. The one
// rule every book (MemoryBook, both stores) applies per entry.
Result<Micros> BalanceAfter(const Entry& entry, Micros balance, const std::string& posting_key);

// Ok when the entries sum to zero (without overflow), none is zero, no
// account appears twice, and the key is set; Internal otherwise (a plan bug).
Status CheckBalanced(const Posting& posting);

}  // namespace idlegrid::ledger
