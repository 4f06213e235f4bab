#pragma once
// A task's row as the store writes it, and the task moves the store makes on
// its own account (a user's cancel, retry or abandon of lost tasks, the queue
// timeout). Both store backends execute these; the rules live only here.
// Pure: no SQL, no clock reads.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::jobs {

// Where a task goes, and what it shows there.
struct TaskMove {
  v1::TaskState to = v1::QUEUED;
  v1::FailureReason reason = v1::FAILURE_REASON_UNSPECIFIED;
  std::string message;
};

// The new values of a task's row; the store writes them all.
struct TaskWrite {
  v1::TaskState state = v1::QUEUED;
  v1::FailureReason reason = v1::FAILURE_REASON_UNSPECIFIED;
  std::string message;
  int64_t updated_ms = 0;
  // Set when the task re-enters the queue: its queue timeout counts afresh.
  std::optional<int64_t> queued_ms;
};

// The write for moving a task from `from`: nullopt if it is already there (its
// reason and message stand), FailedPrecondition naming both states if the
// move is illegal.
Result<std::optional<TaskWrite>> PlanTaskMove(v1::TaskState from, const TaskMove& move, int64_t now_ms);

// A user's cancel. It moves a task out of each of CancellableStates() (from
// the transition table) and leaves the others as they are.
TaskMove CancelMove();
std::vector<v1::TaskState> CancellableStates();

// The user's decision on a task LOST with its node: run it again or fail it.
TaskMove ResolveLostMove(bool retry);

// A queued task fails once it has waited longer than its job's queue timeout
// (0: no timeout) since it last entered the queue.
bool QueueTimedOut(int64_t queued_ms, int64_t queue_timeout_ms, int64_t now_ms);
TaskMove QueueTimeoutMove();

// The coordinator fails a task it can never place (e.g. it fits no node) only
// while the task is queued: an assigned one has an attempt holding node
// capacity that failing the task alone would strand. FailedPrecondition
// naming the task and its state otherwise.
Status CheckFailQueued(const std::string& job_id, uint32_t index, v1::TaskState state);

}  // namespace idlegrid::jobs
