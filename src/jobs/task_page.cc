// A job's summary and one page of its tasks (task_page.h). Pure.
#include "jobs/task_page.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace idlegrid::jobs {
namespace {

bool Ended(v1::TaskState s) { return s == v1::SUCCEEDED || s == v1::FAILED || s == v1::CANCELLED; }

}  // namespace

Result<TaskPage> PageOf(const v1::GetJobRequest& request) {
  TaskPage page;
  page.paged = request.paged();
  const bool selects =
      !request.task_indices().empty() || !request.states().empty() || request.offset() > 0 || request.limit() > 0;
  if (!page.paged) {
    if (selects) {
      return Status::InvalidArgument("a task selection (indices, states, offset, limit) needs paged set");
    }
    return page;
  }
  if (request.limit() > kMaxTaskPage) {
    return Status::InvalidArgument("limit " + std::to_string(request.limit()) + " is past the largest page, " +
                                   std::to_string(kMaxTaskPage) + " tasks: read more pages with offset");
  }
  page.indices.assign(request.task_indices().begin(), request.task_indices().end());
  for (int s : request.states()) page.states.push_back(static_cast<v1::TaskState>(s));
  page.offset = request.offset();
  page.limit = request.limit();
  return page;
}

v1::JobSummary Summarize(const v1::Job& job, int64_t now_ms) {
  v1::JobSummary out;
  out.set_tasks(static_cast<uint32_t>(job.tasks_size()));
  // Tasks with a failure reason: those that ended badly, and queued ones a
  // lost or refusing node sent back.
  std::map<std::pair<int, int>, std::vector<uint32_t>> groups;
  uint32_t ended = 0;
  for (const auto& t : job.tasks()) {
    ended += Ended(t.state()) ? 1 : 0;
    if (t.failure_reason() != v1::FAILURE_REASON_UNSPECIFIED) {
      groups[{t.state(), t.failure_reason()}].push_back(t.index());
    }
  }
  out.set_ended(ended);
  std::vector<std::pair<std::pair<int, int>, std::vector<uint32_t>>> ordered(groups.begin(), groups.end());
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  for (auto& [key, tasks] : ordered) {
    std::sort(tasks.begin(), tasks.end());
    v1::ReasonGroup* g = out.add_reasons();
    g->set_state(static_cast<v1::TaskState>(key.first));
    g->set_reason(static_cast<v1::FailureReason>(key.second));
    g->set_count(static_cast<uint32_t>(tasks.size()));
    for (size_t i = 0; i < tasks.size() && g->ranges_size() < kReasonRanges;) {
      size_t j = i;
      while (j + 1 < tasks.size() && tasks[j + 1] == tasks[j] + 1) ++j;
      v1::IndexRange* r = g->add_ranges();
      r->set_first(tasks[i]);
      r->set_last(tasks[j]);
      i = j + 1;
    }
  }
  const uint32_t left = out.tasks() - ended;
  const int64_t elapsed = now_ms - job.created_at_ms();
  if (ended > 0 && elapsed > 0) {
    const double per_minute = static_cast<double>(ended) * 60'000.0 / static_cast<double>(elapsed);
    out.set_tasks_per_minute(per_minute);
    if (left > 0) out.set_eta_ms(static_cast<int64_t>(static_cast<double>(left) * 60'000.0 / per_minute));
  }
  return out;
}

void ApplyPage(const TaskPage& page, v1::Job* job) {
  job->set_tasks_paged(page.paged);
  if (!page.paged) {
    job->set_tasks_matched(static_cast<uint32_t>(job->tasks_size()));
    return;
  }
  const std::set<uint32_t> wanted(page.indices.begin(), page.indices.end());
  const std::set<v1::TaskState> states(page.states.begin(), page.states.end());
  google::protobuf::RepeatedPtrField<v1::Task> kept;
  uint32_t matched = 0;
  for (auto& t : *job->mutable_tasks()) {
    if (!wanted.empty() && wanted.count(t.index()) == 0) continue;
    if (!states.empty() && states.count(t.state()) == 0) continue;
    if (matched >= page.offset && matched - page.offset < page.limit) *kept.Add() = std::move(t);
    ++matched;
  }
  job->mutable_tasks()->Swap(&kept);
  job->set_tasks_matched(matched);
}

}  // namespace idlegrid::jobs
