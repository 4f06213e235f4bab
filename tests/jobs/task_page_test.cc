// A job's summary and pages of its tasks (jobs/task_page.h), on plain messages.
#include "jobs/task_page.h"

#include <gtest/gtest.h>

namespace idlegrid::jobs {
namespace {

// A job of `n` tasks: task i is in states[i % states.size()].
v1::Job JobOf(uint32_t n, const std::vector<v1::TaskState>& states) {
  v1::Job job;
  job.set_created_at_ms(1'000);
  for (uint32_t i = 0; i < n; ++i) {
    v1::Task* t = job.add_tasks();
    t->set_index(i);
    t->set_state(states[i % states.size()]);
  }
  return job;
}

std::vector<uint32_t> Indices(const v1::Job& job) {
  std::vector<uint32_t> out;
  for (const auto& t : job.tasks()) out.push_back(t.index());
  return out;
}

TEST(TaskPageTest, UnpagedKeepsEveryTask) {
  v1::GetJobRequest req;
  req.set_job_id("j");
  auto page = PageOf(req);
  ASSERT_TRUE(page.ok()) << page.status().message();
  v1::Job job = JobOf(5, {v1::QUEUED});
  ApplyPage(*page, &job);
  EXPECT_EQ(job.tasks_size(), 5);
  EXPECT_FALSE(job.tasks_paged());
  EXPECT_EQ(job.tasks_matched(), 5u);
}

TEST(TaskPageTest, PagesTheTasksTheSelectionMatches) {
  v1::GetJobRequest req;
  req.set_paged(true);
  req.add_states(v1::FAILED);
  req.set_offset(2);
  req.set_limit(3);
  auto page = PageOf(req);
  ASSERT_TRUE(page.ok());
  // Tasks 1, 4, 7, 10, 13, 16, 19 are FAILED; the page skips two of them.
  v1::Job job = JobOf(20, {v1::SUCCEEDED, v1::FAILED, v1::RUNNING});
  ApplyPage(*page, &job);
  EXPECT_EQ(Indices(job), (std::vector<uint32_t>{7, 10, 13}));
  EXPECT_EQ(job.tasks_matched(), 7u);
  EXPECT_TRUE(job.tasks_paged());

  v1::GetJobRequest both;  // an index listed and a state listed: both must match
  both.set_paged(true);
  for (uint32_t i : {0u, 1u, 2u, 4u}) both.add_task_indices(i);
  both.add_states(v1::FAILED);
  both.set_limit(10);
  v1::Job again = JobOf(20, {v1::SUCCEEDED, v1::FAILED, v1::RUNNING});
  ApplyPage(*PageOf(both), &again);
  EXPECT_EQ(Indices(again), (std::vector<uint32_t>{1, 4}));
}

TEST(TaskPageTest, LimitZeroIsTheSummaryAloneAndAPastTheEndOffsetIsEmpty) {
  v1::GetJobRequest req;
  req.set_paged(true);
  v1::Job job = JobOf(10, {v1::QUEUED});
  ApplyPage(*PageOf(req), &job);
  EXPECT_EQ(job.tasks_size(), 0);
  EXPECT_EQ(job.tasks_matched(), 10u);
  req.set_offset(50);
  req.set_limit(5);
  v1::Job past = JobOf(10, {v1::QUEUED});
  ApplyPage(*PageOf(req), &past);
  EXPECT_EQ(past.tasks_size(), 0);
  EXPECT_EQ(past.tasks_matched(), 10u);
}

TEST(TaskPageTest, RefusesAnOversizedPageAndASelectionWithoutPaged) {
  v1::GetJobRequest big;
  big.set_paged(true);
  big.set_limit(kMaxTaskPage + 1);
  auto page = PageOf(big);
  ASSERT_FALSE(page.ok());
  EXPECT_EQ(page.status().code(), Code::kInvalidArgument);
  EXPECT_NE(page.status().message().find("offset"), std::string::npos) << page.status().message();
  v1::GetJobRequest unpaged;
  unpaged.add_states(v1::FAILED);
  EXPECT_FALSE(PageOf(unpaged).ok());
}

TEST(TaskPageTest, SummaryGroupsReasonsMostFirstWithExamplesAndRate) {
  v1::Job job = JobOf(100, {v1::QUEUED});
  for (uint32_t i = 0; i < 60; ++i) job.mutable_tasks(i)->set_state(v1::SUCCEEDED);
  for (uint32_t i = 60; i < 100; i += 2) {  // 20 run timeouts
    job.mutable_tasks(i)->set_state(v1::FAILED);
    job.mutable_tasks(i)->set_failure_reason(v1::RUN_TIMEOUT);
  }
  job.mutable_tasks(61)->set_failure_reason(v1::NODE_LOST);  // queued again after a lost node
  // 80 of 100 ended 60 s after submit: 80/min, 20 left -> 15 s.
  v1::JobSummary s = Summarize(job, 61'000);
  EXPECT_EQ(s.tasks(), 100u);
  EXPECT_EQ(s.ended(), 80u);
  ASSERT_EQ(s.reasons_size(), 2);
  EXPECT_EQ(s.reasons(0).state(), v1::FAILED);
  EXPECT_EQ(s.reasons(0).reason(), v1::RUN_TIMEOUT);
  EXPECT_EQ(s.reasons(0).count(), 20u);
  ASSERT_EQ(s.reasons(0).ranges_size(), kReasonRanges);  // 60, 62, 64, ...: one run each
  EXPECT_EQ(s.reasons(0).ranges(0).first(), 60u);
  EXPECT_EQ(s.reasons(0).ranges(0).last(), 60u);
  EXPECT_EQ(s.reasons(0).ranges(1).first(), 62u);
  EXPECT_EQ(s.reasons(1).reason(), v1::NODE_LOST);
  EXPECT_EQ(s.reasons(1).state(), v1::QUEUED);
  EXPECT_DOUBLE_EQ(s.tasks_per_minute(), 80.0);
  EXPECT_EQ(s.eta_ms(), 15'000);
}

TEST(TaskPageTest, SummaryFoldsRunsAndNoRateBeforeAnyTaskEnds) {
  v1::Job job = JobOf(1000, {v1::FAILED});
  for (auto& t : *job.mutable_tasks()) t.set_failure_reason(v1::NONZERO_EXIT);
  v1::JobSummary s = Summarize(job, 2'000);
  ASSERT_EQ(s.reasons_size(), 1);
  EXPECT_EQ(s.reasons(0).count(), 1000u);
  ASSERT_EQ(s.reasons(0).ranges_size(), 1);  // 0-999, one run
  EXPECT_EQ(s.reasons(0).ranges(0).first(), 0u);
  EXPECT_EQ(s.reasons(0).ranges(0).last(), 999u);
  EXPECT_EQ(s.eta_ms(), 0);  // nothing left
  v1::JobSummary fresh = Summarize(JobOf(10, {v1::QUEUED}), 5'000);
  EXPECT_EQ(fresh.ended(), 0u);
  EXPECT_EQ(fresh.tasks_per_minute(), 0.0);
  EXPECT_EQ(fresh.eta_ms(), 0);
}

}  // namespace
}  // namespace idlegrid::jobs
