// Cancelling some tasks of a running item array and retrying failed ones,
// through the CLI against a real coordinator and agent: the selected tasks
// (and only they) end cancelled while the others run on and succeed; failed
// tasks run again as new attempts on `retry --failed`, their first attempts
// kept. Also what `status` and `--wait` print when not on a terminal.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "e2e/harness.h"

namespace idlegrid::testing {
namespace {

class TaskControlE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
    grid_ = std::make_unique<Grid>(::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(grid_->StartCoordinator().ok());
    Status started = grid_->StartAgent(1);  // two cores: two tasks at a time
    ASSERT_TRUE(started.ok()) << started.message();
  }

  // Settled: every task ended and no attempt still holds the node.
  static bool Settled(const v1::Job& job) {
    if (job.tasks_size() == 0) return false;
    for (const auto& t : job.tasks()) {
      if (t.state() != v1::SUCCEEDED && t.state() != v1::FAILED && t.state() != v1::CANCELLED) return false;
      for (const auto& a : t.attempts()) {
        if (a.state() != v1::SUCCEEDED && a.state() != v1::FAILED && a.state() != v1::CANCELLED) return false;
      }
    }
    return true;
  }

  std::unique_ptr<Grid> grid_;
};

TEST_F(TaskControlE2E, CancelTasksByIndexWhileTheOthersRunAndSucceed) {
  // Tasks 3 and 7-9 sleep for five minutes; the others end at once.
  std::string items;
  for (int i = 0; i < 10; ++i) items += (i == 3 || i >= 7) ? "{\"s\": 300}\n" : "{\"s\": 0}\n";
  grid_->WriteFile("sleeps.jsonl", items);
  auto submitted =
      grid_->Cli({"submit", grid_->Manifest("sweep", {"sleep", "{{.s}}"}, "array: {items: sleeps.jsonl}\n")});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string id = Trim(submitted.out);

  auto running =
      grid_->WaitJob(id, [](const v1::Job& j) { return j.tasks_size() == 10 && j.tasks(3).state() == v1::RUNNING; });
  ASSERT_TRUE(running.ok()) << running.status().ToString();
  ASSERT_EQ(running->tasks(3).state(), v1::RUNNING) << "task 3 never ran";

  auto bad = grid_->Cli({"cancel", id, "--tasks", "3,7-"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--tasks: task list: '7-' at character 3: a range needs both ends"), std::string::npos)
      << bad.err;
  auto unknown = grid_->Cli({"cancel", id, "--tasks", "12"});
  EXPECT_EQ(unknown.exit_code, 2) << unknown.err;
  EXPECT_NE(unknown.err.find("has no task 12"), std::string::npos) << unknown.err;

  auto cancelled = grid_->Cli({"cancel", id, "--tasks", "3,7-9"});
  ASSERT_EQ(cancelled.exit_code, 0) << cancelled.err;

  // `status --wait` off a terminal: plain progress lines on stderr, no bar.
  auto waited = grid_->Cli({"status", id, "--wait"});
  EXPECT_EQ(waited.exit_code, 1) << "a job with cancelled tasks did not succeed: " << waited.err;
  EXPECT_NE(waited.err.find("job " + id + ": "), std::string::npos) << waited.err;
  EXPECT_EQ(waited.err.find('\r'), std::string::npos) << "no bar when stderr is not a terminal";
  EXPECT_NE(waited.out.find("progress: 10/10 tasks ended (100%): 6 succeeded, 4 cancelled"), std::string::npos)
      << waited.out;

  auto done = grid_->WaitJob(id, Settled);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  for (int i = 0; i < 10; ++i) {
    const v1::Task& t = done->tasks(i);
    const bool selected = i == 3 || i >= 7;
    EXPECT_EQ(t.state(), selected ? v1::CANCELLED : v1::SUCCEEDED) << "task " << i;
    if (selected) EXPECT_EQ(t.failure_reason(), v1::USER_CANCEL) << "task " << i;
  }
  ASSERT_GE(done->tasks(3).attempts_size(), 1);
  EXPECT_EQ(done->tasks(3).attempts(0).state(), v1::CANCELLED) << "its container was stopped";

  auto json = grid_->Cli({"status", id, "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json.out.find("progress:"), std::string::npos) << "--json prints the job alone";
  EXPECT_EQ(ParseJson<v1::Job>(json.out).task_counts().at("cancelled"), 4u);
}

TEST_F(TaskControlE2E, RetryFailedRunsTheFailedTasksAgainKeepingTheirAttempts) {
  // Items 1 and 3 exit 3: those tasks fail (no retries).
  grid_->WriteFile("codes.jsonl", "{\"c\": 0}\n{\"c\": 3}\n{\"c\": 0}\n{\"c\": 3}\n");
  auto first = grid_->Cli(
      {"submit", grid_->Manifest("codes", {"exit", "{{.c}}"}, "array: {items: codes.jsonl}\n"), "--wait", "--json"});
  ASSERT_EQ(first.exit_code, 1) << first.out << first.err;
  EXPECT_EQ(first.err.find("/4 "), std::string::npos) << "no progress with --json: " << first.err;
  const v1::Job failed = ParseJson<v1::Job>(first.out);
  ASSERT_EQ(failed.state(), v1::FAILED);
  const std::string id = failed.id();

  auto succeeded_one = grid_->Cli({"retry", id, "--tasks", "0"});
  EXPECT_NE(succeeded_one.exit_code, 0);
  EXPECT_NE(succeeded_one.err.find("task " + id + "/0 is succeeded: only failed or cancelled tasks are retried"),
            std::string::npos)
      << succeeded_one.err;

  auto retried = grid_->Cli({"retry", id, "--failed", "--json"});
  ASSERT_EQ(retried.exit_code, 0) << retried.err;
  const v1::Job requeued = ParseJson<v1::Job>(retried.out);
  EXPECT_NE(requeued.state(), v1::FAILED) << retried.out;

  auto done = grid_->WaitJob(id, [](const v1::Job& j) {
    return Settled(j) && j.tasks(1).attempts_size() == 2 && j.tasks(3).attempts_size() == 2;
  });
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  for (int i : {1, 3}) {
    const v1::Task& t = done->tasks(i);
    ASSERT_EQ(t.attempts_size(), 2) << "task " << i << " ran again";
    EXPECT_EQ(t.attempts(0).exit_code(), 3) << "the first attempt is kept";
    EXPECT_EQ(t.attempts(1).exit_code(), 3) << "the same item fails the same way";
    EXPECT_NE(t.attempts(0).id(), t.attempts(1).id());
    EXPECT_EQ(t.state(), v1::FAILED);
  }
  for (int i : {0, 2}) {
    EXPECT_EQ(done->tasks(i).attempts_size(), 1) << "task " << i << " succeeded and was left alone";
    EXPECT_EQ(done->tasks(i).state(), v1::SUCCEEDED);
  }
}

}  // namespace
}  // namespace idlegrid::testing
