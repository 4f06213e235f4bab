#pragma once
// The task/attempt state machine, as pure functions over plain values.
//
//   QUEUED ──▶ ASSIGNED ──▶ RUNNING ──▶ SUCCEEDED
//                 └──────────┴──▶ LOST (node lost, not idempotent) ──▶ QUEUED (retry) | FAILED (abandon) | CANCELLED
//     │  ▲        │  │         │  └───▶ FAILED(reason)
//     │  └────────┘  │         └──────▶ CANCELLED
//     │  (rejected,  └─▶ FAILED | CANCELLED
//     │   retried)
//     └──▶ FAILED(queue timeout) | CANCELLED
//
// A task is retried by moving it back to QUEUED; each try is a new attempt.
// Attempts never leave a terminal state. Tasks leave one only by a user's
// retry (FAILED | CANCELLED -> QUEUED, jobs/task_select.h), which is not an
// edge here: no automatic path may take it.
#include <cstdint>
#include <map>
#include <string>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::jobs {

using v1::FailureReason;
using v1::TaskState;

const char* StateName(TaskState state);
const char* ReasonName(FailureReason reason);
bool IsTerminal(TaskState state);

// Ok if a task may move from `from` to `to`; FailedPrecondition naming both otherwise.
Status CheckTaskTransition(TaskState from, TaskState to);
// Attempts have no way back to QUEUED.
Status CheckAttemptTransition(TaskState from, TaskState to);

// Aggregate state of a job from the number of its tasks in each state.
TaskState AggregateJobState(const std::map<TaskState, int>& counts);
// Sets the job's task counts (by state name) and its aggregate state.
void SetTaskCounts(v1::Job& job, const std::map<TaskState, int>& counts);

// A job is settled when it is terminal and none of its attempts still holds a
// node (a cancelled task's container may still be stopping).
// A job whose tasks are LOST counts as settled too: nothing more happens until
// the user decides.
bool IsSettled(const v1::Job& job);

// Whether an attempt's outputs are (part of) its task's result: it succeeded
// and, for a verified job, its verdict accepted it ("agreed", or
// "unverified" when an adaptive audit was not drawn). Charged by the ledger,
// fetched by the CLI.
bool IsAcceptedResult(const v1::Attempt& attempt);

// Whether a failed attempt is retried. `attempts_used` counts the failed one.
// Never for USER_CANCEL or QUEUE_TIMEOUT; for NODE_LOST only when the job is
// idempotent and attempts_used <= retries; for every other reason (the job's
// own failures, platform failures, run timeouts, out of memory, verification
// failures, ...) while attempts_used <= retries. The no-fault reasons
// (jobs::IsNoFault) get no special case here: jobs/attempt_events.cc
// requeues those without asking.
bool ShouldRetry(FailureReason reason, uint32_t attempts_used, uint32_t retries, bool idempotent);

}  // namespace idlegrid::jobs
