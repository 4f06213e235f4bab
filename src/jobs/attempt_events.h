#pragma once
// What an agent's report about an attempt does to the attempt and its task.
// Pure: the store loads the current states, calls ApplyAttemptEvent, and writes
// the outcome back in the same transaction.
#include <cstdint>
#include <string>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::jobs {

struct AttemptContext {
  v1::TaskState task_state = v1::QUEUED;
  v1::TaskState attempt_state = v1::ASSIGNED;
  uint32_t attempts_used = 0;  // attempts of this task so far, this one included
  uint32_t retries = 0;
  bool idempotent = false;
  // The job's results are verified (verification mode other than none): a
  // success is held for the coordinator's verdict (src/verify, task_verdict.h)
  // instead of ending the task.
  bool verified = false;
};

// Whether a job's results are verified: the coordinator writes the resolved
// mode (its operator default for a job that names none) into the spec at submit.
inline bool VerifiedJob(const v1::JobSpec& spec) {
  return !spec.verification().mode().empty() && spec.verification().mode() != "none";
}

// A task whose result awaits the verdict stays QUEUED with this not-before
// time, so it is never offered, until the verdict releases, accepts or
// fails it (Store::HeldTasks finds those a crash left held).
inline constexpr int64_t kVerdictHoldMs = INT64_MAX;

struct AttemptOutcome {
  v1::TaskState task_state;
  v1::TaskState attempt_state;
  v1::FailureReason reason = v1::FAILURE_REASON_UNSPECIFIED;  // set when the attempt failed
  std::string message;
  bool retried = false;       // the task went back to the queue
  bool exclude_node = false;  // do not place this task on that node again
  bool changed = true;        // false for a harmless duplicate report
  // EXITED arrived for an attempt still ASSIGNED (its STARTED report was lost):
  // the container ran, so the attempt and task pass through RUNNING first.
  bool implied_start = false;
  // A CHECKPOINTED report whose files become the task's checkpoint (not for a
  // task the user cancelled: nothing will resume from it).
  bool record_checkpoint = false;
  // A task requeued after a real failure waits this long before it is
  // offered again (exponential: 1 s, 2 s, ... 60 s); 0 to go at once.
  int64_t retry_after_ms = 0;
  // A verified job's successful attempt: the task waits, held, for the verdict.
  bool hold_for_verdict = false;
  // What the task shows (set with task_state): its failure reason when it
  // failed or was lost, and the message users read.
  v1::FailureReason task_reason = v1::FAILURE_REASON_UNSPECIFIED;
  std::string task_message;
};

// Reasons that are not the job's fault and used no run time: they never
// consume a retry and are left out of the attempts a task has used.
inline constexpr v1::FailureReason kNoFaultReasons[] = {v1::POLICY_REJECTED, v1::ACK_TIMEOUT, v1::HANDED_BACK,
                                                        v1::NODE_BUSY};
bool IsNoFault(v1::FailureReason reason);
// Whose doing an ended attempt was, as a node's reliability score counts it.
// kUncounted: neither the job's nor the node's (a cancel, a refusal, a
// timeout in the queue, a hand-back).
enum class AttemptFault { kUncounted, kSucceeded, kJob, kNodeLost, kNode };
AttemptFault FaultOf(v1::TaskState attempt_state, v1::FailureReason reason);
// A task a busy node refused waits this long before it is placed again.
inline constexpr int64_t kBusyRetryMs = 500;

// FailedPrecondition for a report that does not fit the current state (e.g. a
// late EXITED for an attempt that was cancelled): such reports change nothing.
Result<AttemptOutcome> ApplyAttemptEvent(const AttemptContext& ctx, const v1::ReportAttemptRequest& report);

// The attempt's node went away (or its lease expired) while it was active.
AttemptOutcome NodeLostOutcome(const AttemptContext& ctx);

}  // namespace idlegrid::jobs
