#pragma once
// What agents report of their attempts, as a service of its own: a report
// (accepted, started, exited, errored, stopped, checkpointed) with its
// provenance attested as the node this coordinator authenticated and its
// receipt statement checked, applied to the store, the outputs it made held
// by the job, counted, and followed by what it ends (receipt, readiness
// judgement, ledger, verdict); and the log chunks it ships. No lock of its
// own: the store, the receipt desk, the counters and verification lock
// themselves; what it needs of the node table comes as hooks, called with
// no lock of this service's held.
#include <functional>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "coordinator/event_counters.h"
#include "coordinator/receipt_desk.h"
#include "coordinator/verification_service.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "jobs/log_cap.h"
#include "store/store.h"

namespace idlegrid::coordinator {

class AttemptReports {
 public:
  struct Hooks {
    // The public key the node registered, as the node table holds it ("" if
    // it holds none: the store is asked then).
    std::function<std::string(const std::string& node_id)> public_key_of;
    // The job as a report that ended one of its attempts left it: readiness
    // judges its benchmark result, the ledger charges and refunds.
    std::function<void(const v1::Job& job)> judge_readiness;
    std::function<void(const v1::Job& job)> settle_ledger;
    // Something changed: wake the loop and watchers.
    std::function<void()> changed;
  };

  AttemptReports(store::Store* store, ReceiptDesk* receipts, EventCounters* counters, VerificationService* verification,
                 const Clock* clock, jobs::LogCap log_cap, Hooks hooks)
      : store_(store),
        receipts_(receipts),
        counters_(counters),
        verification_(verification),
        clock_(clock),
        log_cap_(log_cap),
        hooks_(std::move(hooks)) {}

  // Applies `node_id`'s report. A provenance record in it names the node as
  // this coordinator authenticated it, whatever the agent claimed; a receipt
  // statement that does not check turns the report into the node's platform
  // failure (its outputs are not taken). Another node's attempt reads as a
  // missing one (NotFound).
  Status Report(const std::string& node_id, const v1::ReportAttemptRequest& request);
  // Stores the log chunks of the node's own attempts (each tagged with its
  // task); NotFound for another node's attempt, and nothing is stored then.
  Status AppendLogs(const std::string& node_id, const v1::AppendLogsRequest& request);

 private:
  // Sets the provenance's node id to `node_id` and its key fingerprint to
  // that of the key the node registered ("" if none is known); a claim that
  // differed is logged. Only a failed store read is an error.
  Status AttestNodeIdentity(const std::string& node_id, v1::Provenance* provenance);

  store::Store* const store_;
  ReceiptDesk* const receipts_;
  EventCounters* const counters_;
  VerificationService* const verification_;
  const Clock* const clock_;
  const jobs::LogCap log_cap_;
  const Hooks hooks_;
};

}  // namespace idlegrid::coordinator
