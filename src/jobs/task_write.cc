#include "jobs/task_write.h"

#include <utility>

#include "jobs/task_state.h"

namespace idlegrid::jobs {

Result<std::optional<TaskWrite>> PlanTaskMove(v1::TaskState from, const TaskMove& move, int64_t now_ms) {
  if (from == move.to) return std::optional<TaskWrite>();
  IG_RETURN_IF_ERROR(CheckTaskTransition(from, move.to));
  TaskWrite write;
  write.state = move.to;
  write.reason = move.reason;
  write.message = move.message;
  write.updated_ms = now_ms;
  if (move.to == v1::QUEUED) write.queued_ms = now_ms;
  return std::optional<TaskWrite>(std::move(write));
}

TaskMove CancelMove() { return {v1::CANCELLED, v1::USER_CANCEL, "cancelled by user"}; }

std::vector<v1::TaskState> CancellableStates() {
  std::vector<v1::TaskState> out;
  for (int s = v1::TaskState_MIN; s <= v1::TaskState_MAX; ++s) {
    if (!v1::TaskState_IsValid(s) || s == v1::CANCELLED) continue;
    auto state = static_cast<v1::TaskState>(s);
    if (CheckTaskTransition(state, v1::CANCELLED).ok()) out.push_back(state);
  }
  return out;
}

TaskMove ResolveLostMove(bool retry) {
  if (retry) return {v1::QUEUED, v1::FAILURE_REASON_UNSPECIFIED, ""};
  return {v1::FAILED, v1::NODE_LOST, "abandoned by the user after its node was lost"};
}

bool QueueTimedOut(int64_t queued_ms, int64_t queue_timeout_ms, int64_t now_ms) {
  return queue_timeout_ms > 0 && now_ms - queued_ms > queue_timeout_ms;
}

TaskMove QueueTimeoutMove() {
  return {v1::FAILED, v1::QUEUE_TIMEOUT, "no node took the task within its queue timeout"};
}

Status CheckFailQueued(const std::string& job_id, uint32_t index, v1::TaskState state) {
  if (state == v1::QUEUED) return Status::Ok();
  return Status::FailedPrecondition("task " + job_id + "/" + std::to_string(index) + " is " + StateName(state) +
                                    ", not queued");
}

}  // namespace idlegrid::jobs
