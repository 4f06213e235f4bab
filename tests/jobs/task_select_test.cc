// A user's cancel of some tasks and retry of finished ones (jobs/task_select.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jobs/task_select.h"

namespace idlegrid::jobs {
namespace {

constexpr int64_t kNow = 2'000'000;

// Ten tasks: 0-1 succeeded, 2 failed, 3-4 running, 5 cancelled, 6-7 queued, 8 lost, 9 assigned.
std::vector<TaskStateRow> Job() {
  const v1::TaskState s[] = {v1::SUCCEEDED, v1::SUCCEEDED, v1::FAILED, v1::RUNNING, v1::RUNNING,
                             v1::CANCELLED, v1::QUEUED,    v1::QUEUED, v1::LOST,    v1::ASSIGNED};
  std::vector<TaskStateRow> out;
  for (uint32_t i = 0; i < 10; ++i) out.push_back({i, s[i]});
  return out;
}

std::vector<uint32_t> Indices(const std::vector<IndexedWrite>& writes) {
  std::vector<uint32_t> out;
  for (const auto& w : writes) out.push_back(w.index);
  return out;
}

TEST(PlanCancelTasksTest, SelectsByIndexStateOrBoth) {
  struct Case {
    const char* name;
    TaskSelection selection;
    std::vector<uint32_t> cancelled;
  };
  const Case cases[] = {
      // Ended tasks among those listed are left alone.
      {"indices", {{3, 7, 8, 9, 0, 5}, {}}, {3, 7, 8, 9}},
      {"one state", {{}, {v1::QUEUED}}, {6, 7}},
      {"several states", {{}, {v1::QUEUED, v1::RUNNING}}, {3, 4, 6, 7}},
      {"both must match", {{3, 6, 9}, {v1::RUNNING, v1::ASSIGNED}}, {3, 9}},
      {"nothing left to cancel", {{0, 1, 2}, {}}, {}},
  };
  for (const Case& c : cases) {
    auto plan = PlanCancelTasks("j", Job(), c.selection, kNow);
    ASSERT_TRUE(plan.ok()) << c.name << ": " << plan.status().message();
    EXPECT_EQ(Indices(*plan), c.cancelled) << c.name;
    for (const auto& w : *plan) {
      EXPECT_EQ(w.write.state, v1::CANCELLED) << c.name;
      EXPECT_EQ(w.write.reason, v1::USER_CANCEL) << c.name;
      EXPECT_EQ(w.write.updated_ms, kNow) << c.name;
      EXPECT_FALSE(w.write.queued_ms.has_value()) << c.name;
      EXPECT_FALSE(w.fresh_start) << c.name;
    }
  }
}

TEST(PlanCancelTasksTest, RefusesWhatItCannotDo) {
  struct Case {
    const char* name;
    TaskSelection selection;
    Code code;
    const char* says;
  };
  const Case cases[] = {
      {"empty", {}, Code::kInvalidArgument, "no tasks selected"},
      {"unknown index", {{3, 10}, {}}, Code::kInvalidArgument, "job j has no task 10 (it has 10 task(s), 0-9)"},
      {"ended state",
       {{}, {v1::SUCCEEDED}},
       Code::kInvalidArgument,
       "succeeded cannot be cancelled (cancellable: queued, assigned, running, lost)"},
  };
  for (const Case& c : cases) {
    auto plan = PlanCancelTasks("j", Job(), c.selection, kNow);
    ASSERT_FALSE(plan.ok()) << c.name;
    EXPECT_EQ(plan.status().code(), c.code) << c.name;
    EXPECT_NE(plan.status().message().find(c.says), std::string::npos) << c.name << ": " << plan.status().message();
  }
}

TEST(PlanRetryTasksTest, FailedAndListedTasksGoBackToTheQueue) {
  struct Case {
    const char* name;
    RetrySelection selection;
    std::vector<uint32_t> retried;
  };
  const Case cases[] = {
      {"failed", {true, {}}, {2}},
      {"a cancelled one by index", {false, {5}}, {5}},
      {"both, no duplicate", {true, {5, 2}}, {2, 5}},
  };
  for (const Case& c : cases) {
    auto plan = PlanRetryTasks("j", Job(), c.selection, kNow);
    ASSERT_TRUE(plan.ok()) << c.name << ": " << plan.status().message();
    EXPECT_EQ(Indices(*plan), c.retried) << c.name;
    for (const auto& w : *plan) {
      EXPECT_EQ(w.write.state, v1::QUEUED) << c.name;
      EXPECT_EQ(w.write.reason, v1::FAILURE_REASON_UNSPECIFIED) << c.name;
      EXPECT_EQ(w.write.queued_ms, kNow) << c.name;  // its queue timeout counts afresh
      EXPECT_TRUE(w.fresh_start) << c.name;          // excluded nodes and backoff forgotten
    }
  }
}

TEST(PlanRetryTasksTest, RefusesWhatItCannotDo) {
  struct Case {
    const char* name;
    std::vector<TaskStateRow> tasks;
    RetrySelection selection;
    Code code;
    const char* says;
  };
  const Case cases[] = {
      {"empty", Job(), {}, Code::kInvalidArgument, "no tasks selected"},
      {"running task",
       Job(),
       {true, {3}},
       Code::kFailedPrecondition,
       "task j/3 is running: only failed or cancelled tasks are retried"},
      {"succeeded task", Job(), {false, {0}}, Code::kFailedPrecondition, "task j/0 is succeeded"},
      {"lost task (resolved by `retry` without flags)",
       Job(),
       {false, {8}},
       Code::kFailedPrecondition,
       "task j/8 is lost"},
      {"unknown index", Job(), {false, {42}}, Code::kInvalidArgument, "job j has no task 42"},
      {"no failed task",
       {{0, v1::SUCCEEDED}, {1, v1::CANCELLED}},
       {true, {}},
       Code::kFailedPrecondition,
       "job j has no failed tasks to retry"},
  };
  for (const Case& c : cases) {
    auto plan = PlanRetryTasks("j", c.tasks, c.selection, kNow);
    ASSERT_FALSE(plan.ok()) << c.name;
    EXPECT_EQ(plan.status().code(), c.code) << c.name;
    EXPECT_NE(plan.status().message().find(c.says), std::string::npos) << c.name << ": " << plan.status().message();
  }
}

// The state machine itself keeps terminal states closed: only the user's
// retry plan reopens them.
TEST(PlanRetryTasksTest, NoAutomaticMoveLeavesAnEndedTask) {
  for (v1::TaskState s : {v1::FAILED, v1::CANCELLED}) {
    EXPECT_TRUE(UserRetryable(s));
    EXPECT_FALSE(PlanTaskMove(s, TaskMove{v1::QUEUED, v1::FAILURE_REASON_UNSPECIFIED, ""}, kNow).ok()) << s;
  }
  for (v1::TaskState s : {v1::SUCCEEDED, v1::QUEUED, v1::ASSIGNED, v1::RUNNING, v1::LOST}) {
    EXPECT_FALSE(UserRetryable(s)) << s;
  }
}

}  // namespace
}  // namespace idlegrid::jobs
