#pragma once
// The ledger's requester operations (docs/ledger.md): balances, history,
// deposits, withdrawals and stakes, from and to the protocol's messages.
// What moves is the plans' (src/ledger) through the shell (ledger_shell.h).
// Who may call them is the gate's (auth/authz.cc). No lock of its own: the
// shell and the store lock themselves.
#include <cstdint>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "coordinator/ledger_shell.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "store/store.h"

namespace idlegrid::coordinator {

class LedgerRequests {
 public:
  // `ledger` null: the coordinator keeps no ledger, and every call is
  // FailedPrecondition saying how to start one.
  LedgerRequests(store::Store* store, LedgerShell* ledger, const Clock* clock)
      : store_(store), ledger_(ledger), clock_(clock) {}

  // NotFound for an unknown account.
  Result<v1::LedgerBalanceResponse> Balance(const std::string& account);
  // The account's postings after `after_seq`, at most `limit` (0: 100; at
  // most 1000).
  Result<v1::LedgerHistoryResponse> History(const std::string& account, int64_t after_seq, uint32_t limit);
  // A deposit (world -> available) or a withdrawal (available -> world);
  // the balance after it.
  Result<v1::LedgerBalanceResponse> Transfer(const v1::LedgerTransferRequest& request, bool deposit);
  Result<v1::LedgerBalanceResponse> Stake(const v1::LedgerStakeRequest& request);

 private:
  // Ok when the ledger is on and `account` exists.
  Status CheckAccount(const std::string& account);

  store::Store* const store_;
  LedgerShell* const ledger_;
  const Clock* const clock_;
};

}  // namespace idlegrid::coordinator
