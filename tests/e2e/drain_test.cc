// Drain: a drained node takes no new work; running work finishes, or at
// the deadline is stopped and handed back; SIGTERM makes an agent drain itself.
#include <gtest/gtest.h>

#include "e2e/harness.h"
#include "jobs/task_state.h"

namespace idlegrid::testing {
namespace {

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

class Drain : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
    grid_ = std::make_unique<Grid>(::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(grid_->StartCoordinator({"--heartbeat-interval-ms", "500"}).ok());
  }
  std::string Submit(const std::string& name, const std::vector<std::string>& args) {
    auto r = grid_->Cli({"submit", grid_->Manifest(name, args)});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return FirstLine(r.out);
  }
  Result<v1::Job> WaitRunning(const std::string& id) {
    return grid_->WaitJob(id, [](const v1::Job& j) { return j.tasks(0).state() == v1::RUNNING; });
  }
  std::unique_ptr<Grid> grid_;
};

TEST_F(Drain, RunningWorkFinishesAndNoNewWorkArrivesUntilUndrained) {
  ASSERT_TRUE(grid_->StartAgent(1).ok());
  std::string running_job = Submit("short", {"sleep", "6"});
  auto running = WaitRunning(running_job);
  ASSERT_TRUE(running.ok());
  std::string node = running->tasks(0).attempts(0).node_id();
  auto d = grid_->Cli({"nodes", "drain", node});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("draining"), std::string::npos);
  // The drain must have caught the job mid-run, or nothing below tests it.
  auto mid = grid_->Cli({"status", running_job, "--json"});
  ASSERT_NE(mid.out.find("\"RUNNING\""), std::string::npos) << "the job ended before the drain: " << mid.out;

  std::string waiting_job = Submit("later", {"write", "later"});
  auto waiting = grid_->WaitJob(
      waiting_job, [](const v1::Job& j) { return j.tasks(0).message().find("draining") != std::string::npos; }, 30000);
  ASSERT_TRUE(waiting.ok());
  EXPECT_EQ(waiting->tasks(0).state(), v1::QUEUED);
  auto finished = grid_->WaitJob(running_job, [](const v1::Job& j) { return jobs::IsSettled(j); });
  ASSERT_TRUE(finished.ok());
  EXPECT_EQ(finished->state(), v1::SUCCEEDED) << "a drain without deadline lets running work finish";
  auto still = grid_->Cli({"status", waiting_job, "--json"});
  EXPECT_NE(still.out.find("\"QUEUED\""), std::string::npos) << still.out;

  ASSERT_EQ(grid_->Cli({"nodes", "undrain", node}).exit_code, 0);
  auto done = grid_->WaitJob(waiting_job, [](const v1::Job& j) { return jobs::IsSettled(j); });
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->state(), v1::SUCCEEDED);

  // The node's history names both attempts, newest first; a page of one
  // names the older page, which holds the first.
  auto history = grid_->Cli({"nodes", "attempts", node});
  ASSERT_EQ(history.exit_code, 0) << history.err;
  const std::string later = done->tasks(0).attempts(0).id(), first = finished->tasks(0).attempts(0).id();
  ASSERT_NE(history.out.find(later), std::string::npos) << history.out;
  ASSERT_NE(history.out.find(first), std::string::npos) << history.out;
  EXPECT_LT(history.out.find(later), history.out.find(first)) << history.out;
  EXPECT_NE(history.out.find("succeeded (exit 0)"), std::string::npos) << history.out;
  auto one = grid_->Cli({"nodes", "attempts", node, "--limit", "1"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out.find(first), std::string::npos) << one.out;
  const size_t at = one.out.find("--page ");
  ASSERT_NE(at, std::string::npos) << one.out;
  const std::string token = FirstLine(one.out.substr(at + 7));
  auto older = grid_->Cli({"nodes", "attempts", node, "--limit", "1", "--page", token});
  ASSERT_EQ(older.exit_code, 0) << older.err;
  EXPECT_NE(older.out.find(first), std::string::npos) << older.out;
  auto bad = grid_->Cli({"nodes", "attempts", node, "--page", "not-a-token"});
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
}

TEST_F(Drain, AtTheDeadlineRunningWorkIsHandedBackAndRunsElsewhere) {
  ASSERT_TRUE(grid_->StartAgent(1).ok());
  std::string id = Submit("long", {"sleep", "300"});
  auto running = WaitRunning(id);
  ASSERT_TRUE(running.ok());
  std::string node = running->tasks(0).attempts(0).node_id();
  ASSERT_EQ(grid_->Cli({"nodes", "drain", node, "--deadline", "1s"}).exit_code, 0);
  auto handed = grid_->WaitJob(
      id, [](const v1::Job& j) { return j.tasks(0).attempts(0).state() == v1::FAILED; }, 60000);
  ASSERT_TRUE(handed.ok());
  EXPECT_EQ(handed->tasks(0).attempts(0).failure_reason(), v1::HANDED_BACK);
  EXPECT_EQ(handed->tasks(0).state(), v1::QUEUED) << "handed back work must not count as a failure";
  ASSERT_TRUE(grid_->StartAgent(2).ok());
  auto moved = grid_->WaitJob(id, [](const v1::Job& j) {
    return j.tasks(0).attempts_size() == 2 && j.tasks(0).attempts(1).state() == v1::RUNNING;
  });
  ASSERT_TRUE(moved.ok());
  EXPECT_NE(moved->tasks(0).attempts(1).node_id(), node);
  ASSERT_EQ(grid_->Cli({"cancel", id}).exit_code, 0);
}

TEST_F(Drain, SigtermMakesTheAgentHandBackAndExitCleanly) {
  ASSERT_TRUE(grid_->StartAgent(1, {"--shutdown-grace", "1"}).ok());
  std::string id = Submit("interrupted", {"sleep", "300"});
  auto running = WaitRunning(id);
  ASSERT_TRUE(running.ok());
  std::string node = running->tasks(0).attempts(0).node_id();
  ASSERT_TRUE(grid_->WaitForLog(id, "started"));
  grid_->agents[0]->Signal(SIGTERM);
  EXPECT_EQ(grid_->agents[0]->Wait(), 0) << "the agent should exit cleanly after handing back";
  auto handed = grid_->WaitJob(id, [](const v1::Job& j) { return j.tasks(0).attempts(0).state() == v1::FAILED; });
  ASSERT_TRUE(handed.ok());
  EXPECT_EQ(handed->tasks(0).attempts(0).failure_reason(), v1::HANDED_BACK);
  auto left = AgentRunsContainerOf(*grid_, 1, handed->tasks(0).attempts(0).id());
  ASSERT_TRUE(left.ok()) << left.status().message();
  EXPECT_FALSE(*left) << "the stopped agent left its container";
  ASSERT_TRUE(grid_->StartAgent(2).ok());
  auto moved = grid_->WaitJob(id, [](const v1::Job& j) {
    return j.tasks(0).attempts_size() == 2 && j.tasks(0).attempts(1).state() == v1::RUNNING;
  });
  ASSERT_TRUE(moved.ok());
  EXPECT_NE(moved->tasks(0).attempts(1).node_id(), node);
  ASSERT_EQ(grid_->Cli({"cancel", id}).exit_code, 0);
}

}  // namespace
}  // namespace idlegrid::testing
