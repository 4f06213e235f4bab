// When the coordinator posts to the ledger (issue 13): the hooks around
// reports, cancels and deletes, and the periodic sweep. What to post is the
// shell's and the plans' (ledger_shell.h, src/ledger).
#include <spdlog/spdlog.h>

#include "coordinator/coordinator.h"

namespace idlegrid::coordinator {

void Coordinator::SettleJobLedger(const std::string& job_id) {
  if (!ledger_) return;
  auto job = store_->GetJob(job_id);
  if (!job.ok()) {
    spdlog::warn("ledger: job {} not settled now (the sweep retries): {}", job_id, job.status().ToString());
    return;
  }
  SettleJobLedger(*job);
}

void Coordinator::SettleJobLedger(const v1::Job& job) {
  if (!ledger_) return;
  Status st = ledger_->SettleJob(job, clock_->NowMs());
  if (!st.ok()) spdlog::warn("ledger: job {} not settled now (the sweep retries): {}", job.id(), st.ToString());
}

void Coordinator::SweepLedger() {
  if (!ledger_) return;
  const int64_t now = clock_->NowMs();
  if (ledger_swept_ms_ != 0 && now - ledger_swept_ms_ < kLedgerSweepMs) return;
  ledger_swept_ms_ = now;
  (void)ledger_->Sweep(now);  // logs each failed step itself
}

}  // namespace idlegrid::coordinator
