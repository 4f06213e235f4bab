#pragma once
// What `status` and `status --explain` print for a job of any size: a
// summary that stays a few lines for 10,000 tasks (counts by state, failure
// reasons with example tasks, progress and an estimate of the time left),
// the tasks a filter selects, and the waiting tasks grouped by identical
// reason. Pure: plain messages in, lines out; commands.cc prints them.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::cli {

// Jobs with at most this many tasks list them all by default; larger ones
// show the summary and list tasks only when a filter asks.
inline constexpr int kListAllTasksUpTo = 20;
// A filter lists at most this many tasks unless --limit says otherwise.
inline constexpr int kDefaultTaskLimit = 50;
// Example task indices shown per failure reason or waiting reason.
inline constexpr size_t kExamples = 5;

// Which tasks `status` lists: those in `tasks` (all when empty) and in one
// of `states` (any when empty), the first `limit` of them (0: no limit). The
// coordinator selects them (GetJobRequest's paging, jobs/task_page.h).
struct TaskFilter {
  std::vector<uint32_t> tasks;
  std::vector<v1::TaskState> states;
  int limit = kDefaultTaskLimit;
  // Whether the user asked for tasks at all (--tasks, --state, --limit or --all).
  bool asked = false;
};

// GetJob's paged request for the tasks `filter` lists, from `offset`, at
// most `limit` (a page); a filter nobody asked for reads the first
// kListAllTasksUpTo tasks, all of a small job.
v1::GetJobRequest PageRequest(const std::string& job_id, const TaskFilter& filter, uint32_t offset, uint32_t limit);

// "0-3, 7, 9-10": ascending indices as ranges; past `max_parts` parts,
// ", ... (N more)".
std::string FormatTaskList(const std::vector<uint32_t>& indices, size_t max_parts = kExamples);
// The same from runs of indices, of `count` tasks in all (the runs may
// name only the first of them).
std::string FormatRanges(const google::protobuf::RepeatedPtrField<v1::IndexRange>& ranges, uint32_t count,
                         size_t max_parts = kExamples);

// The summary under a job's first line: tasks per state and failure reason
// with example indices ("12 failed (run_timeout): tasks 3, 17, 40-41, ...
// (8 more)"), most first, and for an array job still running, the time left
// at the rate so far ("about 4m left at 83.0 tasks/min") once any task has ended.
std::vector<std::string> SummaryLines(const v1::JobSummary& summary);

// `status --explain`: the queued tasks grouped by identical summary, most
// tasks first; each group is one line with its count and example indices,
// then the first task's full explanation indented.
std::vector<std::string> GroupedExplanation(const v1::ExplainJobResponse& explained);

}  // namespace idlegrid::cli
