// The grid under load, with real processes: the failure detector must not
// mistake a busy node for a dead one, an agent must never run more than it
// advertises, and a shutdown must not wait for a coordinator that is gone.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <regex>
#include <thread>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "e2e/harness.h"
#include "jobs/task_state.h"

namespace idlegrid::testing {
namespace {

constexpr int kHeartbeatMs = 1000;

// A trivial array job: `count` tasks asking for `cpu` each.
std::string ArrayManifest(Grid& grid, const std::string& name, int count, const std::string& cpu,
                          const std::vector<std::string>& args) {
  std::string image = grid.PushTestImage();
  std::ostringstream y;
  y << "apiVersion: idlegrid/v1\nname: " << name << "\nimage: igtest@" << image << "\ncommand: [\"/sim\"]\nargs: [";
  for (size_t i = 0; i < args.size(); ++i) y << (i ? ", " : "") << "\"" << args[i] << "\"";
  y << "]\nresources:\n  cpu: " << cpu << "\n  memory: 128Mi\n  pids: 32\noutput: /out\nretries: 3\n"
    << "idempotent: true\narray: {count: " << count << "}\n";
  return grid.WriteFile(name + ".yaml", y.str());
}

std::string Metrics(Grid& grid) {
  std::string ca = grid.coordinator_dir + "/pki/ca.crt";
  auto r = RunCommand({"curl", "-sS", "--fail", "--cacert", ca, "-H", "Authorization: Bearer " + grid.admin_token,
                       "https://" + grid.http_addr + "/metrics"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? r.out : "";
}

// The value of a metric line `name{labels} value`; -1 if absent.
double MetricValue(const std::string& metrics, const std::string& name_and_labels) {
  auto at = metrics.find(name_and_labels + " ");
  if (at == std::string::npos) return -1;
  return std::stod(metrics.substr(at + name_and_labels.size() + 1));
}

// Longest heartbeat gap the coordinator recorded per node, in ms.
std::map<std::string, double> HeartbeatGaps(const std::string& metrics) {
  std::map<std::string, double> out;
  std::regex line(R"re(idlegrid_heartbeat_gap_max_seconds\{node="([^"]+)"\} ([0-9.e+-]+))re");
  for (auto it = std::sregex_iterator(metrics.begin(), metrics.end(), line); it != std::sregex_iterator(); ++it) {
    out[(*it)[1]] = std::stod((*it)[2]) * 1000.0;
  }
  return out;
}

// Containers of agent n still present (running or not, either driver); -1
// if a listing failed.
int ContainersLeft(Grid& grid, int n) {
  auto names = AgentContainers(grid, n);
  EXPECT_TRUE(names.ok()) << names.status().message();
  return names.ok() ? static_cast<int>(names->size()) : -1;
}

// The same once the agent's idle pilots (runtime/pilot_pool.h: kept 2 s for
// the job's next task) have been retired: awaited, at most `limit`. A listing
// may fail while a pilot is being deleted under it (`runc list` is not atomic
// against `runc delete`): only the last one must succeed.
int ContainersLeftOnceIdle(Grid& grid, int n, std::chrono::seconds limit = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    auto names = AgentContainers(grid, n);
    if (names.ok() && names->empty()) return 0;
    if (std::chrono::steady_clock::now() >= deadline) {
      EXPECT_TRUE(names.ok()) << names.status().message();
      return names.ok() ? static_cast<int>(names->size()) : -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

void ExpectEveryTaskSucceededOnce(const v1::Job& job, int count) {
  ASSERT_EQ(job.tasks_size(), count);
  for (const auto& t : job.tasks()) {
    EXPECT_EQ(t.state(), v1::SUCCEEDED) << "task " << t.index() << ": " << t.message();
    int succeeded = 0;
    for (const auto& a : t.attempts()) {
      succeeded += a.state() == v1::SUCCEEDED;
      EXPECT_NE(a.failure_reason(), v1::NODE_LOST)
          << "task " << t.index() << " attempt " << a.id() << ": " << a.message();
    }
    EXPECT_EQ(succeeded, 1) << "task " << t.index();
  }
}

TEST(Load, FiveHundredTasksOnOversubscribedAgentsLoseNothing) {
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  Grid grid("load500");
  ASSERT_TRUE(grid.StartCoordinator({"--heartbeat-interval-ms", std::to_string(kHeartbeatMs)}).ok());
  // Two cores each, quarter-core tasks: eight containers per agent at once on
  // a two-core machine, far more work than cores.
  for (int n = 1; n <= 2; ++n) ASSERT_TRUE(grid.StartAgent(n).ok());
  constexpr int kTasks = 500;
  auto sub = grid.Cli({"submit", ArrayManifest(grid, "load500", kTasks, "250m", {"write", "load"})});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  std::string id = sub.out.substr(0, sub.out.find('\n'));
  auto start = std::chrono::steady_clock::now();
  auto done = grid.WaitJob(
      id, [](const v1::Job& j) { return jobs::IsSettled(j); }, 900000);
  ASSERT_TRUE(done.ok()) << done.status().message();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ info ] %d tasks in %.1f s: %.1f tasks/s\n", kTasks, seconds, kTasks / seconds);
  ExpectEveryTaskSucceededOnce(*done, kTasks);
  std::string metrics = Metrics(grid);
  EXPECT_EQ(MetricValue(metrics, "idlegrid_node_transitions_total{to=\"offline\"}"), 0) << metrics;
  EXPECT_EQ(MetricValue(metrics, "idlegrid_attempts_ended_total{reason=\"node_lost\"}"), 0) << metrics;
  for (int n = 1; n <= 2; ++n) EXPECT_EQ(ContainersLeftOnceIdle(grid, n), 0) << "agent " << n;
}

TEST(Load, HeartbeatsKeepTheirRhythmOnASaturatedHostWithSlowPodman) {
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  // Every podman call of agent 1 takes an extra 1.5 s: its starts, kills and
  // listings are slow, as on a host thrashing under its jobs.
  std::string slow = "/tmp/igtest-slow-podman-" + std::to_string(::getpid());
  {
    std::ofstream(slow) << "#!/bin/sh\nsleep 1.5\nexec podman \"$@\"\n";
    ASSERT_EQ(::chmod(slow.c_str(), 0755), 0);
  }
  Grid grid("hbstress");
  ASSERT_TRUE(grid.StartCoordinator({"--heartbeat-interval-ms", std::to_string(kHeartbeatMs)}).ok());
  // Agent 1 starts every container with (slow) podman; agent 2 with the
  // default driver.
  ASSERT_TRUE(grid.StartAgent(1, {"--driver", "podman", "--podman", slow}).ok());
  ASSERT_TRUE(grid.StartAgent(2).ok());
  // CPU-bound tasks: eight per agent, each spinning a core for 8 s, on two cores.
  constexpr int kTasks = 32;
  auto sub = grid.Cli({"submit", ArrayManifest(grid, "spin", kTasks, "250m", {"spin", "8"})});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  std::string id = sub.out.substr(0, sub.out.find('\n'));
  auto done = grid.WaitJob(
      id, [](const v1::Job& j) { return jobs::IsSettled(j); }, 600000);
  ASSERT_TRUE(done.ok()) << done.status().message();
  ExpectEveryTaskSucceededOnce(*done, kTasks);
  std::string metrics = Metrics(grid);
  auto gaps = HeartbeatGaps(metrics);
  for (int n = 1; n <= 2; ++n) {
    const std::string& node = grid.node_ids[static_cast<size_t>(n - 1)];
    ASSERT_TRUE(gaps.count(node)) << "no heartbeat gap recorded for agent " << n << "\n" << metrics;
    std::printf("[ info ] agent %d: longest heartbeat gap %.0f ms (interval %d ms)\n", n, gaps[node], kHeartbeatMs);
    // The interval plus a small margin: the sender never waits on podman.
    EXPECT_LE(gaps[node], kHeartbeatMs + 750) << "agent " << n;
  }
  EXPECT_EQ(MetricValue(metrics, "idlegrid_node_transitions_total{to=\"suspect\"}"), 0) << metrics;
  ::unlink(slow.c_str());
}

TEST(Load, SigtermWithTheCoordinatorDownEndsTheAgentWithinItsGraceAndLeavesNoContainer) {
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  Grid grid("sigterm");
  ASSERT_TRUE(grid.StartCoordinator({"--heartbeat-interval-ms", std::to_string(kHeartbeatMs)}).ok());
  constexpr int kGraceSeconds = 5;
  ASSERT_TRUE(grid.StartAgent(1, {"--shutdown-grace", std::to_string(kGraceSeconds)}).ok());
  auto sub = grid.Cli({"submit", ArrayManifest(grid, "long", 2, "500m", {"sleep", "300"})});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  std::string id = sub.out.substr(0, sub.out.find('\n'));
  auto running = grid.WaitJob(
      id, [](const v1::Job& j) { return j.tasks(0).state() == v1::RUNNING && j.tasks(1).state() == v1::RUNNING; });
  ASSERT_TRUE(running.ok());
  ASSERT_EQ(running->tasks(0).state(), v1::RUNNING);
  // RUNNING is reported as the attempt starts; on a loaded host its
  // container may appear a little later: awaited, at most 30 s.
  const auto listed_by = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (ContainersLeft(grid, 1) < 2 && std::chrono::steady_clock::now() < listed_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(ContainersLeft(grid, 1), 2) << "both containers should be running before the shutdown";
  grid.StopCoordinator(SIGKILL);
  auto start = std::chrono::steady_clock::now();
  grid.agents[0]->Signal(SIGTERM);
  int status = grid.agents[0]->Wait();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  grid.agents[0].reset();
  std::printf("[ info ] agent exited (status %d) %.1f s after SIGTERM, grace %d s\n", status, seconds, kGraceSeconds);
  EXPECT_LE(seconds, kGraceSeconds + 1.0) << "the agent must not wait for an unreachable coordinator";
  EXPECT_EQ(ContainersLeft(grid, 1), 0);
}

}  // namespace
}  // namespace idlegrid::testing
