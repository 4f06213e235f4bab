// `status` for a job of any size (cli/job_view.h), on plain messages: a
// 2,000-task job's summary (jobs::Summarize, as the coordinator sends it)
// stays a few lines, filters become the paged request that selects exactly
// the tasks asked, task lists fold into ranges, the estimate of the time left
// follows the rate so far, and `--explain` groups identical reasons.
#include "cli/job_view.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jobs/task_page.h"

namespace idlegrid::cli {
namespace {

// 2,000 tasks: 1,500 succeeded, 300 failed (200 run_timeout, 100 out_of_memory),
// 150 running, 50 queued; submitted 10 minutes before `kNow`.
constexpr int64_t kNow = 10'000'000;

v1::Job Sweep() {
  v1::Job job;
  job.set_id("j-sweep");
  job.set_created_at_ms(kNow - 600'000);
  for (uint32_t i = 0; i < 2000; ++i) {
    v1::Task* t = job.add_tasks();
    t->set_index(i);
    if (i < 1500) {
      t->set_state(v1::SUCCEEDED);
    } else if (i < 1700) {
      t->set_state(v1::FAILED);
      t->set_failure_reason(v1::RUN_TIMEOUT);
    } else if (i < 1800) {
      t->set_state(v1::FAILED);
      t->set_failure_reason(v1::OUT_OF_MEMORY);
    } else if (i < 1950) {
      t->set_state(v1::RUNNING);
    } else {
      t->set_state(v1::QUEUED);
    }
  }
  return job;
}

TEST(JobViewTest, TheSummaryOfTwoThousandTasksIsAFewLines) {
  const std::vector<std::string> lines = SummaryLines(jobs::Summarize(Sweep(), kNow));
  ASSERT_EQ(lines.size(), 3u) << ::testing::PrintToString(lines);
  EXPECT_EQ(lines[0], "200 failed (run_timeout): tasks 1500-1699");
  EXPECT_EQ(lines[1], "100 failed (out_of_memory): tasks 1700-1799");
  // 1,800 ended in 10 minutes: 180 a minute; 200 left take about a minute.
  EXPECT_EQ(lines[2], "about 1m left at 180.0 tasks/min so far (200 to go)");
}

TEST(JobViewTest, NoEstimateBeforeAnythingEndedOrAfterEverythingDid) {
  v1::Job job = Sweep();
  for (auto& t : *job.mutable_tasks()) {
    t.set_state(v1::QUEUED);
    t.clear_failure_reason();
  }
  EXPECT_TRUE(SummaryLines(jobs::Summarize(job, kNow)).empty());
  for (auto& t : *job.mutable_tasks()) t.set_state(v1::SUCCEEDED);
  EXPECT_TRUE(SummaryLines(jobs::Summarize(job, kNow)).empty());
}

TEST(JobViewTest, FiltersBecomeThePagedRequestThatSelectsExactlyTheTasksAsked) {
  TaskFilter failed;
  failed.asked = true;
  failed.tasks = {0, 1600, 1999};
  failed.states = {v1::FAILED};
  const v1::GetJobRequest req = PageRequest("j-sweep", failed, 0, 10);
  EXPECT_TRUE(req.paged());
  EXPECT_EQ(req.limit(), 10u);
  v1::Job job = Sweep();
  jobs::ApplyPage(*jobs::PageOf(req), &job);
  ASSERT_EQ(job.tasks_size(), 1);  // an index outside the state selects nothing
  EXPECT_EQ(job.tasks(0).index(), 1600u);

  failed.tasks.clear();
  v1::Job page = Sweep();
  jobs::ApplyPage(*jobs::PageOf(PageRequest("j-sweep", failed, 20, 10)), &page);
  ASSERT_EQ(page.tasks_size(), 10);
  EXPECT_EQ(page.tasks(0).index(), 1520u);
  EXPECT_EQ(page.tasks_matched(), 300u);  // 300 failed in all

  // Nobody asked: no selection, only the page the caller sizes.
  TaskFilter unasked;
  unasked.states = {v1::FAILED};
  const v1::GetJobRequest plain = PageRequest("j-sweep", unasked, 0, 20);
  EXPECT_TRUE(plain.states().empty());
}

TEST(JobViewTest, RangesSayHowManyMoreThanTheyName) {
  v1::ReasonGroup g;
  for (auto [first, last] : std::vector<std::pair<uint32_t, uint32_t>>{{3, 3}, {7, 9}, {20, 20}}) {
    v1::IndexRange* r = g.add_ranges();
    r->set_first(first);
    r->set_last(last);
  }
  EXPECT_EQ(FormatRanges(g.ranges(), 5), "3, 7-9, 20");
  EXPECT_EQ(FormatRanges(g.ranges(), 50), "3, 7-9, 20, ... (45 more)");
  EXPECT_EQ(FormatRanges(g.ranges(), 50, 2), "3, 7-9, ... (46 more)");
}

TEST(JobViewTest, TaskListsFoldIntoRangesAndSayHowManyMore) {
  EXPECT_EQ(FormatTaskList({}), "");
  EXPECT_EQ(FormatTaskList({4}), "4");
  EXPECT_EQ(FormatTaskList({0, 1, 2, 3, 7, 9, 10}), "0-3, 7, 9-10");
  EXPECT_EQ(FormatTaskList({1, 3, 5, 7, 9, 11, 13}, 3), "1, 3, 5, ... (4 more)");
  EXPECT_EQ(FormatTaskList({1, 2, 3, 10, 20, 21}, 1), "1-3, ... (3 more)");
}

TEST(JobViewTest, ExplainGroupsIdenticalReasonsMostFirst) {
  v1::ExplainJobResponse explained;
  for (uint32_t i = 0; i < 9812; ++i) {
    v1::TaskExplanation* t = explained.add_tasks();
    t->set_index(i);
    t->set_summary("2 nodes have the image, all busy");
    t->set_text("2 nodes have the image, all busy\n  top: node-a 0.91");
  }
  v1::TaskExplanation* odd = explained.add_tasks();
  odd->set_index(9812);
  odd->set_summary("no node offers 80 GiB of VRAM");
  odd->set_text("no node offers 80 GiB of VRAM");
  const std::vector<std::string> lines = GroupedExplanation(explained);
  ASSERT_EQ(lines.size(), 7u) << ::testing::PrintToString(lines);
  EXPECT_EQ(lines[0], "9812 tasks wait (tasks 0-9811): 2 nodes have the image, all busy");
  EXPECT_EQ(lines[1], "  e.g. task 0:");
  EXPECT_EQ(lines[2], "    2 nodes have the image, all busy");
  EXPECT_EQ(lines[3], "      top: node-a 0.91");
  EXPECT_EQ(lines[4], "1 task waits (tasks 9812): no node offers 80 GiB of VRAM");
  EXPECT_EQ(lines[5], "  e.g. task 9812:");
  EXPECT_EQ(lines[6], "    no node offers 80 GiB of VRAM");
  EXPECT_TRUE(GroupedExplanation(v1::ExplainJobResponse()).empty());
}

}  // namespace
}  // namespace idlegrid::cli
