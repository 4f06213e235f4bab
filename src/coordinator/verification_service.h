#pragma once
// Result verification (docs/verification.md) as a service of its own: the
// shell around verify/. It resolves a job's mode at submit, decides the
// verdict on a task each time one of its results is held for it
// (verify::DecideTask decides; the store writes it in one transaction),
// slashes a provider proven wrong through the ledger, backtracks over the
// results that provider had accepted on its word, demotes its votes, and
// sends and withdraws known-answer checks.
//
// Owns two locks: one verdict at a time (trust counts are read, changed and
// written back), held across a whole verdict, its hooks included; and its
// random source's, a leaf. The hooks may take the coordinator's locks
// (NodeTable::mu_, the ledger's) but never one of this service's, and
// nothing calls into this service with those held: the order is
// VerificationService's verdict lock -> NodeTable::mu_.
// Store, artifacts, ledger, clock and random seed are injected.
#include <cstdint>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "artifacts/artifact_store.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "coordinator/ledger_shell.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "store/store.h"
#include "verify/spec.h"
#include "verify/task_verdict.h"

namespace idlegrid::coordinator {

class VerificationService {
 public:
  // What the service needs of the rest of the coordinator.
  struct Hooks {
    // The provider account owning a node (the operator's when unknown).
    std::function<std::string(const std::string& node_id)> provider_of;
    // The provider accounts that could run a task (with a node registered,
    // online or not, or created to join): a split settles by the majority rule
    // once none of them is left to run it (verify::DecideQuorum). Unset: unbounded.
    std::function<std::set<std::string>()> provider_accounts;
    // A verdict was written on one of the job's tasks: its ledger may settle.
    std::function<void(const std::string& job_id)> verdict_written;
    // Tasks changed state: wake the dispatcher and watchers.
    std::function<void()> changed;
  };
  // How often Sweep looks for held tasks at most.
  static constexpr int64_t kSweepMs = 5000;
  // A known-answer check its provider has not taken by then is withdrawn.
  static constexpr int64_t kChallengeWaitMs = 60'000;
  // How far back backtracking reaches when the ledger (and its dispute
  // window) is off.
  static constexpr int64_t kDefaultBacktrackWindowMs = 24 * 3600 * 1000LL;

  // `ledger` may be null (no slashing). Backtracking reaches
  // `backtrack_window_ms` back: the ledger's dispute window when it is on,
  // else kDefaultBacktrackWindowMs.
  VerificationService(store::Store* store, artifacts::ArtifactStore* artifacts, LedgerShell* ledger, const Clock* clock,
                      verify::VerificationPolicy policy, int64_t backtrack_window_ms, Hooks hooks,
                      uint64_t seed = std::random_device{}());

  // Fills in the operator's default mode (written into the stored spec, so
  // the stores know the job is verified) and checks the job's verification.
  Status Resolve(v1::JobSpec* spec) const;
  // The verdict on a task whose result is held for it. An error leaves the
  // task held: Sweep finds it again.
  Status Decide(const std::string& job_id, uint32_t index) IG_EXCLUDES(verdict_mu_);
  // Decide, with an error logged (the report path's).
  void OnResultHeld(const std::string& job_id, uint32_t index);
  // Verdicts a crash or a failed write left undone, then known-answer checks
  // not taken within kChallengeWaitMs; at most every kSweepMs. The
  // coordinator's loop thread only.
  void Sweep();

 private:
  // A task's runs as verify::DecideTask reads them: each attempt's provider,
  // vote and outputs (the bytes of those compared by their numbers).
  std::vector<verify::RunRecord> RunRecordsOf(const v1::Task& task, const verify::VerificationSpec& spec);
  // The verdict's store write: the task's new state, votes and the trust
  // records it changes (read through `records_of`).
  Result<store::VerdictWrite> VerdictWriteOf(
      const std::string& job_id, uint32_t index, const std::string& image, const verify::TaskVerdict& verdict,
      const std::function<Result<const std::vector<store::TrustRecord>*>(const std::string&)>& records_of, int64_t now);
  // After a verdict was written: slashes and backtracks each provider proven
  // wrong, and may send a known-answer check to the one whose run was taken
  // on its word.
  void AfterVerdict(const v1::Job& job, const verify::VerificationSpec& spec, const verify::TaskVerdict& verdict,
                    const std::vector<verify::RunRecord>& runs, const std::string& pending_provider, int64_t now);
  // Re-verifies what `provider` had accepted on its word since its last
  // verified result, after it was caught on attempt `caught_on`, and demotes
  // its votes in the quorums it took part in (Demote).
  void Backtrack(const std::string& provider, const std::string& caught_on);
  // verify::DecideDemote over each task of `results` whose attempt is in
  // `attempts`: the provider's agreeing votes stop counting, and a task left
  // short of its quorum is reopened for another run.
  void Demote(const std::string& provider, const std::string& caught_on,
              const std::vector<store::ProviderResult>& results, const std::vector<std::string>& attempts, int64_t now);
  // Challenge: sends `provider` a task of `job` with a known answer it never
  // ran; WithdrawStaleChecks returns those not taken within a minute.
  void SendKnownAnswerCheck(const v1::Job& job, const std::string& provider, int64_t now);
  // A task of `job` but `except` with a known answer `provider` never ran:
  // a known-answer check can reach it.
  const v1::Task* KnownAnswerFor(const v1::Job& job, uint32_t except, const std::string& provider);
  void WithdrawStaleChecks();
  double Draw() IG_EXCLUDES(rng_mu_);

  store::Store* const store_;
  artifacts::ArtifactStore* const artifacts_;
  LedgerShell* const ledger_;  // null without the ledger
  const Clock* const clock_;
  const verify::VerificationPolicy policy_;
  const int64_t backtrack_window_ms_;
  const Hooks hooks_;
  Mutex verdict_mu_;  // one verdict at a time
  Mutex rng_mu_;
  std::mt19937_64 rng_ IG_GUARDED_BY(rng_mu_);
  int64_t swept_ms_ = 0;  // Sweep's; the loop thread only
};

}  // namespace idlegrid::coordinator
