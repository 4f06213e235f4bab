#include "jobs/retention.h"

#include "jobs/task_state.h"

namespace idlegrid::jobs {

Status CheckDeletable(const std::string& job_id, const std::map<v1::TaskState, int>& task_counts, int active_attempts) {
  int total = 0;
  for (const auto& [state, n] : task_counts) {
    total += n;
    if (n > 0 && !IsTerminal(state)) {
      return Status::FailedPrecondition("job " + job_id + " has " + std::to_string(n) + " " + StateName(state) +
                                        " task(s); cancel it (or retry/abandon lost tasks) before deleting it");
    }
  }
  if (total == 0) return Status::NotFound("job " + job_id + " does not exist");
  if (active_attempts > 0) {
    return Status::FailedPrecondition("job " + job_id + " still has " + std::to_string(active_attempts) +
                                      " attempt(s) stopping on their nodes; try again when they are gone");
  }
  return Status::Ok();
}

bool RetentionExpired(int64_t settled_ms, int64_t retention_ms, int64_t now_ms) {
  return retention_ms > 0 && settled_ms + retention_ms <= now_ms;
}

}  // namespace idlegrid::jobs
