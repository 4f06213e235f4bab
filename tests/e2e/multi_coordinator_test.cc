// Several coordinators on one PostgreSQL database (issue 4): agents and
// clients may talk to any of them; each places work on the agents connected
// to it, the database keeps every task granted once.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <set>
#include <sstream>

#include "common/random.h"
#include "e2e/harness.h"
#include "e2e/pg_support.h"
#include "jobs/task_state.h"

namespace idlegrid::testing {
namespace {

// A fresh database for `grid` (on a cluster outside the grid's directory, so
// it outlives the Grid until this process exits) and the directory its
// coordinators share; the database's URL.
Result<std::string> SharedGrid(Grid& grid) {
  char pg_dir[] = "/tmp/igpg-e2e-XXXXXX";
  if (::mkdtemp(pg_dir) == nullptr) return Status::Internal("mkdtemp for the PostgreSQL cluster");
  grid.shared_dir = grid.root + "/shared";
  return FreshDatabase(pg_dir);
}

// A second coordinator beside grid's: its own data directory and port, the
// same database and shared directory (`common` carries --db); null if it
// could not be started.
std::unique_ptr<Process> StartSecondCoordinator(Grid& grid, const std::vector<std::string>& common) {
  std::vector<std::string> argv = {grid.binary(),  "coordinator",  "--data-dir",    grid.root + "/coordinator2",
                                   "--listen",     "127.0.0.1:0",  "--http-listen", "127.0.0.1:0",
                                   "--shared-dir", grid.shared_dir};
  argv.insert(argv.end(), common.begin(), common.end());
  return Process::Start(argv, grid.root + "/coordinator2.err");
}

TEST(MultiCoordinator, TwoCoordinatorsOnOnePostgresShareTheWorkAndAnyOneAnswersClients) {
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  Grid grid("multicoord");
  auto url = SharedGrid(grid);
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  const std::vector<std::string> common = {"--db", *url, "--heartbeat-interval-ms", "500"};
  ASSERT_TRUE(grid.StartCoordinator(common).ok());

  auto second = StartSecondCoordinator(grid, common);
  ASSERT_NE(second, nullptr);
  std::string ready = second->WaitForLine("ready ", 30000);
  ASSERT_FALSE(ready.empty()) << "second coordinator did not start";
  std::string second_addr = ValueAfter(ready, "grpc");
  EXPECT_EQ(ValueAfter(ready, "ca"), grid.ca_hash) << "the coordinators must share one CA";

  // One agent dials each coordinator.
  ASSERT_TRUE(grid.StartAgent(1).ok());
  std::string first_addr = grid.grpc_addr;
  grid.grpc_addr = second_addr;
  ASSERT_TRUE(grid.StartAgent(2).ok());
  grid.grpc_addr = first_addr;

  // Submitted to the first coordinator, followed through the second.
  std::string manifest = grid.Manifest("spread", {"sleep", "1"}, "array:\n  count: 6\n");
  auto sub = grid.Cli({"submit", manifest});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  std::string id = Trim(sub.out);
  auto via_second = grid.Cli({"status", id, "--wait", "--json", "--addr", second_addr, "--ca-file",
                              grid.shared_dir + "/pki/ca.crt", "--token", grid.admin_token},
                             /*with_config=*/false);
  ASSERT_EQ(via_second.exit_code, 0) << via_second.err << via_second.out;
  auto job = grid.WaitJob(id, [](const v1::Job& j) { return jobs::IsSettled(j); });
  ASSERT_TRUE(job.ok());
  ASSERT_EQ(job->state(), v1::SUCCEEDED) << job->DebugString();
  std::set<std::string> nodes;
  for (const auto& t : job->tasks()) {
    ASSERT_EQ(t.attempts_size(), 1) << "a task was granted twice: " << t.DebugString();
    nodes.insert(t.attempts(0).node_id());
  }
  // Each coordinator placed work on its own agent.
  EXPECT_EQ(nodes.size(), 2u) << job->DebugString();
  second->Signal(SIGTERM);
  second->Wait();
}

// Issue 31: agents given both coordinators' addresses (one gRPC target,
// common/coordinator_target.h) move to the live one when theirs is killed
// mid-sweep; the database's fencing keeps every task granted once.
TEST(MultiCoordinator, AgentsGivenBothCoordinatorsFailOverWhenOneIsKilledMidSweep) {
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  Grid grid("failover");
  auto url = SharedGrid(grid);
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  // 1 s heartbeats: this tests failover, not tight liveness on a loaded host.
  const std::vector<std::string> common = {"--db", *url, "--heartbeat-interval-ms", "1000"};
  ASSERT_TRUE(grid.StartCoordinator(common).ok());
  // A coordinator on the same database without the shared directory would
  // serve another CA than the one its agents pin: refused at start.
  auto stray = RunCommand({grid.binary(), "coordinator", "--data-dir", grid.root + "/stray", "--listen", "127.0.0.1:0",
                           "--http-listen", "127.0.0.1:0", "--db", *url},
                          60);
  EXPECT_EQ(stray.exit_code, 1) << stray.out << stray.err;
  EXPECT_NE(stray.err.find("must share one --shared-dir"), std::string::npos) << stray.err;
  auto second = StartSecondCoordinator(grid, common);
  ASSERT_NE(second, nullptr);
  const std::string ready = second->WaitForLine("ready ", 30000);
  ASSERT_FALSE(ready.empty()) << "second coordinator did not start";
  const std::string first_addr = grid.grpc_addr;
  const std::string second_addr = ValueAfter(ready, "grpc");

  // Every agent is given both; each connects to the first that answers.
  grid.grpc_addr = first_addr + "," + second_addr;
  for (int n = 1; n <= 3; ++n) ASSERT_TRUE(grid.StartAgent(n).ok()) << "agent " << n;
  grid.grpc_addr = first_addr;

  constexpr int kTasks = 300;
  std::ostringstream y;
  y << "apiVersion: idlegrid/v1\nname: failover\nimage: igtest@" << grid.PushTestImage()
    << "\ncommand: [\"/sim\"]\nargs: [\"write\", \"failover\"]\nresources:\n  cpu: 250m\n  memory: 128Mi\n"
    << "  pids: 32\noutput: /out\nretries: 3\nidempotent: true\narray: {count: " << kTasks << "}\n";
  auto sub = grid.Cli({"submit", grid.WriteFile("failover.yaml", y.str())});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  const std::string id = Trim(sub.out);
  auto midway = grid.WaitJob(id, [](const v1::Job& j) {
    int done = 0;
    for (const auto& t : j.tasks()) done += t.state() == v1::SUCCEEDED;
    return done >= kTasks / 5;
  });
  ASSERT_TRUE(midway.ok()) << midway.status().ToString();
  ASSERT_FALSE(jobs::IsSettled(*midway)) << "the sweep ended before the kill: nothing was tested";
  grid.StopCoordinator(SIGKILL);

  // Followed to its end through the survivor.
  auto via_second = grid.Cli({"status", id, "--wait", "--json", "--addr", second_addr, "--ca-file",
                              grid.shared_dir + "/pki/ca.crt", "--token", grid.admin_token},
                             /*with_config=*/false);
  ASSERT_EQ(via_second.exit_code, 0) << via_second.err;
  const v1::Job job = ParseJson<v1::Job>(via_second.out);
  ASSERT_EQ(job.tasks_size(), kTasks);
  EXPECT_EQ(job.state(), v1::SUCCEEDED);
  for (const auto& t : job.tasks()) {
    int succeeded = 0;
    for (const auto& a : t.attempts()) {
      succeeded += a.state() == v1::SUCCEEDED;
      EXPECT_NE(a.failure_reason(), v1::NODE_LOST)
          << "task " << t.index() << " attempt " << a.id() << ": " << a.message();
    }
    EXPECT_EQ(succeeded, 1) << "task " << t.index() << " succeeded " << succeeded << " times";
  }
  // All three agents are still the grid's, now through the survivor.
  auto nodes = grid.Cli({"nodes", "--json", "--addr", second_addr, "--ca-file", grid.shared_dir + "/pki/ca.crt",
                         "--token", grid.admin_token},
                        /*with_config=*/false);
  ASSERT_EQ(nodes.exit_code, 0) << nodes.err;
  const auto listed = ParseJson<v1::ListNodesResponse>(nodes.out);
  int online = 0;
  for (const auto& n : listed.nodes()) online += n.state() == "online" || n.state() == "late";
  EXPECT_EQ(online, 3) << nodes.out;
  second->Signal(SIGTERM);
  second->Wait();
}

}  // namespace
}  // namespace idlegrid::testing
