#include "jobs/task_select.h"

#include <algorithm>
#include <map>
#include <set>

#include "jobs/task_state.h"

namespace idlegrid::jobs {

namespace {

// The job's tasks by index; InvalidArgument for a listed index it lacks.
Result<std::map<uint32_t, v1::TaskState>> ByIndex(const std::string& job_id, const std::vector<TaskStateRow>& tasks,
                                                  const std::vector<uint32_t>& listed) {
  std::map<uint32_t, v1::TaskState> by_index;
  for (const TaskStateRow& t : tasks) by_index[t.index] = t.state;
  for (uint32_t i : listed) {
    if (by_index.count(i)) continue;
    return Status::InvalidArgument("job " + job_id + " has no task " + std::to_string(i) + " (it has " +
                                   std::to_string(tasks.size()) + " task(s)" +
                                   (tasks.empty() ? "" : ", 0-" + std::to_string(by_index.rbegin()->first)) + ")");
  }
  return by_index;
}

std::string CancellableNames() {
  std::string out;
  for (v1::TaskState s : CancellableStates()) out += std::string(out.empty() ? "" : ", ") + StateName(s);
  return out;
}

}  // namespace

Result<std::vector<IndexedWrite>> PlanCancelTasks(const std::string& job_id, const std::vector<TaskStateRow>& tasks,
                                                  const TaskSelection& selection, int64_t now_ms) {
  if (selection.indices.empty() && selection.states.empty()) {
    return Status::InvalidArgument("no tasks selected: name task indices and/or states");
  }
  const std::vector<v1::TaskState> cancellable = CancellableStates();
  for (v1::TaskState s : selection.states) {
    if (std::find(cancellable.begin(), cancellable.end(), s) == cancellable.end()) {
      return Status::InvalidArgument(std::string("tasks that are ") + StateName(s) +
                                     " cannot be cancelled (cancellable: " + CancellableNames() + ")");
    }
  }
  IG_ASSIGN_OR_RETURN(auto by_index, ByIndex(job_id, tasks, selection.indices));
  const std::set<uint32_t> listed(selection.indices.begin(), selection.indices.end());
  const std::set<v1::TaskState> states(selection.states.begin(), selection.states.end());
  std::vector<IndexedWrite> out;
  for (const auto& [index, state] : by_index) {
    if (!listed.empty() && !listed.count(index)) continue;
    if (!states.empty() && !states.count(state)) continue;
    if (std::find(cancellable.begin(), cancellable.end(), state) == cancellable.end()) continue;
    IG_ASSIGN_OR_RETURN(std::optional<TaskWrite> write, PlanTaskMove(state, CancelMove(), now_ms));
    if (write) out.push_back({index, std::move(*write)});
  }
  return out;
}

bool UserRetryable(v1::TaskState state) { return state == v1::FAILED || state == v1::CANCELLED; }

Result<std::vector<IndexedWrite>> PlanRetryTasks(const std::string& job_id, const std::vector<TaskStateRow>& tasks,
                                                 const RetrySelection& selection, int64_t now_ms) {
  if (!selection.failed && selection.indices.empty()) {
    return Status::InvalidArgument("no tasks selected: retry the failed ones and/or name task indices");
  }
  IG_ASSIGN_OR_RETURN(auto by_index, ByIndex(job_id, tasks, selection.indices));
  std::set<uint32_t> chosen;
  for (uint32_t i : selection.indices) {
    if (!UserRetryable(by_index[i])) {
      return Status::FailedPrecondition("task " + job_id + "/" + std::to_string(i) + " is " + StateName(by_index[i]) +
                                        ": only failed or cancelled tasks are retried");
    }
    chosen.insert(i);
  }
  if (selection.failed) {
    for (const auto& [index, state] : by_index) {
      if (state == v1::FAILED) chosen.insert(index);
    }
  }
  if (chosen.empty()) return Status::FailedPrecondition("job " + job_id + " has no failed tasks to retry");
  std::vector<IndexedWrite> out;
  for (uint32_t index : chosen) {
    TaskWrite write;
    write.state = v1::QUEUED;
    write.message = "retried by the user";
    write.updated_ms = now_ms;
    write.queued_ms = now_ms;
    out.push_back({index, std::move(write), true});
  }
  return out;
}

}  // namespace idlegrid::jobs
