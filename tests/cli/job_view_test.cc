// `status` for a job of any size (cli/job_view.h), on plain messages: a
// 2,000-task job's summary stays a few lines, filters select exactly the
// tasks asked (and say how many more matched past the limit), task lists
// fold into ranges, the estimate of the time left follows the rate so far,
// and `--explain` groups identical reasons with their counts.
#include "cli/job_view.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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
  const std::vector<std::string> lines = SummaryLines(Sweep(), kNow);
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
  EXPECT_TRUE(SummaryLines(job, kNow).empty());
  for (auto& t : *job.mutable_tasks()) t.set_state(v1::SUCCEEDED);
  EXPECT_TRUE(SummaryLines(job, kNow).empty());
}

TEST(JobViewTest, FiltersSelectExactlyTheTasksAsked) {
  const v1::Job job = Sweep();
  size_t more = 0;
  TaskFilter by_index;
  by_index.tasks = {3, 7, 8, 9, 1999};
  std::vector<uint32_t> got;
  for (const v1::Task* t : SelectTasks(job, by_index, &more)) got.push_back(t->index());
  EXPECT_EQ(got, (std::vector<uint32_t>{3, 7, 8, 9, 1999}));
  EXPECT_EQ(more, 0u);

  TaskFilter failed;
  failed.states = {v1::FAILED};
  failed.limit = 10;
  auto selected = SelectTasks(job, failed, &more);
  ASSERT_EQ(selected.size(), 10u);
  EXPECT_EQ(selected.front()->index(), 1500u);
  EXPECT_EQ(more, 290u);  // 300 failed in all
  for (const v1::Task* t : selected) EXPECT_EQ(t->state(), v1::FAILED);

  TaskFilter both;  // an index outside the state selects nothing
  both.tasks = {0, 1600};
  both.states = {v1::FAILED};
  selected = SelectTasks(job, both, &more);
  ASSERT_EQ(selected.size(), 1u);
  EXPECT_EQ(selected[0]->index(), 1600u);

  TaskFilter unlimited;
  unlimited.states = {v1::QUEUED};
  unlimited.limit = 0;
  EXPECT_EQ(SelectTasks(job, unlimited, &more).size(), 50u);
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
