#pragma once
// The coordinator's ledger shell (issue 13, docs/ledger.md): reads balances,
// jobs and nodes from the store, asks the pure plans in src/ledger what to
// post, and has the store apply the postings of each call in one
// transaction (Store::ApplyPostings; Sweep's releases a batch at a time).
// It decides when to post and what the plans are given: a job's escrow is
// its maxCost times its tasks (CostCapOf); an attempt is charged once (one
// with a pending row was charged before), only if its result was accepted,
// at its placement's price per hour for its billed run time, to its node's
// provider (the operator's account for a node not on record); a job is
// refunded what is left of its escrow once every task is terminal. Requeue
// refuses to run a job again once its escrow is used up. The coordinator
// has a shell only when run with --ledger (LedgerOptions::enabled).
//
// Crash safety comes from the postings' keys: every plan can be made again
// from the books and applied again, and what was applied before is skipped.
// Sweep() re-settles every job that still holds escrow, so a charge or a
// refund lost to a crash between a report and its posting is made later;
// escrow whose job was never stored (a crash between the two at submit) is
// left to the operator (docs/ledger.md, "Known gaps").
#include <cstdint>
#include <functional>
#include <string>

#include "common/mutex.h"
#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "ledger/plans.h"
#include "ledger/settlement.h"
#include "store/settlement_runner.h"
#include "store/store.h"

namespace idlegrid::coordinator {

struct LedgerOptions {
  bool enabled = false;  // off: nothing is escrowed or charged, jobs need no maxCost
  ledger::LedgerPolicy policy;
};

// The escrow a job needs: its maxCost (per task, over all its attempts)
// times its tasks, in micros. InvalidArgument when maxCost is 0 (with the
// ledger on, a job must say what it may cost) or not a valid amount.
Result<ledger::Micros> CostCapOf(const v1::JobSpec& spec);

class LedgerShell {
 public:
  // `store` outlives the shell.
  LedgerShell(store::Store* store, ledger::LedgerPolicy policy) : store_(store), policy_(policy) {}

  // Escrows `cost_cap` of `account`'s available funds for `job_id` (before
  // the job is stored). FailedPrecondition "insufficient funds: ..." when
  // short.
  Status EscrowAtSubmit(const std::string& account, const std::string& job_id, ledger::Micros cost_cap, int64_t now_ms);
  // Gives back the escrow of a job that was never stored (its CreateJob failed).
  Status Unescrow(const std::string& account, const std::string& job_id, int64_t now_ms);
  // Charges the job's accepted attempts not charged yet (succeeded, and for
  // a verified job taken by its verdict: "agreed", or "unverified" when an
  // adaptive audit was not drawn; one awaiting its verdict waits, other ends
  // are never charged) and, once every task is terminal, refunds what is
  // left of its escrow, all in one transaction. A job without escrow is left
  // alone.
  Status SettleJob(const v1::Job& job, int64_t now_ms);
  // A result proven wrong by verification: its charge, if still pending, is
  // clawed back to the requester, and the provider's stake is slashed by the
  // policy (part to the requester). Replay-safe (the postings' keys).
  Status PunishWrongResult(const std::string& requester, const std::string& job_id, const std::string& provider,
                           const std::string& attempt_id, int64_t now_ms);
  // Runs `requeue` (a user's retry of some of the job's tasks) under the
  // shell's lock, so no settlement refunds the escrow meanwhile (SettleJob
  // re-reads an ended job under the same lock). A job that escrowed and has
  // nothing left (refunded when it ended, or spent) is FailedPrecondition
  // saying to resubmit: escrow and refund keys are once per job, so it cannot
  // escrow again. A job that never escrowed is requeued as is. One
  // coordinator's lock: coordinators sharing a database are not serialised.
  Result<v1::Job> Requeue(const std::string& account, const std::string& job_id,
                          const std::function<Result<v1::Job>()>& requeue);
  // Money entering (deposit) or leaving (withdrawal) `account`'s available
  // balance; refused with the amounts when a withdrawal is short. A repeated
  // request_id changes nothing.
  Status Transfer(const std::string& account, ledger::Micros micros, const std::string& request_id, bool deposit,
                  int64_t now_ms);
  // A provider stakes (or unstakes) its own available credits; unstaking is
  // refused while it has earnings inside a dispute window.
  Status Stake(const std::string& provider, ledger::Micros micros, bool unstake, const std::string& request_id,
               int64_t now_ms);
  // Releases pending charges whose dispute window has passed, re-settles
  // jobs that still hold escrow, and exports settled postings to the
  // built-in settlement sink. Errors are per step and logged; the first is
  // returned.
  Status Sweep(int64_t now_ms);

 private:
  Result<ledger::Micros> BalanceOf(const ledger::AccountKey& key);

  store::Store* const store_;
  const ledger::LedgerPolicy policy_;
  // One settlement at a time in this coordinator (others sharing a database
  // are kept right by the store's balance check and the postings' keys).
  Mutex mu_;
  ledger::LedgerSettlement books_ IG_GUARDED_BY(mu_);
};

}  // namespace idlegrid::coordinator
