#pragma once
// A user's moves on chosen tasks of one job: cancel some of its tasks (by
// index and/or state) and retry finished ones. Both store backends read the
// job's (index, state) rows in a transaction, ask for a plan here and write
// it; which tasks move, and whether a move is allowed, is decided only here.
// Pure: no SQL, no clock reads.
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "jobs/task_write.h"

namespace idlegrid::jobs {

struct TaskStateRow {
  uint32_t index = 0;
  v1::TaskState state = v1::QUEUED;
};

// One task's new row.
struct IndexedWrite {
  uint32_t index = 0;
  TaskWrite write;
  // Also forget the nodes its earlier attempts excluded and any retry
  // backoff: a user's retry is a fresh start (on a one-node grid, a task
  // whose platform failure excluded the node could otherwise never run).
  bool fresh_start = false;
};

// Which tasks a cancel names. A task matches when its index is listed (or no
// index is) and its state is listed (or no state is).
struct TaskSelection {
  std::vector<uint32_t> indices;
  std::vector<v1::TaskState> states;
};

// The writes cancelling the tasks `selection` matches, in index order. Tasks
// that already ended are left as they are (a cancel is idempotent).
// InvalidArgument for an empty selection, an index the job does not have, or
// a state that cannot be cancelled (naming the ones that can).
Result<std::vector<IndexedWrite>> PlanCancelTasks(const std::string& job_id, const std::vector<TaskStateRow>& tasks,
                                                  const TaskSelection& selection, int64_t now_ms);

// Which tasks a retry names: every FAILED one (`failed`) and/or those listed.
struct RetrySelection {
  bool failed = false;
  std::vector<uint32_t> indices;
};

// A user's retry may take a task out of these ended states (and only a
// user's: no automatic path leaves a terminal state, task_state.h).
// CANCELLED is here so a task cancelled by mistake can be run after all.
bool UserRetryable(v1::TaskState state);

// The writes sending the selected tasks back to QUEUED (queue clock
// restarted, reason cleared, a fresh start), in index order. A listed task that is not
// UserRetryable is FailedPrecondition naming it and its state; InvalidArgument
// for an empty selection or an index the job does not have;
// FailedPrecondition when nothing matches ("job J has no failed tasks").
Result<std::vector<IndexedWrite>> PlanRetryTasks(const std::string& job_id, const std::vector<TaskStateRow>& tasks,
                                                 const RetrySelection& selection, int64_t now_ms);

}  // namespace idlegrid::jobs
