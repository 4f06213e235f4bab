// The agent only dials out: it works from behind a NAT the coordinator cannot
// route into, and a node that disappears does not take its work with it.
#include <gtest/gtest.h>
#include <google/protobuf/util/json_util.h>
#include <unistd.h>

#include "common/fs.h"
#include "e2e/harness.h"
#include "e2e/netns_support.h"
#include "jobs/task_state.h"

namespace idlegrid::testing {
namespace {

TEST(Network, AgentBehindNatTheCoordinatorCannotReachRunsJobs) {
  if (::geteuid() != 0) GTEST_SKIP() << "creating network namespaces needs root";
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  NatNetwork net;
  ASSERT_TRUE(net.ok);
  Grid grid("nat");
  grid.listen_host = "10.213.0.1";
  ASSERT_TRUE(grid.StartCoordinator().ok());
  grid.agent_netns = net.home;
  Status st = grid.StartAgent(1);
  ASSERT_TRUE(st.ok()) << st.message();

  // The coordinator cannot open a connection to the agent's address.
  auto probe = RunCommand({"bash", "-c", "exec 3<>/dev/tcp/192.168.77.2/22"}, 10);
  EXPECT_NE(probe.exit_code, 0);
  EXPECT_NE(probe.err.find("No route to host"), std::string::npos) << probe.err;

  auto r = grid.Cli({"submit", grid.Manifest("natjob", {"write", "through-nat"}), "--wait", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  v1::Job job;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &job).ok());
  EXPECT_EQ(job.state(), v1::SUCCEEDED);
  ASSERT_EQ(grid.Cli({"fetch", job.id(), grid.root + "/out"}).exit_code, 0);
  EXPECT_EQ(*ReadFile(grid.root + "/out/task-0/hello.txt"), "through-nat from task 0\n");

  // What the coordinator saw was the router's public side, not the agent.
  auto nodes = grid.Cli({"nodes", "--json"});
  EXPECT_NE(nodes.out.find("10.213.0.2"), std::string::npos) << nodes.out;
  EXPECT_EQ(nodes.out.find("192.168.77.2"), std::string::npos) << nodes.out;
}

TEST(Network, KilledAgentsTaskIsRetriedOnAnotherAgent) {
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  Grid grid("nodelost");
  ASSERT_TRUE(grid.StartCoordinator({"--heartbeat-interval-ms", "300", "--heartbeat-margin", "3"}).ok());
  ASSERT_TRUE(grid.StartAgent(1).ok());
  std::string manifest = grid.Manifest("survivor", {"sleep", "2"}, "retries: 2\nidempotent: true\n");
  auto sub = grid.Cli({"submit", manifest});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  std::string id = sub.out.substr(0, sub.out.find('\n'));
  auto running = grid.WaitJob(id, [](const v1::Job& j) { return j.tasks(0).state() == v1::RUNNING; });
  ASSERT_TRUE(running.ok());
  ASSERT_EQ(running->tasks(0).state(), v1::RUNNING);
  std::string first_node = running->tasks(0).attempts(0).node_id();

  grid.StopAgent(1, SIGKILL);
  ASSERT_TRUE(grid.StartAgent(2).ok());
  auto done = grid.WaitJob(
      id, [](const v1::Job& j) { return jobs::IsSettled(j); }, 120000);
  ASSERT_TRUE(done.ok());
  ASSERT_EQ(done->state(), v1::SUCCEEDED);
  const auto& attempts = done->tasks(0).attempts();
  ASSERT_EQ(attempts.size(), 2);
  EXPECT_EQ(attempts[0].state(), v1::FAILED);
  EXPECT_EQ(attempts[0].failure_reason(), v1::NODE_LOST);
  EXPECT_EQ(attempts[1].state(), v1::SUCCEEDED);
  EXPECT_NE(attempts[1].node_id(), first_node);
}

TEST(Network, RestartedAgentRemovesItsOrphanAndTheAttemptIsFailedAndRetried) {
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  Grid grid("restart");
  // A generous margin: the node must not be declared offline; the restarted
  // agent's own heartbeats have to reveal that the attempt is gone.
  ASSERT_TRUE(grid.StartCoordinator({"--heartbeat-interval-ms", "300", "--heartbeat-margin", "40"}).ok());
  ASSERT_TRUE(grid.StartAgent(1).ok());
  std::string manifest = grid.Manifest("orphan", {"sleep", "300"}, "retries: 1\nidempotent: true\n");
  auto sub = grid.Cli({"submit", manifest});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  std::string id = sub.out.substr(0, sub.out.find('\n'));
  auto running = grid.WaitJob(id, [](const v1::Job& j) { return j.tasks(0).state() == v1::RUNNING; });
  ASSERT_TRUE(running.ok());
  std::string attempt = running->tasks(0).attempts(0).id();
  // The program inside prints "started" once it runs, so its container surely exists.
  ASSERT_TRUE(grid.WaitForLog(id, "started")) << "the container never started";

  grid.StopAgent(1, SIGKILL);  // its container lives on under conmon
  ASSERT_TRUE(grid.StartAgent(1).ok());
  auto orphan = AgentRunsContainerOf(grid, 1, attempt);
  ASSERT_TRUE(orphan.ok()) << orphan.status().message();
  EXPECT_FALSE(*orphan) << "the restarted agent left its orphan running";

  auto failed = grid.WaitJob(
      id, [](const v1::Job& j) { return j.tasks(0).attempts(0).state() == v1::FAILED; }, 60000);
  ASSERT_TRUE(failed.ok());
  const auto& first = failed->tasks(0).attempts(0);
  EXPECT_EQ(first.failure_reason(), v1::NODE_LOST);
  EXPECT_NE(first.message().find("no longer runs"), std::string::npos) << first.message();
  // Retried elsewhere (a node that lost a task is not given it again).
  ASSERT_TRUE(grid.StartAgent(2).ok());
  auto second = grid.WaitJob(id, [](const v1::Job& j) {
    return j.tasks(0).attempts_size() == 2 && j.tasks(0).attempts(1).state() == v1::RUNNING;
  });
  ASSERT_TRUE(second.ok());
  EXPECT_NE(second->tasks(0).attempts(1).node_id(), first.node_id());
  ASSERT_EQ(grid.Cli({"cancel", id}).exit_code, 0);
}

TEST(Network, UnacknowledgedAssignmentGoesElsewhereAndTheLateAckIsRefused) {
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  Grid grid("unacked");
  // Heartbeat silence would take 12 s to count; the ack timeout is 1 s.
  ASSERT_TRUE(
      grid.StartCoordinator({"--heartbeat-interval-ms", "300", "--heartbeat-margin", "40", "--ack-timeout-ms", "1000"})
          .ok());
  ASSERT_TRUE(grid.StartAgent(1).ok());
  ASSERT_TRUE(
      grid.WaitNodes([](const v1::ListNodesResponse& l) { return l.nodes_size() == 1 && l.nodes(0).schedulable(); })
          .ok());
  grid.agents[0]->Signal(SIGSTOP);  // frozen: it cannot acknowledge anything
  auto sub = grid.Cli({"submit", grid.Manifest("unacked", {"write", "once"})});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  std::string id = sub.out.substr(0, sub.out.find('\n'));
  auto timed_out = grid.WaitJob(
      id,
      [](const v1::Job& j) { return j.tasks(0).attempts_size() > 0 && j.tasks(0).attempts(0).state() == v1::FAILED; },
      30000);
  ASSERT_TRUE(timed_out.ok());
  const auto& first = timed_out->tasks(0).attempts(0);
  EXPECT_EQ(first.failure_reason(), v1::ACK_TIMEOUT);
  EXPECT_EQ(timed_out->tasks(0).state(), v1::QUEUED) << "it should wait for another node";

  ASSERT_TRUE(grid.StartAgent(2).ok());
  auto done = grid.WaitJob(id, [](const v1::Job& j) { return jobs::IsSettled(j); });
  ASSERT_TRUE(done.ok());
  ASSERT_EQ(done->state(), v1::SUCCEEDED);
  ASSERT_EQ(done->tasks(0).attempts_size(), 2);
  EXPECT_NE(done->tasks(0).attempts(1).node_id(), first.node_id());

  // The frozen agent wakes up holding the stale assignment (and its cancel):
  // its ACK is refused, it runs nothing, and the job stays as it was.
  grid.agents[0]->Signal(SIGCONT);
  std::string stale = first.id();
  auto woke = grid.WaitNodes(
      [&](const v1::ListNodesResponse& l) {
        for (const auto& n : l.nodes()) {
          if (n.id() == first.node_id() && n.advertisement().running_attempts_size() == 0 &&
              n.last_heartbeat_ms() > done->tasks(0).attempts(1).finished_at_ms()) {
            return true;
          }
        }
        return false;
      },
      30000);
  ASSERT_TRUE(woke.ok());
  auto after = grid.Cli({"status", id, "--json"});
  v1::Job job;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(after.out, &job).ok());
  EXPECT_EQ(job.state(), v1::SUCCEEDED);
  EXPECT_EQ(job.tasks(0).attempts_size(), 2);
  EXPECT_EQ(job.tasks(0).attempts(0).state(), v1::FAILED);
  auto ran = AgentRunsContainerOf(grid, 1, stale);
  ASSERT_TRUE(ran.ok()) << ran.status().message();
  EXPECT_FALSE(*ran) << "the stale assignment was run";
}

}  // namespace
}  // namespace idlegrid::testing

namespace idlegrid::testing {
namespace {

TEST(Network, CoordinatorKilledMidSweepLosesNothingAndRunsEveryTaskOnce) {
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  Grid grid("coordkill");
  ASSERT_TRUE(grid.StartCoordinator({"--heartbeat-interval-ms", "500"}).ok());
  for (int n = 1; n <= 3; ++n) ASSERT_TRUE(grid.StartAgent(n).ok());
  auto sub = grid.Cli({"submit", grid.Manifest("sweep200", {"write", "sweep"}, "array: {count: 200}\n")});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  std::string id = sub.out.substr(0, sub.out.find('\n'));
  // Kill -9 once some tasks are done and others are in flight.
  auto midway = grid.WaitJob(id, [](const v1::Job& j) {
    auto it = j.task_counts().find("succeeded");
    return it != j.task_counts().end() && it->second >= 20;
  });
  ASSERT_TRUE(midway.ok());
  grid.StopCoordinator(SIGKILL);
  // Same data dir, same address: the agents, still running their tasks,
  // reconnect by themselves and report what finished in the meantime.
  grid.listen_port = std::stoi(grid.grpc_addr.substr(grid.grpc_addr.rfind(':') + 1));
  ASSERT_TRUE(grid.StartCoordinator({"--heartbeat-interval-ms", "500"}).ok());
  auto done = grid.WaitJob(
      id, [](const v1::Job& j) { return jobs::IsSettled(j); }, 240000);
  ASSERT_TRUE(done.ok()) << done.status().message();
  ASSERT_EQ(done->tasks_size(), 200);
  int retried = 0;
  for (const auto& t : done->tasks()) {
    ASSERT_EQ(t.state(), v1::SUCCEEDED) << "task " << t.index() << ": " << t.message();
    int succeeded = 0;
    for (const auto& a : t.attempts()) succeeded += a.state() == v1::SUCCEEDED;
    EXPECT_EQ(succeeded, 1) << "task " << t.index() << " succeeded " << succeeded << " times";
    retried += t.attempts_size() > 1;
  }
  std::printf("[ info ] %d of 200 tasks needed a second attempt after the restarts\n", retried);
  ASSERT_EQ(grid.Cli({"fetch", id, grid.root + "/out"}).exit_code, 0);
}

}  // namespace
}  // namespace idlegrid::testing

namespace idlegrid::testing {
namespace {

TEST(Network, NonIdempotentTaskOnALostNodeWaitsForTheUsersDecision) {
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  Grid grid("lost");
  ASSERT_TRUE(grid.StartCoordinator({"--heartbeat-interval-ms", "300", "--heartbeat-margin", "3"}).ok());
  ASSERT_TRUE(grid.StartAgent(1).ok());
  auto submit = [&](const std::string& name) {
    auto r = grid.Cli({"submit", grid.Manifest(name, {"sleep", "2"}, "retries: 3\n")});  // not idempotent
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out.substr(0, r.out.find('\n'));
  };
  std::string keep = submit("keep");
  std::string drop = submit("drop");
  for (const auto& id : {keep, drop}) {
    ASSERT_TRUE(grid.WaitJob(id, [](const v1::Job& j) { return j.tasks(0).state() == v1::RUNNING; }).ok());
  }
  grid.StopAgent(1, SIGKILL);
  for (const auto& id : {keep, drop}) {
    auto lost = grid.WaitJob(
        id, [](const v1::Job& j) { return j.state() == v1::LOST; }, 30000);
    ASSERT_TRUE(lost.ok());
    ASSERT_EQ(lost->state(), v1::LOST) << "retries alone must not rerun a non-idempotent task";
    EXPECT_EQ(lost->tasks(0).failure_reason(), v1::NODE_LOST);
    EXPECT_EQ(lost->tasks(0).attempts_size(), 1);
  }
  auto status = grid.Cli({"status", keep});
  EXPECT_NE(status.out.find("idlegrid retry"), std::string::npos) << status.out;

  ASSERT_TRUE(grid.StartAgent(2).ok());
  ASSERT_EQ(grid.Cli({"retry", keep}).exit_code, 0);
  ASSERT_EQ(grid.Cli({"abandon", drop}).exit_code, 0);
  auto kept = grid.WaitJob(keep, [](const v1::Job& j) { return jobs::IsSettled(j) && j.state() != v1::LOST; });
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->state(), v1::SUCCEEDED);
  EXPECT_EQ(kept->tasks(0).attempts_size(), 2);
  auto dropped = grid.Cli({"status", drop, "--json"});
  EXPECT_NE(dropped.out.find("\"FAILED\""), std::string::npos) << dropped.out;
  EXPECT_EQ(grid.Cli({"retry", drop}).exit_code, 1) << "nothing left to retry";
}

}  // namespace
}  // namespace idlegrid::testing

namespace idlegrid::testing {
namespace {

TEST(Network, CutOffAgentIsFencedAndStopsItsStaleContainerWhenItReturns) {
  if (::geteuid() != 0) GTEST_SKIP() << "creating network namespaces needs root";
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  NatNetwork net;
  ASSERT_TRUE(net.ok);
  Grid grid("netcut");
  grid.listen_host = "10.213.0.1";
  ASSERT_TRUE(grid.StartCoordinator({"--heartbeat-interval-ms", "300", "--heartbeat-margin", "3"}).ok());
  grid.agent_netns = net.home;
  ASSERT_TRUE(grid.StartAgent(1).ok());
  ASSERT_TRUE(
      grid.WaitNodes([](const v1::ListNodesResponse& l) { return l.nodes_size() == 1 && l.nodes(0).schedulable(); })
          .ok());
  auto sub = grid.Cli({"submit", grid.Manifest("cut", {"sleep", "300"}, "retries: 2\nidempotent: true\n")});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  std::string id = sub.out.substr(0, sub.out.find('\n'));
  ASSERT_TRUE(grid.WaitForLog(id, "started"));
  auto running = grid.WaitJob(id, [](const v1::Job& j) { return j.tasks(0).state() == v1::RUNNING; });
  ASSERT_TRUE(running.ok());
  std::string cut_node = running->tasks(0).attempts(0).node_id();
  std::string stale = running->tasks(0).attempts(0).id();

  ASSERT_TRUE(Sh({"ip", "-n", net.router, "link", "set", net.wan_rtr, "down"}));  // the home network is cut off
  auto lost = grid.WaitJob(
      id, [](const v1::Job& j) { return j.tasks(0).attempts(0).state() == v1::FAILED; }, 30000);
  ASSERT_TRUE(lost.ok());
  EXPECT_EQ(lost->tasks(0).attempts(0).failure_reason(), v1::NODE_LOST);
  grid.agent_netns.clear();
  ASSERT_TRUE(grid.StartAgent(2).ok());  // a second node, on the coordinator's side of the cut
  auto moved = grid.WaitJob(id, [](const v1::Job& j) {
    return j.tasks(0).attempts_size() == 2 && j.tasks(0).attempts(1).state() == v1::RUNNING;
  });
  ASSERT_TRUE(moved.ok());

  ASSERT_TRUE(Sh({"ip", "-n", net.router, "link", "set", net.wan_rtr, "up"}));  // back online
  // The returning agent is told its attempt ended and stops the container.
  auto stopped = grid.WaitNodes(
      [&](const v1::ListNodesResponse& l) {
        for (const auto& n : l.nodes()) {
          if (n.id() == cut_node && n.state() == "online" && n.advertisement().running_attempts_size() == 0)
            return true;
        }
        return false;
      },
      60000);
  ASSERT_TRUE(stopped.ok());
  auto still = AgentRunsContainerOf(grid, 1, stale);
  ASSERT_TRUE(still.ok()) << still.status().message();
  EXPECT_FALSE(*still) << "the cut-off agent still runs its stale container";
  auto job = grid.WaitJob(id, [](const v1::Job&) { return true; });
  ASSERT_TRUE(job.ok());
  ASSERT_EQ(job->tasks(0).attempts_size(), 2) << "nothing may run twice";
  EXPECT_EQ(job->tasks(0).attempts(0).state(), v1::FAILED);
  EXPECT_EQ(job->tasks(0).attempts(1).state(), v1::RUNNING);
  ASSERT_EQ(grid.Cli({"cancel", id}).exit_code, 0);
}

}  // namespace
}  // namespace idlegrid::testing
