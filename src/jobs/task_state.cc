#include "jobs/task_state.h"

#include "jobs/billing.h"

#include <string>

namespace idlegrid::jobs {

const char* StateName(TaskState state) {
  switch (state) {
    case v1::QUEUED:
      return "queued";
    case v1::ASSIGNED:
      return "assigned";
    case v1::RUNNING:
      return "running";
    case v1::SUCCEEDED:
      return "succeeded";
    case v1::FAILED:
      return "failed";
    case v1::CANCELLED:
      return "cancelled";
    case v1::LOST:
      return "lost";
    default:
      return "unspecified";
  }
}

const char* ReasonName(FailureReason reason) {
  switch (reason) {
    case v1::NONZERO_EXIT:
      return "nonzero_exit";
    case v1::PLATFORM_FAILURE:
      return "platform_failure";
    case v1::RUN_TIMEOUT:
      return "run_timeout";
    case v1::QUEUE_TIMEOUT:
      return "queue_timeout";
    case v1::USER_CANCEL:
      return "user_cancel";
    case v1::NODE_LOST:
      return "node_lost";
    case v1::POLICY_REJECTED:
      return "policy_rejected";
    case v1::OUT_OF_MEMORY:
      return "out_of_memory";
    case v1::ACK_TIMEOUT:
      return "ack_timeout";
    case v1::HANDED_BACK:
      return "handed_back";
    case v1::COST_CAP_REACHED:
      return "cost_cap_reached";
    case v1::NODE_BUSY:
      return "node_busy";
    case v1::DISK_LIMIT:
      return "disk_limit";
    case v1::VERIFICATION_FAILED:
      return "verification_failed";
    default:
      return "";
  }
}

bool IsTerminal(TaskState state) { return state == v1::SUCCEEDED || state == v1::FAILED || state == v1::CANCELLED; }

namespace {

bool TaskEdge(TaskState from, TaskState to) {
  switch (from) {
    case v1::QUEUED:
      return to == v1::ASSIGNED || to == v1::FAILED || to == v1::CANCELLED;
    case v1::ASSIGNED:
      return to == v1::RUNNING || to == v1::QUEUED || to == v1::FAILED || to == v1::CANCELLED || to == v1::LOST;
    case v1::RUNNING:
      return to == v1::SUCCEEDED || to == v1::FAILED || to == v1::CANCELLED || to == v1::QUEUED || to == v1::LOST;
    case v1::LOST:
      return to == v1::QUEUED || to == v1::FAILED || to == v1::CANCELLED;
    default:
      return false;  // terminal or unspecified: nothing leaves
  }
}

Status Illegal(const char* what, TaskState from, TaskState to) {
  return Status::FailedPrecondition(std::string("illegal ") + what + " transition " + StateName(from) + " -> " +
                                    StateName(to));
}

}  // namespace

Status CheckTaskTransition(TaskState from, TaskState to) {
  return TaskEdge(from, to) ? Status::Ok() : Illegal("task", from, to);
}

Status CheckAttemptTransition(TaskState from, TaskState to) {
  if (to == v1::QUEUED || to == v1::LOST || from == v1::LOST || !TaskEdge(from, to)) {
    return Illegal("attempt", from, to);
  }
  return Status::Ok();
}

void SetTaskCounts(v1::Job& job, const std::map<TaskState, int>& counts) {
  for (const auto& [state, n] : counts) (*job.mutable_task_counts())[StateName(state)] = n;
  job.set_state(AggregateJobState(counts));
}

TaskState AggregateJobState(const std::map<TaskState, int>& counts) {
  auto n = [&](TaskState s) {
    auto it = counts.find(s);
    return it == counts.end() ? 0 : it->second;
  };
  if (n(v1::RUNNING) + n(v1::ASSIGNED) > 0) return v1::RUNNING;
  if (n(v1::QUEUED) > 0) return v1::QUEUED;
  if (n(v1::LOST) > 0) return v1::LOST;
  if (n(v1::FAILED) > 0) return v1::FAILED;
  if (n(v1::CANCELLED) > 0) return v1::CANCELLED;
  if (n(v1::SUCCEEDED) > 0) return v1::SUCCEEDED;
  return v1::QUEUED;  // a job with no tasks yet
}

bool IsSettled(const v1::Job& job) {
  if (job.tasks_size() == 0 || !(IsTerminal(job.state()) || job.state() == v1::LOST)) return false;
  for (const auto& t : job.tasks()) {
    for (const auto& a : t.attempts()) {
      if (!IsTerminal(a.state())) return false;
    }
  }
  return true;
}

bool ShouldRetry(FailureReason reason, uint32_t attempts_used, uint32_t retries, bool idempotent) {
  switch (reason) {
    case v1::USER_CANCEL:
    case v1::QUEUE_TIMEOUT:
      return false;
    case v1::NODE_LOST:
      return idempotent && attempts_used <= retries;
    default:
      return attempts_used <= retries;
  }
}

bool IsAcceptedResult(const v1::Attempt& attempt) { return LedgerEnd(attempt) == ledger::AttemptEnd::kVerified; }

}  // namespace idlegrid::jobs
