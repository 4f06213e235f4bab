#include "coordinator/ledger_settler.h"

#include <spdlog/spdlog.h>

#include "common/failpoint.h"

namespace idlegrid::coordinator {

void LedgerSettler::SettleJob(const std::string& job_id) {
  if (!ledger_) return;
  auto job = store_->GetJob(job_id);
  if (!job.ok()) {
    spdlog::warn("ledger: job {} not settled now (the sweep retries): {}", job_id, job.status().ToString());
    return;
  }
  SettleJob(*job);
}

void LedgerSettler::SettleJob(const v1::Job& job) {
  if (!ledger_) return;
  if (IG_FAILPOINT("coordinator.settle.before_commit")) return;  // the sweep settles it
  Status st = ledger_->SettleJob(job, clock_->NowMs());
  if (!st.ok()) spdlog::warn("ledger: job {} not settled now (the sweep retries): {}", job.id(), st.ToString());
}

void LedgerSettler::Sweep() {
  if (!ledger_) return;
  const int64_t now = clock_->NowMs();
  if (swept_ms_ != 0 && now - swept_ms_ < kSweepMs) return;
  swept_ms_ = now;
  (void)ledger_->Sweep(now);  // logs each failed step itself
}

}  // namespace idlegrid::coordinator
