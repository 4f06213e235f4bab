#pragma once
// When the coordinator posts to the ledger (docs/ledger.md): after a report,
// a cancel, a verdict or a delete changed a job, and on the loop's periodic
// sweep (releases past the dispute window, refunds, settlement export). What
// to post is the shell's and the plans' (ledger_shell.h, src/ledger). A
// failed posting is logged and made by a later sweep: nothing here returns
// an error. Without a ledger every call does nothing.
#include <cstdint>
#include <string>

#include "common/clock.h"
#include "coordinator/ledger_shell.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "store/store.h"

namespace idlegrid::coordinator {

class LedgerSettler {
 public:
  // `ledger` may be null (the coordinator runs without --ledger); all outlive the settler.
  LedgerSettler(store::Store* store, LedgerShell* ledger, Clock* clock)
      : store_(store), ledger_(ledger), clock_(clock) {}

  // Charges and refunds what the job's latest change allows.
  void SettleJob(const std::string& job_id);
  void SettleJob(const v1::Job& job);  // as just read after the change
  // The periodic sweep, at most every kSweepMs of the clock (the loop
  // thread's: not thread-safe against itself).
  void Sweep();
  static constexpr int64_t kSweepMs = 2000;

 private:
  store::Store* const store_;
  LedgerShell* const ledger_;
  Clock* const clock_;
  int64_t swept_ms_ = 0;
};

}  // namespace idlegrid::coordinator
