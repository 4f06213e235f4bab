// A user's cancel of some tasks and retry of finished ones (jobs/task_select.h)
// on both store backends: only the selected tasks move, their attempts (and
// only theirs) are stopped, a retried task runs again with its history kept.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "store/store.h"
#include "store/store_fixture.h"

namespace idlegrid::store {
namespace {

using namespace backends;  // NOLINT: the shared fixture and helpers

class TaskSelectStoreTest : public StoreFixture, public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override { CreateDatabase(GetParam()); }

  std::vector<v1::TaskState> States(const v1::Job& job) {
    std::vector<v1::TaskState> out;
    for (const auto& t : job.tasks()) out.push_back(t.state());
    return out;
  }
};

INSTANTIATE_TEST_SUITE_P(Backends, TaskSelectStoreTest, ::testing::Values(BackendKind::kSqlite, BackendKind::kPostgres),
                         [](const auto& info) { return backends::BackendName(info.param); });

TEST_P(TaskSelectStoreTest, CancelByIndexStopsOnlyTheSelectedTasksAttempts) {
  CreateJob("j", {.array_count = 10});
  Assign("j", 0, "att-0", "n1");
  ReportOk("n1", Report("att-0", v1::EXITED, 0));  // succeeded: left alone
  Assign("j", 3, "att-3", "n1");
  ReportOk("n1", Report("att-3", v1::STARTED));
  Assign("j", 4, "att-4", "n2");
  ReportOk("n2", Report("att-4", v1::STARTED));  // running, not selected: runs on
  Assign("j", 7, "att-7", "n2");                 // assigned

  jobs::TaskSelection selection;
  selection.indices = {0, 3, 7, 8, 9};
  auto r = store_->CancelTasks("j", selection, 9000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::map<std::string, std::string> stopped;
  for (const auto& a : r->stopped) stopped[a.attempt_id] = a.node_id;
  EXPECT_EQ(stopped, (std::map<std::string, std::string>{{"att-3", "n1"}, {"att-7", "n2"}}));
  const std::vector<v1::TaskState> want = {v1::SUCCEEDED, v1::QUEUED, v1::QUEUED,    v1::CANCELLED, v1::RUNNING,
                                           v1::QUEUED,    v1::QUEUED, v1::CANCELLED, v1::CANCELLED, v1::CANCELLED};
  EXPECT_EQ(States(r->job), want);
  EXPECT_EQ(r->job.tasks(8).failure_reason(), v1::USER_CANCEL);
  EXPECT_EQ(r->job.task_counts().at("cancelled"), 4u);

  // The stopped attempts hold their nodes until the agents confirm; the others run on.
  auto active = store_->ActiveAttempts();
  ASSERT_TRUE(active.ok());
  EXPECT_EQ(active->size(), 3u);
  ReportOk("n1", Report("att-3", v1::STOPPED));
  ReportOk("n2", Report("att-4", v1::EXITED, 0));
  EXPECT_EQ(TaskOf("j", 3).attempts(0).state(), v1::CANCELLED);
  EXPECT_EQ(TaskOf("j", 4).state(), v1::SUCCEEDED);

  // The queued ones are still offered; the cancelled ones are not.
  std::vector<std::string> queued = QueuedKeys();
  EXPECT_EQ(queued.size(), 4u);  // 1, 2, 5, 6
}

TEST_P(TaskSelectStoreTest, CancelByStateMatchesEveryTaskInThoseStates) {
  CreateJob("j", {.array_count = 4});
  Assign("j", 1, "att-1", "n1");
  ReportOk("n1", Report("att-1", v1::STARTED));
  jobs::TaskSelection selection;
  selection.states = {v1::QUEUED};
  auto r = store_->CancelTasks("j", selection, 9000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->stopped.empty());
  EXPECT_EQ(States(r->job), (std::vector<v1::TaskState>{v1::CANCELLED, v1::RUNNING, v1::CANCELLED, v1::CANCELLED}));
}

TEST_P(TaskSelectStoreTest, CancelErrorsChangeNothing) {
  CreateJob("j", {.array_count = 3});
  jobs::TaskSelection bad_index;
  bad_index.indices = {1, 3};
  EXPECT_EQ(store_->CancelTasks("j", bad_index, 9000).status().code(), Code::kInvalidArgument);
  jobs::TaskSelection bad_state;
  bad_state.states = {v1::SUCCEEDED};
  EXPECT_EQ(store_->CancelTasks("j", bad_state, 9000).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(States(Job("j")), (std::vector<v1::TaskState>{v1::QUEUED, v1::QUEUED, v1::QUEUED}));
  EXPECT_EQ(store_->CancelTasks("nope", bad_index, 9000).status().code(), Code::kNotFound);
}

TEST_P(TaskSelectStoreTest, RetryFailedRequeuesThemAndKeepsTheirAttempts) {
  CreateJob("j", {.array_count = 4});
  Assign("j", 0, "att-0", "n1");
  ReportOk("n1", Report("att-0", v1::EXITED, 0));
  Assign("j", 1, "att-1", "n1");
  ReportOk("n1", Report("att-1", v1::EXITED, 3));  // no retries: FAILED
  Assign("j", 2, "att-2", "n1");
  ReportOk("n1", Report("att-2", v1::ERRORED, 0, v1::PLATFORM_FAILURE));  // excludes n1 for task 2
  jobs::TaskSelection cancel;
  cancel.indices = {3};
  ASSERT_TRUE(store_->CancelTasks("j", cancel, 4000).ok());
  ASSERT_EQ(Job("j").state(), v1::FAILED);

  jobs::RetrySelection retry;
  retry.failed = true;
  auto r = store_->RetryTasks("j", retry, 5000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(States(*r), (std::vector<v1::TaskState>{v1::SUCCEEDED, v1::QUEUED, v1::QUEUED, v1::CANCELLED}));
  EXPECT_EQ(r->tasks(1).failure_reason(), v1::FAILURE_REASON_UNSPECIFIED);
  EXPECT_EQ(r->tasks(1).attempts_size(), 1) << "the failed attempt stays in the history";
  EXPECT_EQ(r->tasks(1).attempts(0).state(), v1::FAILED);
  EXPECT_NE(r->state(), v1::FAILED) << "the job runs again";

  // They are offered again, on any node (a fresh start), and run as new attempts.
  auto queued = store_->QueuedTasks(100);
  ASSERT_TRUE(queued.ok()) << queued.status().ToString();
  ASSERT_EQ(queued->size(), 2u);
  for (const auto& t : *queued) EXPECT_TRUE(t.excluded_nodes.empty()) << "task " << t.index;
  Assign("j", 1, "att-1b", "n2", 6000);
  ReportOk("n2", Report("att-1b", v1::EXITED, 0), 7000);
  v1::Task t1 = TaskOf("j", 1);
  EXPECT_EQ(t1.state(), v1::SUCCEEDED);
  ASSERT_EQ(t1.attempts_size(), 2);
  EXPECT_EQ(t1.attempts(1).id(), "att-1b");

  // A cancelled task is retried only when named.
  jobs::RetrySelection named;
  named.indices = {3};
  auto again = store_->RetryTasks("j", named, 8000);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->tasks(3).state(), v1::QUEUED);
}

// A user's retry is a fresh retry budget (schema v17, tasks.retry_base):
// the attempts before it stay in the history but no longer count.
TEST_P(TaskSelectStoreTest, RetryGivesTheTaskAFreshRetryBudget) {
  CreateJob("j", {.retries = 1});
  Assign("j", 0, "att-a", "n1", 1000);
  ReportOk("n1", Report("att-a", v1::EXITED, 3), 1100);  // 1 of 1 retries: queued again
  ASSERT_EQ(TaskOf("j", 0).state(), v1::QUEUED);
  Assign("j", 0, "att-b", "n1", 2000);
  ReportOk("n1", Report("att-b", v1::EXITED, 3), 2100);  // budget spent: FAILED
  ASSERT_EQ(TaskOf("j", 0).state(), v1::FAILED);

  jobs::RetrySelection retry;
  retry.failed = true;
  ASSERT_TRUE(store_->RetryTasks("j", retry, 3000).ok());
  Assign("j", 0, "att-c", "n1", 4000);
  ReportOk("n1", Report("att-c", v1::EXITED, 3), 4100);
  v1::Task t = TaskOf("j", 0);
  EXPECT_EQ(t.state(), v1::QUEUED) << "the retry's first failure has its one retry again";
  EXPECT_EQ(t.attempts_size(), 3);
  Assign("j", 0, "att-d", "n1", 5000);
  ReportOk("n1", Report("att-d", v1::EXITED, 3), 5100);
  EXPECT_EQ(TaskOf("j", 0).state(), v1::FAILED) << "and then it is spent";
  EXPECT_EQ(TaskOf("j", 0).attempts_size(), 4);
}

TEST_P(TaskSelectStoreTest, RetryRefusesUnfinishedOrSucceededTasksAndChangesNothing) {
  CreateJob("j", {.array_count = 3});
  Assign("j", 0, "att-0", "n1");
  ReportOk("n1", Report("att-0", v1::EXITED, 0));
  Assign("j", 1, "att-1", "n1");
  ReportOk("n1", Report("att-1", v1::EXITED, 3));
  jobs::RetrySelection sel;
  sel.failed = true;
  sel.indices = {0};  // succeeded: the whole retry is refused
  auto r = store_->RetryTasks("j", sel, 5000);
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("task j/0 is succeeded"), std::string::npos) << r.status().message();
  EXPECT_EQ(TaskOf("j", 1).state(), v1::FAILED) << "nothing moved";
  jobs::RetrySelection queued;
  queued.indices = {2};
  EXPECT_EQ(store_->RetryTasks("j", queued, 5000).status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(store_->RetryTasks("nope", sel, 5000).status().code(), Code::kNotFound);
}

}  // namespace
}  // namespace idlegrid::store
