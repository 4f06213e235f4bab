// Several coordinators on one PostgreSQL database (issue 4): agents and
// clients may talk to any of them; each places work on the agents connected
// to it, the database keeps every task granted once.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <set>

#include "common/random.h"
#include "e2e/harness.h"
#include "jobs/task_state.h"

namespace idlegrid::testing {
namespace {

// A fresh database on the run's throwaway cluster (scripts/test.sh), or on a
// private one this test starts (stopped when the test process exits).
Result<std::string> FreshDatabase(const std::string& dir) {
  std::string server;
  if (const char* url = std::getenv("IDLEGRID_TEST_PG_URL"); url && *url) {
    server = url;
  } else {
    auto started = RunCommand(
        {std::string(IDLEGRID_SOURCE_DIR) + "/scripts/pg-test-cluster.sh", "start", dir, std::to_string(::getpid())});
    if (started.exit_code != 0) {
      return Status::FailedPrecondition("cannot start PostgreSQL (run scripts/install-deps.sh): " + started.err);
    }
    server = Trim(started.out);
  }
  std::string db = "e2e_" + RandomHex(6);
  auto created = RunCommand({"psql", "-X", "-q", server, "-c", "CREATE DATABASE " + db});
  if (created.exit_code != 0) return Status::Internal("CREATE DATABASE: " + created.err);
  auto slash = server.find("/postgres?");
  if (slash == std::string::npos) return Status::Internal("unexpected server URL " + server);
  return server.substr(0, slash) + "/" + db + server.substr(slash + 9);
}

TEST(MultiCoordinator, TwoCoordinatorsOnOnePostgresShareTheWorkAndAnyOneAnswersClients) {
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  Grid grid("multicoord");
  // Outside the grid's directory: the cluster outlives the Grid until this process exits.
  char pg_dir[] = "/tmp/igpg-e2e-XXXXXX";
  ASSERT_NE(::mkdtemp(pg_dir), nullptr);
  auto url = FreshDatabase(pg_dir);
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  grid.shared_dir = grid.root + "/shared";
  const std::vector<std::string> common = {"--db", *url, "--heartbeat-interval-ms", "500"};
  ASSERT_TRUE(grid.StartCoordinator(common).ok());

  // The second coordinator: its own data dir and port, the same database and shared dir.
  std::vector<std::string> argv = {grid.binary(),  "coordinator",  "--data-dir",    grid.root + "/coordinator2",
                                   "--listen",     "127.0.0.1:0",  "--http-listen", "127.0.0.1:0",
                                   "--shared-dir", grid.shared_dir};
  argv.insert(argv.end(), common.begin(), common.end());
  auto second = Process::Start(argv, grid.root + "/coordinator2.err");
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

}  // namespace
}  // namespace idlegrid::testing
