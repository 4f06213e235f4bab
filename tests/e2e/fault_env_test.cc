// Faults of the machines and links a grid of strangers' computers runs on
// (issue 32, docs/reliability.md), each staged for real on a grid under a
// sweep and checked by the history checker (history_check_support.h): a home
// link with delay, loss and a thin uplink (tc netem in network namespaces),
// full disks (small tmpfs mounts) under an agent's scratch, the coordinator's
// artifacts and its database, and wall clocks that are minutes off or jump
// (libfaketime). Each must end with nothing lost, nothing run twice, and a
// clear reason wherever work failed.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/fs.h"
#include "e2e/fault_env_support.h"
#include "e2e/harness.h"
#include "e2e/history_check_support.h"
#include "e2e/netns_support.h"
#include "jobs/task_state.h"

namespace idlegrid::testing {
namespace {

// Submits an idempotent sweep of `count` tasks writing `text` (after `nap_ms`);
// returns its id ("" after a test failure).
// `pad_mib` > 0: each task also writes that many MiB (pad.bin).
std::string SubmitSweep(Grid& grid, const std::string& name, int count, const std::string& text, int nap_ms = 0,
                        int pad_mib = 0) {
  std::vector<std::string> args = {"write", text, std::to_string(nap_ms)};
  if (pad_mib > 0) args.push_back(std::to_string(pad_mib));
  const std::string manifest =
      grid.Manifest(name, args, "array: {count: " + std::to_string(count) + "}\nretries: 4\nidempotent: true\n");
  auto submitted = grid.Cli({"submit", manifest, "--json"});
  EXPECT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  return submitted.exit_code == 0 ? ParseJson<v1::Job>(submitted.out).id() : "";
}

// The sweep ended SUCCEEDED with a sound history, and every task's output is
// what it wrote (fetched through the coordinator).
void ExpectSweepWhole(Grid& grid, const v1::Job& job, const std::string& text, int agents) {
  EXPECT_EQ(job.state(), v1::SUCCEEDED) << job.DebugString();
  ExpectSoundHistory(job, std::vector<std::string>(grid.node_ids.begin(), grid.node_ids.begin() + agents));
  const std::string out = grid.root + "/out-" + job.id();
  auto fetched = grid.Cli({"fetch", job.id(), out});
  ASSERT_EQ(fetched.exit_code, 0) << fetched.out << fetched.err;
  for (const auto& t : job.tasks()) {
    const std::string idx = std::to_string(t.index());
    auto hello = ReadFile(out + "/task-" + idx + "/hello.txt");
    ASSERT_TRUE(hello.ok()) << "task " << idx << ": " << hello.status().message();
    EXPECT_EQ(*hello, text + " from task " + idx + "\n");
  }
}

// Attempts that failed for `reason`, as "task N: message" lines.
std::vector<std::string> FailedFor(const v1::Job& job, v1::FailureReason reason) {
  std::vector<std::string> out;
  for (const auto& t : job.tasks()) {
    for (const auto& a : t.attempts()) {
      if (a.state() == v1::FAILED && a.failure_reason() == reason) {
        out.push_back("task " + std::to_string(t.index()) + ": " + a.message());
      }
    }
  }
  return out;
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

// Polls the files (logs another process writes; nothing announces a line)
// until one holds `text`.
bool WaitForText(const std::vector<std::string>& files, const std::string& text, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    for (const auto& f : files) {
      auto content = ReadFile(f);
      if (content.ok() && content->find(text) != std::string::npos) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

std::string NeedsRootAndPodman() {
  if (::geteuid() != 0) return "staging network and disk faults needs root";
  return PodmanMissing();
}

// A home link: 200 ms each way, 3 % of packets lost both ways, 1 Mbit/s up
// and 20 Mbit/s down, between a home network behind NAT and the
// coordinator. Loss is iptables' statistic match on the router's forwarding
// path; rate and delay are tc netem where the kernel has it, else tbf for
// the rate and a relay that holds every byte 200 ms for the delay
// (netns_support.h). The agent behind it runs a sweep with the
// coordinator's default heartbeat settings: no node is falsely lost, no
// assignment times out, and every output arrives whole.
TEST(FaultEnv, AHomeLinkWithDelayLossAndAThinUplinkLosesNothing) {
  if (std::string why = NeedsRootAndPodman(); !why.empty()) GTEST_SKIP() << why;
  NatNetwork net;
  ASSERT_TRUE(net.ok);
  ASSERT_TRUE(Sh({"ip", "netns", "exec", net.router, "iptables", "-A", "FORWARD", "-m", "statistic", "--mode", "random",
                  "--probability", "0.03", "-j", "DROP"}));
  const std::string no_netem = NetemMissing();
  if (no_netem.empty()) {
    ASSERT_TRUE(Sh({"ip", "netns", "exec", net.home, "tc", "qdisc", "add", "dev", net.lan_home, "root", "netem",
                    "delay", "200ms", "20ms", "rate", "1mbit"}));
    ASSERT_TRUE(Sh({"ip", "netns", "exec", net.router, "tc", "qdisc", "add", "dev", net.lan_rtr, "root", "netem",
                    "delay", "200ms", "20ms", "rate", "20mbit"}));
  } else {
    std::printf("[ info ] %s: tbf for the rate, a relay for the delay\n", no_netem.c_str());
    ASSERT_TRUE(Sh({"ip", "netns", "exec", net.home, "tc", "qdisc", "add", "dev", net.lan_home, "root", "tbf", "rate",
                    "1mbit", "burst", "32kbit", "latency", "400ms"}));
    ASSERT_TRUE(Sh({"ip", "netns", "exec", net.router, "tc", "qdisc", "add", "dev", net.lan_rtr, "root", "tbf", "rate",
                    "20mbit", "burst", "64kbit", "latency", "400ms"}));
  }
  Grid grid("homelink");
  grid.listen_host = "10.213.0.1";
  ASSERT_TRUE(grid.StartCoordinator().ok());
  std::unique_ptr<DelayRelay> relay;
  if (!no_netem.empty()) {
    const int port = std::stoi(grid.grpc_addr.substr(grid.grpc_addr.rfind(':') + 1));
    relay = std::make_unique<DelayRelay>("10.213.0.1", "10.213.0.1", port, 200);
    ASSERT_TRUE(relay->status().ok()) << relay->status().message();
    grid.grpc_addr = "10.213.0.1:" + std::to_string(relay->port());  // what the agent dials
  }
  grid.agent_netns = net.home;
  Status st = grid.StartAgent(1);
  ASSERT_TRUE(st.ok()) << st.message();

  const std::string id = SubmitSweep(grid, "homelink", 8, "over-a-home-link");
  ASSERT_FALSE(id.empty());
  auto done = grid.WaitJob(
      id, [](const v1::Job& j) { return jobs::IsSettled(j); }, 300000);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  ExpectSweepWhole(grid, *done, "over-a-home-link", 1);
  EXPECT_TRUE(FailedFor(*done, v1::NODE_LOST).empty()) << Joined(FailedFor(*done, v1::NODE_LOST));
  EXPECT_TRUE(FailedFor(*done, v1::ACK_TIMEOUT).empty()) << Joined(FailedFor(*done, v1::ACK_TIMEOUT));

  // The link really was that slow: the agent measured its round trips.
  auto nodes = grid.Cli({"nodes", "--json"});
  auto list = ParseJson<v1::ListNodesResponse>(nodes.out);
  ASSERT_EQ(list.nodes_size(), 1) << nodes.out;
  EXPECT_GE(list.nodes(0).reliability_components().rtt_ms(), 300) << nodes.out;
}

// The owner's disk fills up under a running sweep (the agent's data directory
// is a small tmpfs, filled to the last byte): the attempts it breaks are the
// node's failure, not the job's, and say so; the node takes no more work
// while full; the sweep ends on the other node with nothing lost; and once
// space returns, the node works again.
TEST(FaultEnv, AnAgentsDiskFillingUpFailsItsAttemptsAsTheNodesFaultAndTheWorkMovesOn) {
  if (std::string why = NeedsRootAndPodman(); !why.empty()) GTEST_SKIP() << why;
  Grid grid("agentdisk");
  SmallDisk disk(grid.AgentDataDir(1), 256);
  ASSERT_TRUE(disk.mounted().ok()) << disk.mounted().message();
  ASSERT_TRUE(grid.StartCoordinator({"--heartbeat-interval-ms", "500"}).ok());
  // The runc driver only: rootless podman's mount namespace (its pause
  // process, made by an earlier test) does not see a tmpfs mounted after it,
  // so podman could not read the agent's files here at all.
  ASSERT_TRUE(grid.StartAgent(1, {"--driver", "runc"}).ok());
  // 4 MiB each: more than the agent's own clean-up frees on a full disk.
  const std::string id = SubmitSweep(grid, "diskfull", 6, "disk", 4000, 4);
  ASSERT_FALSE(id.empty());
  const std::string node1 = grid.node_ids[0];
  auto running = grid.WaitJob(id, [&](const v1::Job& j) {
    int on_node1 = 0;
    for (const auto& t : j.tasks()) on_node1 += t.state() == v1::RUNNING;
    return on_node1 >= 2;
  });
  ASSERT_TRUE(running.ok()) << running.status().ToString();
  ASSERT_TRUE(disk.Fill().ok());
  ASSERT_TRUE(grid.StartAgent(2).ok());

  auto done = grid.WaitJob(
      id, [](const v1::Job& j) { return jobs::IsSettled(j); }, 240000);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  ExpectSweepWhole(grid, *done, "disk", 2);
  const auto broken = FailedFor(*done, v1::PLATFORM_FAILURE);
  EXPECT_FALSE(broken.empty()) << "no attempt met the full disk: " << done->DebugString();
  for (const auto& line : broken) {
    EXPECT_TRUE(line.find("disk is full") != std::string::npos || line.find("No space left") != std::string::npos)
        << line;
  }
  EXPECT_TRUE(FailedFor(*done, v1::NONZERO_EXIT).empty()) << "a full disk was blamed on the job:\n"
                                                          << Joined(FailedFor(*done, v1::NONZERO_EXIT));

  // While full, the node says why it takes no work.
  auto nodes = grid.WaitNodes([&](const v1::ListNodesResponse& l) {
    for (const auto& n : l.nodes()) {
      if (n.id() == node1) return n.unschedulable_reason().find("disk is full") != std::string::npos;
    }
    return false;
  });
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  // Space returns: it works again (agent 2 gone, so the work must go there).
  ASSERT_TRUE(disk.Drain().ok());
  grid.StopAgent(2);
  const std::string again = SubmitSweep(grid, "diskback", 2, "disk-back");
  auto back = grid.WaitJob(
      again, [](const v1::Job& j) { return jobs::IsSettled(j); }, 120000);
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n"
                         << grid.Cli({"nodes"}).out << grid.Cli({"status", again, "--explain"}).out
                         << grid.Cli({"status", again, "--json"}).out;
  EXPECT_EQ(back->state(), v1::SUCCEEDED) << back->DebugString();
}

// The coordinator's artifact store (its --shared-dir) fills up while agents
// upload a sweep's outputs: the uploads are told why and wait (Unavailable,
// retried and resumed) instead of failing the node or the job; once space
// returns the sweep ends with every output intact and no attempt failed.
TEST(FaultEnv, TheCoordinatorsArtifactDiskFillingUpMakesUploadsWaitAndLosesNoOutput) {
  if (std::string why = NeedsRootAndPodman(); !why.empty()) GTEST_SKIP() << why;
  Grid grid("artifactdisk");
  grid.shared_dir = grid.root + "/shared";
  SmallDisk disk(grid.shared_dir, 256);
  ASSERT_TRUE(disk.mounted().ok()) << disk.mounted().message();
  ASSERT_TRUE(grid.StartCoordinator({"--heartbeat-interval-ms", "500"}).ok());
  for (int n : {1, 2}) ASSERT_TRUE(grid.StartAgent(n).ok());
  // The image is stored before the disk fills: only outputs meet it.
  const std::string id = SubmitSweep(grid, "artfull", 8, "artifacts", 1500);
  ASSERT_FALSE(id.empty());
  ASSERT_TRUE(grid.WaitJob(id, AnyRunning).ok());
  ASSERT_TRUE(disk.Fill().ok());
  // Held full until an agent's upload has been told so.
  const std::string told = "the coordinator's artifact disk is full";
  EXPECT_TRUE(WaitForText({grid.root + "/agent1.err", grid.root + "/agent2.err"}, told, 120000))
      << "no upload met the full disk";
  ASSERT_TRUE(disk.Drain().ok());
  auto done = grid.WaitJob(
      id, [](const v1::Job& j) { return jobs::IsSettled(j); }, 240000);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  ExpectSweepWhole(grid, *done, "artifacts", 2);
  EXPECT_TRUE(FailedFor(*done, v1::PLATFORM_FAILURE).empty()) << Joined(FailedFor(*done, v1::PLATFORM_FAILURE));
}

// The database's disk (the coordinator's --data-dir, SQLite) fills up
// mid-sweep: calls that must write fail with the database's reason and
// commit nothing; once space returns the sweep ends with nothing lost.
TEST(FaultEnv, TheDatabasesDiskFillingUpLosesNothing) {
  if (std::string why = NeedsRootAndPodman(); !why.empty()) GTEST_SKIP() << why;
  Grid grid("dbdisk");
  grid.shared_dir = grid.root + "/shared";  // artifacts elsewhere: only the database's disk fills
  SmallDisk disk(grid.coordinator_dir, 256);
  ASSERT_TRUE(disk.mounted().ok()) << disk.mounted().message();
  ASSERT_TRUE(grid.StartCoordinator({"--heartbeat-interval-ms", "500"}).ok());
  for (int n : {1, 2}) ASSERT_TRUE(grid.StartAgent(n).ok());
  const std::string id = SubmitSweep(grid, "dbfull", 8, "database", 1500);
  ASSERT_FALSE(id.empty());
  ASSERT_TRUE(grid.WaitJob(id, AnyRunning).ok());
  const std::string refused_manifest = grid.Manifest("refused", {"write", "x"});
  ASSERT_TRUE(disk.Fill().ok());
  // A submission now is refused with the reason, and stores nothing.
  auto refused = grid.Cli({"submit", refused_manifest, "--json"});
  EXPECT_NE(refused.exit_code, 0) << refused.out;
  EXPECT_NE(refused.err.find("full"), std::string::npos) << refused.err;
  ASSERT_TRUE(disk.Drain().ok());
  auto done = grid.WaitJob(
      id, [](const v1::Job& j) { return jobs::IsSettled(j); }, 240000);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  ExpectSweepWhole(grid, *done, "database", 2);
  auto jobs = grid.Cli({"jobs", "--json"});
  EXPECT_EQ(jobs.out.find("refused"), std::string::npos) << "the refused submission was stored:\n" << jobs.out;
}

// Agents whose wall clocks are ten minutes ahead and ten minutes behind the
// coordinator's run a sweep; then the one behind restarts after having run
// with a true clock (NTP stepped it back): it is taken back at once, and
// every task ends once.
TEST(FaultEnv, AgentsTenMinutesOffRunASweepAndOneSteppedBackRejoins) {
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  if (std::string why = SkewedClock::Missing(); !why.empty()) GTEST_SKIP() << why;
  Grid grid("agentclock");
  ASSERT_TRUE(grid.StartCoordinator({"--heartbeat-interval-ms", "500"}).ok());
  SkewedClock ahead(grid.root, "+10m");
  SkewedClock behind(grid.root + "/agent2-clock", "+0");
  grid.agent_env[1] = ahead.Env();
  grid.agent_env[2] = behind.Env();
  for (int n : {1, 2}) ASSERT_TRUE(grid.StartAgent(n).ok());
  const std::string first = SubmitSweep(grid, "skew1", 6, "true-clock");
  ASSERT_FALSE(first.empty());
  auto done1 = grid.WaitJob(
      first, [](const v1::Job& j) { return jobs::IsSettled(j); }, 180000);
  ASSERT_TRUE(done1.ok()) << done1.status().ToString();
  ExpectSweepWhole(grid, *done1, "true-clock", 2);

  // NTP steps agent 2's clock back ten minutes; it restarts. What it
  // advertises next (its owner's policy, its capacity) must still be taken.
  const std::string node2 = grid.node_ids[1];
  auto sequence_of_node2 = [&](const v1::ListNodesResponse& l) -> uint64_t {
    for (const auto& n : l.nodes()) {
      if (n.id() == node2) return n.advertisement().sequence();
    }
    return 0;
  };
  auto before = grid.WaitNodes([](const v1::ListNodesResponse&) { return true; });
  ASSERT_TRUE(before.ok());
  const uint64_t last_sequence = sequence_of_node2(*before);
  grid.StopAgent(2);
  ASSERT_TRUE(behind.Set("-10m").ok());
  ASSERT_TRUE(grid.StartAgent(2).ok());
  auto readvertised =
      grid.WaitNodes([&](const v1::ListNodesResponse& l) { return sequence_of_node2(l) > last_sequence; }, 30000);
  ASSERT_TRUE(readvertised.ok()) << readvertised.status().ToString();
  EXPECT_GT(sequence_of_node2(*readvertised), last_sequence)
      << "the coordinator refused the advertisements of the agent whose clock went back";
  const std::string second = SubmitSweep(grid, "skew2", 8, "skewed", 500);
  ASSERT_FALSE(second.empty());
  auto done2 = grid.WaitJob(
      second, [](const v1::Job& j) { return jobs::IsSettled(j); }, 180000);
  ASSERT_TRUE(done2.ok()) << done2.status().ToString();
  ExpectSweepWhole(grid, *done2, "skewed", 2);
  int on_node2 = 0;
  for (const auto& t : done2->tasks()) {
    for (const auto& a : t.attempts()) on_node2 += a.state() == v1::SUCCEEDED && a.node_id() == grid.node_ids[1];
  }
  EXPECT_GT(on_node2, 0) << "the agent whose clock went back took no work: " << done2->DebugString();
}

// The coordinator's wall clock jumps ten minutes ahead mid-sweep, then back:
// no node is taken for lost, no assignment for unacknowledged, and the sweep
// ends with every task once.
TEST(FaultEnv, ACoordinatorClockJumpingAheadAndBackLosesNoNodeAndNoTask) {
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  if (std::string why = SkewedClock::Missing(); !why.empty()) GTEST_SKIP() << why;
  Grid grid("coordclock");
  SkewedClock clock(grid.root, "+0");
  grid.coordinator_env = clock.Env();
  ASSERT_TRUE(
      grid.StartCoordinator({"--heartbeat-interval-ms", "500", "--heartbeat-margin", "16", "--ack-timeout-ms", "10000"})
          .ok());
  for (int n : {1, 2}) ASSERT_TRUE(grid.StartAgent(n).ok());
  const std::string id = SubmitSweep(grid, "jump", 16, "jumped", 1000);
  ASSERT_FALSE(id.empty());
  // Both agents are frozen across each jump, so no heartbeat or
  // acknowledgement arriving just after it can hide what the coordinator
  // makes of it. The freeze is the fault's length, not a wait for an event:
  // 2 s after the coordinator has logged the step (it reads the clock file
  // within a second), well inside the 8 s silence a node is allowed, so a
  // coordinator that measured the silence across the jump would fail them.
  auto jump = [&](const std::string& offset, const std::string& logged) {
    for (auto& a : grid.agents) {
      if (a) a->Signal(SIGSTOP);
    }
    EXPECT_TRUE(clock.Set(offset).ok());
    const bool seen = WaitForText({grid.root + "/coordinator.err"}, logged, 30000);
    std::this_thread::sleep_for(std::chrono::seconds(2));
    for (auto& a : grid.agents) {
      if (a) a->Signal(SIGCONT);
    }
    return seen;
  };
  ASSERT_TRUE(grid.WaitJob(id, SucceededAtLeast(3)).ok());
  ASSERT_TRUE(jump("+10m", "wall clock stepped ahead")) << "the coordinator never saw its clock jump ahead";
  ASSERT_TRUE(grid.WaitJob(id, SucceededAtLeast(8)).ok());
  ASSERT_TRUE(jump("+0", "wall clock stepped back")) << "the coordinator never saw its clock jump back";
  auto done = grid.WaitJob(
      id, [](const v1::Job& j) { return jobs::IsSettled(j); }, 180000);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->state(), v1::SUCCEEDED) << done->DebugString();
  EXPECT_TRUE(FailedFor(*done, v1::NODE_LOST).empty()) << Joined(FailedFor(*done, v1::NODE_LOST));
  EXPECT_TRUE(FailedFor(*done, v1::ACK_TIMEOUT).empty()) << Joined(FailedFor(*done, v1::ACK_TIMEOUT));
  for (const auto& t : done->tasks()) {
    int succeeded = 0;
    for (const auto& a : t.attempts()) succeeded += a.state() == v1::SUCCEEDED;
    EXPECT_EQ(succeeded, 1) << "task " << t.index();
  }
}

}  // namespace
}  // namespace idlegrid::testing
