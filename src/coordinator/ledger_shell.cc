#include "coordinator/ledger_shell.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <vector>

#include "jobs/attempt_events.h"
#include "jobs/billing.h"
#include "jobs/task_state.h"

namespace idlegrid::coordinator {
namespace {

// Past the sweep, not in one transaction: a few hundred releases at a time.
constexpr size_t kReleaseBatch = 200;
constexpr size_t kSettlementBatch = 500;

bool JobEnded(const v1::Job& job) {
  return std::all_of(job.tasks().begin(), job.tasks().end(),
                     [](const v1::Task& t) { return jobs::IsTerminal(t.state()); });
}

}  // namespace

Result<ledger::Micros> CostCapOf(const v1::JobSpec& spec) {
  if (spec.max_cost() <= 0) {
    return Status::InvalidArgument(
        "spec.maxCost: this coordinator keeps a ledger (--ledger), so a job must set maxCost (credits per task) "
        "for its escrow");
  }
  IG_ASSIGN_OR_RETURN(ledger::Micros per_task, ledger::MicrosFromCredits(spec.max_cost()));
  const int64_t tasks = std::max<uint32_t>(spec.array_count(), 1);
  ledger::Micros cap = 0;
  if (__builtin_mul_overflow(per_task, tasks, &cap)) {
    return Status::InvalidArgument("spec.maxCost x arrayCount is more credits than the ledger can hold");
  }
  return cap;
}

Result<ledger::Micros> LedgerShell::BalanceOf(const ledger::AccountKey& key) {
  IG_ASSIGN_OR_RETURN(auto balances, store_->LedgerBalances(key.owner));
  auto it = balances.find(key);
  return it == balances.end() ? 0 : it->second;
}

Status LedgerShell::EscrowAtSubmit(const std::string& account, const std::string& job_id, ledger::Micros cost_cap,
                                   int64_t now_ms) {
  IG_ASSIGN_OR_RETURN(ledger::Micros available, BalanceOf(ledger::Available(account)));
  IG_ASSIGN_OR_RETURN(ledger::Posting escrow, ledger::EscrowForJob(account, job_id, cost_cap, available));
  auto applied = store_->ApplyPostings({escrow}, now_ms);
  if (!applied.ok() && applied.status().code() == Code::kFailedPrecondition) {
    // Spent by another request since the balance was read: say it as the plan would.
    IG_ASSIGN_OR_RETURN(ledger::Micros now_available, BalanceOf(ledger::Available(account)));
    return ledger::EscrowForJob(account, job_id, cost_cap, now_available).status();
  }
  return applied.status();
}

Status LedgerShell::Unescrow(const std::string& account, const std::string& job_id, int64_t now_ms) {
  IG_ASSIGN_OR_RETURN(ledger::Micros left, BalanceOf(ledger::Escrow(account, job_id)));
  IG_ASSIGN_OR_RETURN(ledger::Posting refund, ledger::Refund(account, job_id, left));
  return store_->ApplyPostings({refund}, now_ms).status();
}

Result<v1::Job> LedgerShell::Requeue(const std::string& account, const std::string& job_id,
                                     const std::function<Result<v1::Job>()>& requeue) {
  MutexLock lock(&mu_);
  IG_ASSIGN_OR_RETURN(auto mine, store_->LedgerBalances(account));
  auto escrow = mine.find(ledger::Escrow(account, job_id));
  if (escrow != mine.end() && escrow->second <= 0) {
    return Status::FailedPrecondition(
        "job " + job_id +
        " has no escrow left (refunded when it ended, or spent): with the ledger on, its tasks "
        "would run again unpaid; submit them again as a new job (escrow and refund are once per job, "
        "docs/ledger.md)");
  }
  return requeue();
}

Status LedgerShell::SettleJob(const v1::Job& read_before, int64_t now_ms) {
  MutexLock lock(&mu_);
  // A retry (Requeue, under this lock) may have reopened a job read as ended
  // before the lock was taken: what is refunded follows the job as it is now.
  v1::Job fresh;
  if (JobEnded(read_before)) {
    IG_ASSIGN_OR_RETURN(fresh, store_->GetJob(read_before.id()));
  }
  const v1::Job& job = JobEnded(read_before) ? fresh : read_before;
  const std::string& requester = job.account();
  IG_ASSIGN_OR_RETURN(auto mine, store_->LedgerBalances(requester));
  auto escrow = mine.find(ledger::Escrow(requester, job.id()));
  if (escrow == mine.end()) return Status::Ok();  // submitted without the ledger: not metered
  ledger::Micros escrow_left = escrow->second;
  // A verified job's runs past its escrow (re-verification after the refund)
  // are the platform's: from slashed, then fees (ledger::Charge).
  const bool verified = jobs::VerifiedJob(job.spec());
  ledger::Micros slashed_left = 0, fees_left = 0;
  if (verified) {
    IG_ASSIGN_OR_RETURN(auto grid, store_->LedgerBalances(std::string()));
    const auto balance = [&](const ledger::AccountKey& key) {
      auto it = grid.find(key);
      return it == grid.end() ? ledger::Micros{0} : it->second;
    };
    slashed_left = balance(ledger::Slashed());
    fees_left = balance(ledger::Fees());
  }
  std::vector<ledger::Posting> plan;
  std::map<std::string, std::string> provider_of;  // node id -> provider account
  for (const v1::Task& task : job.tasks()) {
    for (const v1::Attempt& attempt : task.attempts()) {
      // Only an accepted result is charged: verification `none`'s succeeded
      // attempts, and a verified job's once its verdict took them ("agreed",
      // or "unverified" when the adaptive audit was not drawn). A result
      // awaiting its verdict waits; a wrong one, a failure of the job or of
      // the platform is never charged.
      const ledger::AttemptEnd end = jobs::LedgerEnd(attempt);
      if (!ledger::IsCharged(end)) continue;  // before any I/O: the ledger's rule, not a second one
      auto known = provider_of.find(attempt.node_id());
      if (known == provider_of.end()) {
        IG_ASSIGN_OR_RETURN(auto node, store_->GetNode(attempt.node_id()));
        known = provider_of.emplace(attempt.node_id(), node ? node->provider : store::kOperatorAccount).first;
      }
      const std::string& provider = known->second;
      // A charge leaves a pending row behind for good: charged before.
      IG_ASSIGN_OR_RETURN(auto theirs, store_->LedgerBalances(provider));
      if (theirs.count(ledger::Pending(provider, attempt.id()))) continue;
      IG_ASSIGN_OR_RETURN(ledger::Micros price_per_hour,
                          ledger::MicrosFromCredits(attempt.placement().price_per_hour()));
      IG_ASSIGN_OR_RETURN(
          ledger::Micros price,
          ledger::ChargeFor(price_per_hour, ledger::BilledRunMs(attempt.started_at_ms(), attempt.finished_at_ms())));
      ledger::ChargeRequest request{requester, job.id(), provider, attempt.id(), price, escrow_left, end};
      request.verification = verified;
      request.slashed_left = slashed_left;
      request.fees_left = fees_left;
      IG_ASSIGN_OR_RETURN(ledger::Posting charge, ledger::Charge(request));
      for (const ledger::Entry& e : charge.entries) {
        if (e.account.kind == ledger::Kind::kEscrow) escrow_left += e.amount;
        if (e.account.kind == ledger::Kind::kSlashed) slashed_left += e.amount;
        if (e.account.kind == ledger::Kind::kFees) fees_left += e.amount;
      }
      plan.push_back(std::move(charge));
    }
  }
  if (JobEnded(job)) {
    IG_ASSIGN_OR_RETURN(ledger::Posting refund, ledger::Refund(requester, job.id(), escrow_left));
    plan.push_back(std::move(refund));
  }
  IG_ASSIGN_OR_RETURN(int applied, store_->ApplyPostings(plan, now_ms));
  if (applied > 0) spdlog::info("ledger: job {}: {} posting(s) applied", job.id(), applied);
  return Status::Ok();
}

Status LedgerShell::PunishWrongResult(const std::string& requester, const std::string& job_id,
                                      const std::string& provider, const std::string& attempt_id, int64_t now_ms) {
  MutexLock lock(&mu_);
  IG_ASSIGN_OR_RETURN(auto theirs, store_->LedgerBalances(provider));
  const auto balance_of = [&](const ledger::AccountKey& key) {
    auto it = theirs.find(key);
    return it == theirs.end() ? 0 : it->second;
  };
  std::vector<ledger::Posting> plan;
  IG_ASSIGN_OR_RETURN(ledger::Posting clawback, ledger::Clawback(requester, job_id, provider, attempt_id,
                                                                 balance_of(ledger::Pending(provider, attempt_id))));
  plan.push_back(std::move(clawback));
  IG_ASSIGN_OR_RETURN(ledger::Posting slash, ledger::Slash(provider, requester, job_id, attempt_id,
                                                           balance_of(ledger::Stake(provider)), policy_));
  plan.push_back(std::move(slash));
  IG_ASSIGN_OR_RETURN(int applied, store_->ApplyPostings(plan, now_ms));
  if (applied > 0) spdlog::info("ledger: provider {} slashed for attempt {} of job {}", provider, attempt_id, job_id);
  return Status::Ok();
}

Status LedgerShell::Transfer(const std::string& account, ledger::Micros micros, const std::string& request_id,
                             bool deposit, int64_t now_ms) {
  ledger::Posting posting;
  if (deposit) {
    IG_ASSIGN_OR_RETURN(posting, ledger::Deposit(account, micros, request_id));
  } else {
    IG_ASSIGN_OR_RETURN(ledger::Micros available, BalanceOf(ledger::Available(account)));
    IG_ASSIGN_OR_RETURN(posting, ledger::Withdraw(account, micros, available, request_id));
  }
  return store_->ApplyPostings({posting}, now_ms).status();
}

Status LedgerShell::Stake(const std::string& provider, ledger::Micros micros, bool unstake,
                          const std::string& request_id, int64_t now_ms) {
  IG_ASSIGN_OR_RETURN(auto theirs, store_->LedgerBalances(provider));
  ledger::Micros pending = 0;
  for (const auto& [key, balance] : theirs) {
    if (key.kind == ledger::Kind::kPending) pending += balance;
  }
  const auto balance_of = [&](const ledger::AccountKey& key) {
    auto it = theirs.find(key);
    return it == theirs.end() ? 0 : it->second;
  };
  ledger::Posting posting;
  if (unstake) {
    IG_ASSIGN_OR_RETURN(posting,
                        ledger::Unstake(provider, micros, balance_of(ledger::Stake(provider)), pending, request_id));
  } else {
    IG_ASSIGN_OR_RETURN(posting,
                        ledger::StakeFunds(provider, micros, balance_of(ledger::Available(provider)), request_id));
  }
  return store_->ApplyPostings({posting}, now_ms).status();
}

Status LedgerShell::Sweep(int64_t now_ms) {
  Status first;
  const auto note = [&](const Status& st, const char* step) {
    if (st.ok()) return;
    spdlog::warn("ledger sweep, {}: {}", step, st.ToString());
    if (first.ok()) first = st;
  };
  // Releases past the window, a batch per transaction.
  auto due = store_->PendingCharges(now_ms - policy_.dispute_window_ms, kReleaseBatch);
  if (due.ok()) {
    std::vector<ledger::Posting> plan;
    for (const store::PendingCharge& c : *due) {
      auto release = ledger::Release(c.provider, c.attempt_id, c.pending, c.charged_ms, now_ms, policy_);
      if (release.ok()) plan.push_back(std::move(*release));
      note(release.status(), "release");
    }
    note(store_->ApplyPostings(plan, now_ms).status(), "releases");
  } else {
    note(due.status(), "pending charges");
  }
  // Jobs still holding escrow: charge and refund what their end allows.
  auto balances = store_->LedgerBalances(std::nullopt);
  if (balances.ok()) {
    for (const auto& [key, balance] : *balances) {
      if (key.kind != ledger::Kind::kEscrow || balance <= 0) continue;
      auto job = store_->GetJob(key.scope);
      // A job not found is one being submitted right now (escrow comes
      // before the job row), or one whose submission crashed in between:
      // left for the operator (docs/ledger.md, known gaps), never guessed at.
      if (job.ok()) {
        note(SettleJob(*job, now_ms), "settle job");
      } else if (job.status().code() != Code::kNotFound) {
        note(job.status(), "job");
      }
    }
  } else {
    note(balances.status(), "balances");
  }
  MutexLock lock(&mu_);
  note(store::ExportSettledBatch(*store_, books_, kSettlementBatch).status(), "settlement export");
  return first;
}

}  // namespace idlegrid::coordinator
