// Checkpoint and resume: a checkpointing task whose node is killed twice
// resumes each time on another agent from its latest checkpoint and finishes
// with the result an uninterrupted run computes.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "e2e/harness.h"
#include "jobs/task_state.h"

namespace idlegrid::testing {
namespace {

constexpr long kSteps = 60;
constexpr long kStepMs = 150;

// What `testprog count` computes when nothing interrupts it.
unsigned long long UninterruptedResult(long steps) {
  unsigned long long acc = 1;
  for (long s = 0; s < steps; ++s) acc = acc * 6364136223846793005ULL + static_cast<unsigned long long>(s);
  return acc;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Checkpoint, TaskKilledTwiceOnDifferentAgentsResumesAndFinishesWithTheUninterruptedResult) {
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  Grid grid("checkpoint");
  ASSERT_TRUE(grid.StartCoordinator({"--heartbeat-interval-ms", "300", "--heartbeat-margin", "3"}).ok());
  std::map<std::string, int> agent_of_node;
  for (int n = 1; n <= 3; ++n) {
    ASSERT_TRUE(grid.StartAgent(n).ok());
    agent_of_node[grid.node_ids[n - 1]] = n;
  }
  std::string manifest = grid.Manifest("counter", {"count", std::to_string(kSteps), std::to_string(kStepMs)},
                                       "retries: 3\nidempotent: true\ncheckpoint:\n  path: /ckpt\n  interval: 1s\n");
  auto sub = grid.Cli({"submit", manifest});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  std::string id = sub.out.substr(0, sub.out.find('\n'));

  // Twice: once the running attempt has saved a checkpoint (after some steps),
  // kill -9 its agent; the task must move to an agent not yet used.
  std::set<std::string> used_nodes;
  for (int kill = 0; kill < 2; ++kill) {
    auto saved = grid.WaitJob(id, [&](const v1::Job& j) {
      const auto& t = j.tasks(0);
      if (t.attempts_size() != kill + 1) return false;
      const auto& a = t.attempts(kill);
      return a.state() == v1::RUNNING && a.checkpoints() >= 2 && t.checkpoint().attempt_id() == a.id();
    });
    ASSERT_TRUE(saved.ok()) << saved.status().ToString();
    const auto& attempt = saved->tasks(0).attempts(kill);
    ASSERT_EQ(attempt.state(), v1::RUNNING) << saved->DebugString();
    ASSERT_GE(attempt.checkpoints(), 2u);
    EXPECT_EQ(attempt.lease_epoch(), static_cast<uint64_t>(kill + 1));
    ASSERT_TRUE(used_nodes.insert(attempt.node_id()).second) << "attempt ran on a node used before";
    ASSERT_EQ(agent_of_node.count(attempt.node_id()), 1u);
    grid.StopAgent(agent_of_node[attempt.node_id()], SIGKILL);
  }

  auto done = grid.WaitJob(
      id, [](const v1::Job& j) { return jobs::IsSettled(j); }, 120000);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  ASSERT_EQ(done->state(), v1::SUCCEEDED) << done->DebugString();
  const auto& task = done->tasks(0);
  ASSERT_EQ(task.attempts_size(), 3);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(task.attempts(i).state(), v1::FAILED);
    EXPECT_EQ(task.attempts(i).failure_reason(), v1::NODE_LOST);
    // Each retry started from the checkpoint its predecessor left.
    EXPECT_EQ(task.attempts(i + 1).restored_from_attempt(), task.attempts(i).id());
    EXPECT_EQ(task.attempts(i + 1).lease_epoch(), static_cast<uint64_t>(i + 2));
  }
  EXPECT_TRUE(used_nodes.insert(task.attempts(2).node_id()).second) << "the last attempt reused a killed node";
  EXPECT_EQ(task.attempts(2).state(), v1::SUCCEEDED);

  // The result is the uninterrupted one.
  std::string out_dir = grid.root + "/fetched";
  auto f = grid.Cli({"fetch", id, out_dir});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  EXPECT_EQ(ReadAll(out_dir + "/task-0/result.txt"), "acc=" + std::to_string(UninterruptedResult(kSteps)) + "\n");

  // Both retries resumed past step 0, and the grid reports how much was redone.
  auto logs = grid.Cli({"logs", id});
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  int resumed = 0;
  long steps_run = 0;
  std::istringstream lines(logs.out);
  for (std::string line; std::getline(lines, line);) {
    long k = 0;
    if (std::sscanf(line.c_str(), "resumed at step %ld", &k) == 1) {
      EXPECT_GT(k, 0) << line;
      ++resumed;
    }
    if (line.rfind("step ", 0) == 0) ++steps_run;
  }
  EXPECT_EQ(resumed, 2) << logs.out;
  EXPECT_GT(task.work_redone_ms(), 0);
  // Without checkpoints the two killed attempts' work would all be redone;
  // with them at most the steps since each one's last checkpoint are.
  int64_t run_ms = 0;
  for (const auto& a : task.attempts()) run_ms += a.finished_at_ms() - a.started_at_ms();
  EXPECT_LT(task.work_redone_ms(), run_ms);
  // The failure classes reach the metrics: two leases lost, and the task's success.
  std::string ca = grid.coordinator_dir + "/pki/ca.crt";
  auto metrics = RunCommand({"curl", "-sS", "--cacert", ca, "-H", "Authorization: Bearer " + grid.admin_token,
                             "https://" + grid.http_addr + "/metrics"});
  ASSERT_EQ(metrics.exit_code, 0) << metrics.err;
  EXPECT_NE(metrics.out.find("idlegrid_attempts_ended_total{reason=\"node_lost\"} 2\n"), std::string::npos)
      << metrics.out;
  EXPECT_NE(metrics.out.find("idlegrid_tasks{state=\"succeeded\"}"), std::string::npos) << metrics.out;
  EXPECT_NE(metrics.out.find("idlegrid_attempts_ended_total{reason=\"cost_cap_reached\"} 0\n"), std::string::npos);
  std::printf("work redone: %lld ms (platform view, incl. detection time); %ld of %ld step lines were repeats\n",
              static_cast<long long>(task.work_redone_ms()), steps_run > kSteps ? steps_run - kSteps : 0, kSteps);
}

// A checkpoint of one large file (a model's weights) moves in chunks: after
// its first upload, a checkpoint in which only its first bytes changed sends
// one chunk, not the file; the task's node killed, the retry restores the
// file from its chunks byte for byte (the program checks every byte) and
// finishes.
TEST(Checkpoint, ALargeFileMovesOnlyItsChangedChunksAndRestoresWhole) {
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  Grid grid("checkpoint-chunks");
  ASSERT_TRUE(grid.StartCoordinator({"--heartbeat-interval-ms", "300", "--heartbeat-margin", "3"}).ok());
  std::map<std::string, int> agent_of_node;
  for (int n = 1; n <= 2; ++n) {
    ASSERT_TRUE(grid.StartAgent(n).ok());
    agent_of_node[grid.node_ids[n - 1]] = n;
  }
  auto bytes_in = [&] {
    auto metrics = RunCommand({"curl", "-sS", "--fail", "--cacert", grid.coordinator_dir + "/pki/ca.crt", "-H",
                               "Authorization: Bearer " + grid.admin_token, "https://" + grid.http_addr + "/metrics"});
    EXPECT_EQ(metrics.exit_code, 0) << metrics.err;
    const std::string key = "idlegrid_artifact_bytes_total{direction=\"in\"} ";
    const size_t at = metrics.out.find(key);
    return at == std::string::npos ? -1.0 : std::strtod(metrics.out.c_str() + at + key.size(), nullptr);
  };
  constexpr double kMiB = 1 << 20;
  constexpr int kFileMiB = 72;  // 5 chunks of 16 MiB, the last 8
  std::string manifest = grid.Manifest("weights", {"bigstate", std::to_string(kFileMiB), "20", "700"},
                                       "retries: 2\nidempotent: true\ncheckpoint:\n  path: /ckpt\n  interval: 1s\n");
  const double before = bytes_in();  // after Manifest pushed the test image
  auto sub = grid.Cli({"submit", manifest});
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  const std::string id = sub.out.substr(0, sub.out.find('\n'));

  // The coordinator's byte counter is read between counts of the attempt's
  // checkpoints: uploads it holds belong to checkpoints up to the count
  // read after it, plus one in flight.
  auto checkpoints_now = [&](int at_least) {
    auto job = grid.WaitJob(id, [&](const v1::Job& j) {
      const auto& t = j.tasks(0);
      return t.attempts_size() == 1 && t.attempts(0).state() == v1::RUNNING &&
             t.attempts(0).checkpoints() >= static_cast<uint32_t>(at_least) && t.checkpoint().files_size() == 1;
    });
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    return job.ok() ? static_cast<int>(job->tasks(0).attempts(0).checkpoints()) : -1;
  };
  auto agent_says = [&] {  // the agents' own account of each sync, shown when a bound fails
    std::string lines;
    for (int n = 1; n <= 2; ++n) {
      std::istringstream log(ReadAll(grid.root + "/agent" + std::to_string(n) + ".err"));
      for (std::string line; std::getline(log, line);) {
        if (line.find("checkpoint file") != std::string::npos) lines += line + "\n";
      }
    }
    return lines;
  };
  const int first = checkpoints_now(1);
  ASSERT_GE(first, 1);
  const double sent_first = bytes_in() - before;
  EXPECT_GE(sent_first, kFileMiB * kMiB) << "the first checkpoint sends every chunk once\n" << agent_says();
  const int from = checkpoints_now(first);  // no fewer than were complete when the counter was read
  ASSERT_GE(checkpoints_now(from + 3), from + 3);
  const double sent_later = bytes_in() - before - sent_first;
  auto saved = grid.WaitJob(id, [](const v1::Job&) { return true; });
  ASSERT_TRUE(saved.ok()) << saved.status().ToString();
  const int upto = static_cast<int>(saved->tasks(0).attempts(0).checkpoints());
  const v1::OutputFile& weights = saved->tasks(0).checkpoint().files(0);
  EXPECT_EQ(weights.path(), "weights");
  EXPECT_EQ(weights.size(), static_cast<uint64_t>(kFileMiB) << 20);
  ASSERT_EQ(weights.chunks_size(), 5) << weights.DebugString();
  // Whole files would be 72 MiB per checkpoint; one changed chunk is 16.
  EXPECT_LE(sent_later, 16 * (upto - from + 1) * kMiB)
      << sent_later / kMiB << " MiB for checkpoints " << from + 1 << " to " << upto << " and one in flight\n"
      << agent_says();
  grid.StopAgent(agent_of_node[saved->tasks(0).attempts(0).node_id()], SIGKILL);

  auto done = grid.WaitJob(
      id, [](const v1::Job& j) { return jobs::IsSettled(j); }, 120000);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  ASSERT_EQ(done->state(), v1::SUCCEEDED) << done->DebugString();
  ASSERT_EQ(done->tasks(0).attempts_size(), 2);
  EXPECT_EQ(done->tasks(0).attempts(1).restored_from_attempt(), done->tasks(0).attempts(0).id());
  const std::string out_dir = grid.root + "/fetched";
  auto f = grid.Cli({"fetch", id, out_dir});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  const std::string result = ReadAll(out_dir + "/task-0/result.txt");
  EXPECT_EQ(result.rfind("resumed at ", 0), 0u) << result;
  EXPECT_NE(result.find("pattern ok"), std::string::npos) << result;
}

}  // namespace
}  // namespace idlegrid::testing
