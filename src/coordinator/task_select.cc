// A user's cancel of some of a job's tasks and retry of finished ones
// (jobs/task_select.h decides which; the store writes it).
#include <spdlog/spdlog.h>

#include "coordinator/coordinator.h"

namespace idlegrid::coordinator {

void Coordinator::StopCancelled(const std::vector<store::ActiveAttempt>& stopped) {
  for (const auto& a : stopped) {
    v1::Command cmd;
    cmd.mutable_cancel()->set_attempt_id(a.attempt_id);
    cmd.mutable_cancel()->set_reason("cancelled by user");
    sessions_.Push(a.node_id, std::move(cmd));  // not connected: it learns at its next heartbeat
  }
}

Result<v1::Job> Coordinator::CancelJob(const v1::CancelJobRequest& request) {
  if (request.task_indices().empty() && request.states().empty()) return CancelJob(request.job_id());
  jobs::TaskSelection selection;
  selection.indices.assign(request.task_indices().begin(), request.task_indices().end());
  for (int s : request.states()) selection.states.push_back(static_cast<v1::TaskState>(s));
  IG_ASSIGN_OR_RETURN(store::CancelResult result, store_->CancelTasks(request.job_id(), selection, clock_->NowMs()));
  StopCancelled(result.stopped);
  spdlog::info("job {}: tasks cancelled; stopping {} attempt(s)", request.job_id(), result.stopped.size());
  // Refunds only once the job has ended, as a whole cancel does.
  SettleJobLedger(request.job_id());
  Notify();
  return result.job;
}

Result<v1::Job> Coordinator::RetryJob(const v1::RetryJobRequest& request) {
  jobs::RetrySelection selection;
  selection.failed = request.failed();
  selection.indices.assign(request.task_indices().begin(), request.task_indices().end());
  const auto requeue = [&]() { return store_->RetryTasks(request.job_id(), selection, clock_->NowMs()); };
  Result<v1::Job> job = Status::Internal("unset");
  if (ledger_) {
    IG_ASSIGN_OR_RETURN(v1::Job before, store_->GetJob(request.job_id()));
    job = ledger_->Requeue(before.account(), request.job_id(), requeue);
  } else {
    job = requeue();
  }
  if (!job.ok()) return job.status();
  spdlog::info("job {}: tasks queued again by the user", request.job_id());
  Notify();
  return job;
}

}  // namespace idlegrid::coordinator
