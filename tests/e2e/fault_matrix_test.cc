// The fault matrix (issue 32, docs/reliability.md): a real grid of a
// coordinator and two agents, all the failpoint build (idlegrid-faults), runs a
// sweep while one process is killed (SIGKILL, from inside, at exactly the named
// step) at each failpoint of the attempt protocol in turn; the process is
// restarted, the sweep must end with every task succeeded exactly once, and
// the history checker (history_check_support.h) must find nothing: no task
// lost or taken twice, no attempt live twice, no capacity held twice.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/random.h"
#include "e2e/harness.h"
#include "e2e/history_check_support.h"
#include "jobs/task_state.h"

namespace idlegrid::testing {
namespace {

// Where, and on which hit, a process dies. agent 0: the coordinator.
struct Fault {
  const char* failpoint;
  int agent;
  int hit;
};

// Every step of an attempt's life, on the side that takes it: the
// coordinator's commit of a placement and of each report (before it, the
// report is lost and resent; after it, the reply is lost), and the agent's
// acceptance, container start, upload and final report.
const Fault kFaults[] = {
    {"coordinator.dispatch.after_commit", 0, 2},
    {"coordinator.report.ACCEPTED.after_commit", 0, 3},
    {"coordinator.report.STARTED.before_commit", 0, 3},
    {"coordinator.report.EXITED.before_commit", 0, 2},
    {"coordinator.report.EXITED.after_commit", 0, 2},
    {"agent.attempt.before_accept", 1, 2},
    {"agent.attempt.after_start", 1, 2},
    {"agent.attempt.before_upload", 2, 2},
    {"agent.attempt.before_report", 2, 2},
};

const std::vector<std::string> kCoordinatorFlags = {"--heartbeat-interval-ms", "300", "--heartbeat-margin", "3",
                                                    "--ack-timeout-ms",        "3000"};

class FaultMatrix : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
    grid_ = std::make_unique<Grid>("FaultMatrix");
    grid_->UseBinary(IDLEGRID_FAULTS_BINARY);
    ASSERT_TRUE(grid_->StartCoordinator(kCoordinatorFlags).ok());
    // Restarts keep the address the agents dial.
    grid_->listen_port = std::stoi(grid_->grpc_addr.substr(grid_->grpc_addr.rfind(':') + 1));
    for (int n : {1, 2}) ASSERT_TRUE(grid_->StartAgent(n).ok());
  }

  // Restarts the process `f` names with its failpoint armed (or none).
  void Restart(const Fault& f, const std::string& failpoints) {
    if (f.agent == 0) {
      if (grid_->coordinator && grid_->coordinator->running()) grid_->StopCoordinator(SIGTERM);
      grid_->coordinator_failpoints = failpoints;
      Status st = grid_->StartCoordinator(kCoordinatorFlags);
      ASSERT_TRUE(st.ok()) << st.message();
    } else {
      grid_->StopAgent(f.agent, SIGTERM);
      grid_->agent_failpoints[f.agent] = failpoints;
      Status st = grid_->StartAgent(f.agent);
      ASSERT_TRUE(st.ok()) << st.message();
    }
  }
  Process* ProcessOf(const Fault& f) {
    return f.agent == 0 ? grid_->coordinator.get() : grid_->agents[size_t(f.agent - 1)].get();
  }

  std::unique_ptr<Grid> grid_;
};

TEST_F(FaultMatrix, AKillAtEveryProtocolStepLosesNothingAndRunsNothingTwice) {
  for (size_t i = 0; i < std::size(kFaults); ++i) {
    const Fault& f = kFaults[i];
    SCOPED_TRACE(f.failpoint);
    grid_->SetFailpointGate(false);
    ASSERT_NO_FATAL_FAILURE(Restart(f, std::string(f.failpoint) + "=crash@" + std::to_string(f.hit)));
    // Start-up work (a reconnecting node's checks) passes the same steps: the
    // hits that count are the sweep's, once both nodes take work again.
    auto nodes = grid_->WaitNodes([](const v1::ListNodesResponse& list) {
      int ready = 0;
      for (const auto& node : list.nodes()) ready += node.schedulable() && node.state() == "online";
      return ready == 2;
    });
    ASSERT_TRUE(nodes.ok()) << nodes.status().message();
    grid_->SetFailpointGate(true);
    const std::string manifest = grid_->Manifest("fault" + std::to_string(i), {"write", "fault"},
                                                 "array: {count: 6}\nretries: 3\nidempotent: true\n");
    auto submitted = grid_->Cli({"submit", manifest, "--json"});
    ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
    const std::string job_id = ParseJson<v1::Job>(submitted.out).id();

    // The armed process dies at the failpoint: a kill -9 at exactly that step.
    Process* armed = ProcessOf(f);
    ASSERT_TRUE(armed->WaitExit(120000)) << f.failpoint << " was never reached";
    EXPECT_EQ(armed->Wait(), 128 + SIGKILL);
    ASSERT_NO_FATAL_FAILURE(Restart(f, ""));

    auto done = grid_->WaitJob(
        job_id, [](const v1::Job& j) { return jobs::IsSettled(j); }, 180000);
    ASSERT_TRUE(done.ok()) << done.status().ToString();
    EXPECT_EQ(done->state(), v1::SUCCEEDED) << done->DebugString();
    const std::map<std::string, double> cpus = {{grid_->node_ids[0], 2}, {grid_->node_ids[1], 2}};
    const auto now =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    for (const std::string& v : CheckHistory({*done}, cpus, now)) ADD_FAILURE() << f.failpoint << ": " << v;
  }
}

// "/readyz" answers 200 (`ready`) or not; polled: the coordinator announces
// no event when its store comes or goes.
bool WaitReady(Grid& grid, bool want, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if ((grid.Curl("/readyz", {"--max-time", "5"}).exit_code == 0) == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// WaitJob, again while the call fails as Unavailable: a call that meets the
// database restarting may fail so (clients retry Unavailable); what must hold
// is the sweep's end, not every call's success.
Result<v1::Job> WaitThroughRestart(Grid& grid, const std::string& job_id,
                                   const std::function<bool(const v1::Job&)>& pred, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    Result<v1::Job> job = grid.WaitJob(job_id, pred, int(std::max<int64_t>(left, 1)));
    if (job.ok() || job.status().code() != Code::kUnavailable || left <= 0) return job;
    std::fprintf(stderr, "[fault] %s; calling again\n", job.status().ToString().c_str());
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

// The coordinator's PostgreSQL crashes mid-sweep and comes back at once
// (crash recovery, every connection cut), then goes away for a while (an
// outage, as a partition between them looks from the coordinator) and comes
// back: the pool reconnects (store/postgres/pg_pool.cc), /readyz says so, and
// the sweep ends with nothing lost.
TEST(PostgresFaults, ACrashAndAnOutageMidSweepLoseNothing) {
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  Grid grid("PgFaults");
  // A private cluster: the run's shared one must not be restarted under other tests.
  const std::string pg_dir = "/tmp/igpg-fault-" + RandomHex(6);
  const std::string script = std::string(IDLEGRID_SOURCE_DIR) + "/scripts/pg-test-cluster.sh";
  auto started = RunCommand({script, "start", pg_dir, std::to_string(::getpid())});
  ASSERT_EQ(started.exit_code, 0) << "cannot start PostgreSQL (run scripts/install-deps.sh): " << started.err;
  struct Cleanup {
    std::string script, dir;
    ~Cleanup() { RunCommand({script, "stop", dir}); }
  } cleanup{script, pg_dir};
  ASSERT_TRUE(grid.StartCoordinator({"--db", Trim(started.out), "--heartbeat-interval-ms", "300", "--heartbeat-margin",
                                     "10", "--ack-timeout-ms", "3000"})
                  .ok());
  for (int n : {1, 2}) ASSERT_TRUE(grid.StartAgent(n).ok());
  const std::string manifest =
      grid.Manifest("pgfault", {"write", "pg"}, "array: {count: 24}\nretries: 3\nidempotent: true\n");
  auto submitted = grid.Cli({"submit", manifest, "--json"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  const std::string job_id = ParseJson<v1::Job>(submitted.out).id();
  const auto succeeded_at_least = [](int n) {
    return [n](const v1::Job& j) {
      int done = 0;
      for (const auto& t : j.tasks()) done += t.state() == v1::SUCCEEDED;
      return done >= n || jobs::IsSettled(j);
    };
  };

  // 1. A crash and an immediate restart.
  ASSERT_TRUE(grid.WaitJob(job_id, succeeded_at_least(3)).ok());
  ASSERT_EQ(RunCommand({script, "crash", pg_dir}).exit_code, 0);
  ASSERT_EQ(RunCommand({script, "resume", pg_dir}).exit_code, 0);
  // 2. An outage the coordinator notices before the database returns.
  ASSERT_TRUE(WaitThroughRestart(grid, job_id, succeeded_at_least(10), 120000).ok());
  ASSERT_EQ(RunCommand({script, "crash", pg_dir}).exit_code, 0);
  EXPECT_TRUE(WaitReady(grid, false, 30000)) << "/readyz still ready with the database down";
  ASSERT_EQ(RunCommand({script, "resume", pg_dir}).exit_code, 0);
  EXPECT_TRUE(WaitReady(grid, true, 60000)) << "/readyz never ready again after the database returned";

  auto done = WaitThroughRestart(
      grid, job_id, [](const v1::Job& j) { return jobs::IsSettled(j); }, 240000);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->state(), v1::SUCCEEDED) << done->DebugString();
  const std::map<std::string, double> cpus = {{grid.node_ids[0], 2}, {grid.node_ids[1], 2}};
  const auto now =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  for (const std::string& v : CheckHistory({*done}, cpus, now)) ADD_FAILURE() << v;
}

}  // namespace
}  // namespace idlegrid::testing
