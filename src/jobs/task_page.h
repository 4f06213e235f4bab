#pragma once
// Reading a job of any size: its summary (counts are on the job already;
// this adds failure reasons with example tasks, the rate tasks end at and the
// time left), and one page of the tasks a selection matches. The coordinator
// answers GetJob and WatchJob with these, so a 10,000-task job costs a client
// a page, not the job. Pure: plain messages in and out, the time passed in.
#include <cstdint>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::jobs {

// Most tasks one page may hold: a page is what a person reads or a poll
// moves, and a client wanting more reads more pages.
inline constexpr uint32_t kMaxTaskPage = 1000;
// Runs of consecutive task indices kept per reason group, as examples.
inline constexpr int kReasonRanges = 8;

struct TaskPage {
  bool paged = false;                 // false: every task, as GetJob answered before paging
  std::vector<uint32_t> indices;      // empty: any index
  std::vector<v1::TaskState> states;  // empty: any state
  uint32_t offset = 0;                // into the matching tasks
  uint32_t limit = 0;                 // 0: none (the summary alone)
};

// The page a request asks for; InvalidArgument for a limit past kMaxTaskPage
// or a selection on an unpaged request (it would be silently ignored).
Result<TaskPage> PageOf(const v1::GetJobRequest& request);

// The summary of `job` with all its tasks loaded; `now_ms` dates the rate.
v1::JobSummary Summarize(const v1::Job& job, int64_t now_ms);

// Keeps only the tasks `page` selects (all of them when it is not paged) and
// records how many matched. Tasks stay in index order.
void ApplyPage(const TaskPage& page, v1::Job* job);

}  // namespace idlegrid::jobs
