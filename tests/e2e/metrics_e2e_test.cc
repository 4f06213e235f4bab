// /metrics on a live coordinator with a real agent after a real job: Debian's
// promtool accepts it (format and lint), and the figures reflect the job.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "common/fs.h"
#include "common/version.h"
#include "e2e/harness.h"

namespace idlegrid::testing {
namespace {

// The value of the first sample whose name and labels start with `prefix`; -1 if none.
double Sample(const std::string& metrics, const std::string& prefix) {
  size_t at = 0;
  while ((at = metrics.find(prefix, at)) != std::string::npos) {
    if (at == 0 || metrics[at - 1] == '\n') {
      const size_t space = metrics.find(' ', at);
      const size_t end = metrics.find('\n', at);
      if (space != std::string::npos && space < end) return std::stod(metrics.substr(space + 1, end - space - 1));
    }
    at += prefix.size();
  }
  return -1;
}

// Prometheus's own checker accepts `text` (written to `file` for it) without
// a lint, and no family was left out by our renderer.
void ExpectPromtoolClean(const std::string& text, const std::string& file) {
  ASSERT_TRUE(WriteFileAtomic(file, text).ok());
  auto checked = RunCommand({"sh", "-c", "promtool check metrics < " + file});
  EXPECT_EQ(checked.exit_code, 0) << checked.out << checked.err << "\n" << text;
  EXPECT_EQ(checked.out + checked.err, "") << "promtool's lint found problems";
  EXPECT_EQ(text.find("# idlegrid: left out"), std::string::npos) << text;
}

TEST(MetricsE2E, PromtoolAcceptsALiveCoordinatorsMetricsAndTheyCountTheJob) {
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  if (RunCommand({"sh", "-c", "command -v promtool"}).exit_code != 0) {
    FAIL() << "promtool missing: scripts/install-deps.sh installs Debian's prometheus package";
  }
  Grid grid("MetricsE2E");
  ASSERT_TRUE(grid.StartCoordinator().ok());
  Status started = grid.StartAgent(1, {"--metrics-listen", "127.0.0.1:0"});
  ASSERT_TRUE(started.ok()) << started.message();
  const std::string agent_metrics = ValueAfter(grid.agents[0]->WaitForLine("metrics listen=", 1000), "listen");
  ASSERT_FALSE(agent_metrics.empty()) << "the agent printed no metrics address";
  auto submitted = grid.Cli({"submit", grid.Manifest("measured", {"write", "measured"}), "--wait"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;

  const std::string ca = grid.coordinator_dir + "/pki/ca.crt";
  auto metrics = RunCommand({"curl", "-sS", "--fail", "--cacert", ca, "-H", "Authorization: Bearer " + grid.admin_token,
                             "https://" + grid.http_addr + "/metrics"});
  ASSERT_EQ(metrics.exit_code, 0) << metrics.err;
  ExpectPromtoolClean(metrics.out, grid.coordinator_dir + "/metrics.txt");

  // The job: one task waited, ran and succeeded; its image and output moved.
  EXPECT_EQ(Sample(metrics.out, "idlegrid_build_info{version=\"" + std::string(BuildVersion()) + "\"}"), 1)
      << metrics.out;
  EXPECT_GE(Sample(metrics.out, "idlegrid_queue_wait_seconds_count"), 1) << metrics.out;
  EXPECT_GE(Sample(metrics.out, "idlegrid_attempt_run_seconds_count"), 1) << metrics.out;
  EXPECT_GE(Sample(metrics.out, "idlegrid_attempts_ended_total{reason=\"succeeded\"}"), 1) << metrics.out;
  EXPECT_GE(Sample(metrics.out, "idlegrid_dispatch_commit_seconds_count"), 1) << metrics.out;
  EXPECT_GT(Sample(metrics.out, "idlegrid_artifact_bytes_total{direction=\"in\"}"), 0) << metrics.out;
  EXPECT_GT(Sample(metrics.out, "idlegrid_artifact_bytes_total{direction=\"out\"}"), 0) << metrics.out;
  EXPECT_GE(Sample(metrics.out, "idlegrid_tasks{state=\"succeeded\"}"), 1) << metrics.out;  // with the readiness job
  // Capacity per node, as the coordinator accounts it.
  ASSERT_FALSE(grid.node_ids.empty());
  const std::string node = "{node=\"" + grid.node_ids[0] + "\",kind=";
  EXPECT_GT(Sample(metrics.out, "idlegrid_node_cpu_cores" + node + "\"allocatable\"}"), 0) << metrics.out;
  EXPECT_EQ(Sample(metrics.out, "idlegrid_node_cpu_cores" + node + "\"allocated\"}"), 0) << metrics.out;
  EXPECT_GT(Sample(metrics.out, "idlegrid_node_memory_bytes" + node + "\"allocatable\"}"), 0) << metrics.out;
  EXPECT_GE(Sample(metrics.out, "idlegrid_node_heartbeat_age_seconds{node=\"" + grid.node_ids[0] + "\"}"), 0)
      << metrics.out;

  // The agent's own, on loopback, also promtool-clean.
  auto own = RunCommand({"curl", "-sS", "--fail", "http://" + agent_metrics + "/metrics"});
  ASSERT_EQ(own.exit_code, 0) << own.err;
  ExpectPromtoolClean(own.out, grid.coordinator_dir + "/agent-metrics.txt");
  EXPECT_EQ(Sample(own.out, "idlegrid_agent_build_info{version=\"" + std::string(BuildVersion()) + "\"}"), 1)
      << own.out;
  EXPECT_EQ(Sample(own.out, "idlegrid_agent_connected"), 1) << own.out;
  EXPECT_GE(Sample(own.out, "idlegrid_agent_reports_total{event=\"exited\"}"), 1) << own.out;
  EXPECT_GE(Sample(own.out, "idlegrid_agent_heartbeats_total{result=\"delivered\"}"), 1) << own.out;
  EXPECT_EQ(Sample(own.out, "idlegrid_agent_running_attempts"), 0) << own.out;
}

TEST(MetricsE2E, AnAgentRefusesToServeMetricsBeyondLoopback) {
  Grid grid("MetricsLoopback");
  auto refused = RunCommand({grid.binary(), "agent", "--coordinator", "127.0.0.1:1", "--data-dir", grid.root + "/a",
                             "--metrics-listen", "0.0.0.0:9464"},
                            60);
  EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("loopback only"), std::string::npos) << refused.err;
}

}  // namespace
}  // namespace idlegrid::testing
