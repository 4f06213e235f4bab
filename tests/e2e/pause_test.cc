// Owner-first scheduling on the node (issue 15, docs/provider.md "When the
// owner needs the machine"), end to end with the fake NVML library: its live
// values come from a state file this test rewrites while the agent polls.
//   - a "game" (a real process of the test's) appears on the GPU: the job is
//     frozen within the poll interval (its CPU time stops), the node shows
//     paused with the reason; the game exits: the job resumes and finishes;
//   - a pause past handBackAfter: checkpoint, hand back, finish on another
//     node; the paused node's reliability is not touched;
//   - a GPU above maxGpuTemp pauses with a thermal reason; cool, it resumes.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/fs.h"
#include "e2e/harness.h"
#include "jobs/task_state.h"

namespace idlegrid::testing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kPollMs = 200;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The fields of /proc/PID/stat after the command name: [0] is the state.
std::vector<std::string> StatFields(int pid) {
  std::string stat = ReadAll("/proc/" + std::to_string(pid) + "/stat");
  std::vector<std::string> fields;
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return fields;
  std::istringstream in(stat.substr(close + 2));
  for (std::string f; in >> f;) fields.push_back(f);
  return fields;
}

// utime + stime in clock ticks; -1 when the process is gone.
long CpuTicks(int pid) {
  auto f = StatFields(pid);
  return f.size() > 12 ? std::atol(f[11].c_str()) + std::atol(f[12].c_str()) : -1;
}

char ProcState(int pid) {
  auto f = StatFields(pid);
  return f.empty() ? '?' : f[0][0];
}

// The host pid of the job's process: the one whose command line holds `tag`.
int FindProcessWith(const std::string& tag) {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = ReadAll(e.path().string() + "/cmdline");
    for (char& c : cmdline) c = c == '\0' ? ' ' : c;
    if (cmdline.find(tag) != std::string::npos && cmdline.find("burn") != std::string::npos) return std::stoi(name);
  }
  return -1;
}

// Waits for pred with a deadline; true when it held.
bool Await(const std::function<bool()>& pred, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (Clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

// Lost plus failed attempts in the node's reliability detail ("3 ok, 0 lost,
// 0 failed; ..."), or -1 when it says no such thing.
int NodeFaults(const v1::Node& n) {
  unsigned ok = 0, lost = 0, failed = 0;
  if (std::sscanf(n.reliability_detail().c_str(), "%u ok, %u lost, %u failed", &ok, &lost, &failed) != 3) {
    return n.reliability_detail() == "no history yet" ? 0 : -1;
  }
  return static_cast<int>(lost + failed);
}

const v1::Node* NodeById(const v1::ListNodesResponse& l, const std::string& id) {
  for (const auto& n : l.nodes()) {
    if (n.id() == id) return &n;
  }
  return nullptr;
}

class Pause : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
    grid_ = std::make_unique<Grid>("pause");
    ASSERT_TRUE(grid_->StartCoordinator({"--allow-simulated-gpus", "--heartbeat-interval-ms", "300"}).ok());
    nvml_ = grid_->root + "/libfake-nvidia-ml.so";
    ASSERT_EQ(RunCommand({"install", "-m", "755", FAKE_NVML_PATH, nvml_}).exit_code, 0);
    state_ = grid_->root + "/nvml-state";
    // No GPU until the owner's game shows up on one: the GPU it brings is
    // then measured by a readiness benchmark, which is an attempt too, and
    // the tests count the job's attempts.
    SetGpuState("count 0\n");
  }

  // Rewritten whole, by rename: the agent must never read half a file.
  void SetGpuState(const std::string& text) {
    ASSERT_TRUE(WriteFileAtomic(state_, text, 0644).ok());
    ::chmod(state_.c_str(), 0644);
  }

  void StartAgentWithPolicy(int n, const std::string& policy_yaml, std::vector<std::string> extra = {}) {
    std::string policy = grid_->root + "/policy-" + std::to_string(n) + ".yaml";
    ASSERT_TRUE(WriteFileAtomic(policy, policy_yaml, 0644).ok());
    ::chmod(policy.c_str(), 0644);
    ::setenv("FAKE_NVML_STATE_FILE", state_.c_str(), 1);
    std::vector<std::string> args = {"--nvml-library",       nvml_, "--policy", policy, "--pause-poll-ms",
                                     std::to_string(kPollMs)};
    args.insert(args.end(), extra.begin(), extra.end());
    Status st = grid_->StartAgent(n, args);
    ::unsetenv("FAKE_NVML_STATE_FILE");
    ASSERT_TRUE(st.ok()) << st.message();
  }

  std::string Submit(const std::string& manifest) {
    auto r = grid_->Cli({"submit", manifest});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out.substr(0, r.out.find('\n'));
  }

  // A one-GPU counter that checkpoints every second; returned once its
  // first checkpoint is saved (so a hand back has one to resume from).
  std::string SubmitCheckpointedGpuJob() {
    const std::string manifest = grid_->WriteFile(
        "gpu-counter.yaml", "apiVersion: idlegrid/v1\nname: gpu-counter\nimage: igtest@" + grid_->PushTestImage() +
                                "\ncommand: [\"/sim\"]\nargs: [\"count\", \"40\", \"150\"]\nresources: {cpu: 0.5, "
                                "memory: 256Mi, pids: 64, gpus: 1}\noutput: /out\nretries: 0\nidempotent: true\n"
                                "checkpoint:\n  path: /ckpt\n  interval: 1s\n");
    std::string id = Submit(manifest);
    auto saved = grid_->WaitJob(id, [](const v1::Job& j) {
      return j.tasks(0).attempts_size() == 1 && j.tasks(0).attempts(0).checkpoints() >= 1;
    });
    EXPECT_TRUE(saved.ok()) << saved.status().ToString();
    return id;
  }

  Result<v1::ListNodesResponse> WaitNode(int n, const std::function<bool(const v1::Node&)>& pred, int timeout_ms) {
    const std::string id = grid_->node_ids[static_cast<size_t>(n - 1)];
    return grid_->WaitNodes(
        [&](const v1::ListNodesResponse& l) {
          const v1::Node* node = NodeById(l, id);
          return node != nullptr && pred(*node);
        },
        timeout_ms);
  }

  std::unique_ptr<Grid> grid_;
  std::string nvml_, state_;
};

TEST_F(Pause, OwnersGameFreezesTheJobWhichResumesAndFinishesWhenTheGameExits) {
  StartAgentWithPolicy(1, "pauseWhen:\n  ownerGpu: true\n  resumeAfter: 1s\n  handBackAfter: 10m\n");
  const std::string tag = "pause-a-" + std::to_string(::getpid());
  std::string id = Submit(grid_->Manifest("burn", {"burn", "30", "100", tag}));
  ASSERT_TRUE(grid_->WaitForLog(id, "burn step 2", 120000));
  const int job_pid = FindProcessWith(tag);
  ASSERT_GT(job_pid, 0) << "the job's process is not in /proc";
  const long before = CpuTicks(job_pid);
  ASSERT_TRUE(Await([&] { return CpuTicks(job_pid) > before; }, 5000)) << "the job burns CPU while not paused";

  // The game: a process of the owner's that NVML lists on GPU 0.
  auto game = Process::Start({"sleep", "600"}, grid_->root + "/game.err");
  ASSERT_TRUE(game);
  const auto appeared = Clock::now();
  SetGpuState("count 1\ngraphics 0 " + std::to_string(game->pid()) + " 2048\n");
  ASSERT_TRUE(Await([&] { return ProcState(job_pid) == 'T'; }, 10 * kPollMs + 3000))
      << "job not frozen; state " << ProcState(job_pid);
  const auto frozen_after = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - appeared);
  // Frozen: its CPU time does not move over several poll intervals.
  const long frozen_ticks = CpuTicks(job_pid);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // the window measured, not a synchronisation
  EXPECT_EQ(CpuTicks(job_pid), frozen_ticks) << "a frozen job burned CPU";

  const std::string reason = "process sleep (pid " + std::to_string(game->pid()) + ") uses GPU 0";
  auto paused = WaitNode(
      1, [&](const v1::Node& n) { return n.pause().paused(); }, 15000);
  ASSERT_TRUE(paused.ok()) << paused.status().message();
  const v1::Node* node = NodeById(*paused, grid_->node_ids[0]);
  EXPECT_TRUE(node->state() == "online" || node->state() == "late")
      << node->state() << ": a paused node is not suspect or lost";
  EXPECT_EQ(node->pause().cause(), "owner-gpu");
  EXPECT_EQ(node->pause().reason(), reason);
  EXPECT_FALSE(node->schedulable());
  EXPECT_EQ(node->unschedulable_reason(), "paused by its owner: " + reason);
  // The job's attempt is frozen (a readiness benchmark the appearing GPU
  // brought may be too).
  auto running = grid_->WaitJob(
      id, [](const v1::Job& j) { return j.tasks(0).attempts_size() == 1; }, 10000);
  ASSERT_TRUE(running.ok()) << running.status().ToString();
  const auto& frozen = node->pause().frozen_attempts();
  EXPECT_NE(std::find(frozen.begin(), frozen.end(), running->tasks(0).attempts(0).id()), frozen.end())
      << node->pause().DebugString();
  auto cli = grid_->Cli({"nodes", "--details"});
  EXPECT_NE(cli.out.find("owner pause: owner-gpu since"), std::string::npos) << cli.out;

  // The game exits: after resumeAfter (1 s) the job runs again.
  game->Signal(SIGKILL);
  game->Wait();
  SetGpuState("count 0\n");
  ASSERT_TRUE(Await([&] { return CpuTicks(job_pid) > frozen_ticks; }, 10000)) << "job not resumed";
  auto resumed = WaitNode(
      1, [](const v1::Node& n) { return !n.pause().paused() && n.pause().pauses() == 1; }, 15000);
  ASSERT_TRUE(resumed.ok()) << resumed.status().message();
  EXPECT_GE(NodeById(*resumed, grid_->node_ids[0])->pause().paused_ms_total(), 1000);

  auto done = grid_->WaitJob(
      id, [](const v1::Job& j) { return jobs::IsSettled(j); }, 120000);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  ASSERT_EQ(done->state(), v1::SUCCEEDED) << done->DebugString();
  EXPECT_EQ(done->tasks(0).attempts_size(), 1) << "frozen, not moved";
  std::string out_dir = grid_->root + "/fetched";
  auto f = grid_->Cli({"fetch", id, out_dir});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  EXPECT_EQ(ReadAll(out_dir + "/task-0/result.txt"), "burned 30 steps\n");
  std::printf("game on the GPU -> job frozen after %lld ms (poll %d ms)\n",
              static_cast<long long>(frozen_after.count()), kPollMs);
}

TEST_F(Pause, GpuAboveMaxTempPausesWithAThermalReasonAndResumesWhenCool) {
  StartAgentWithPolicy(1, "maxGpuTemp: 85\npauseWhen:\n  resumeAfter: 1s\n");
  const std::string tag = "pause-c-" + std::to_string(::getpid());
  std::string id = Submit(grid_->Manifest("burn", {"burn", "20", "100", tag}));
  ASSERT_TRUE(grid_->WaitForLog(id, "burn step 1", 120000));
  const int job_pid = FindProcessWith(tag);
  ASSERT_GT(job_pid, 0);

  SetGpuState("count 1\ntemperature 0 91\nthrottle 0 0x60\n");
  ASSERT_TRUE(Await([&] { return ProcState(job_pid) == 'T'; }, 10 * kPollMs + 3000)) << "not frozen when hot";
  auto hot = WaitNode(
      1, [](const v1::Node& n) { return n.pause().paused(); }, 15000);
  ASSERT_TRUE(hot.ok()) << hot.status().message();
  const v1::Node* node = NodeById(*hot, grid_->node_ids[0]);
  EXPECT_EQ(node->pause().cause(), "thermal");
  EXPECT_EQ(node->pause().reason(), "GPU 0 at 91 C, maxGpuTemp 85; throttled: sw-thermal, hw-thermal");
  EXPECT_EQ(node->pause().throttle_reasons(), 0x60u);

  SetGpuState("count 1\ntemperature 0 70\n");
  ASSERT_TRUE(Await([&] { return ProcState(job_pid) != 'T'; }, 10000)) << "not resumed when cool";
  SetGpuState("count 0\n");
  auto done = grid_->WaitJob(
      id, [](const v1::Job& j) { return jobs::IsSettled(j); }, 120000);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->state(), v1::SUCCEEDED) << done->DebugString();
}

TEST_F(Pause, ALongPauseCheckpointsAndHandsBackAndTheTaskFinishesElsewhere) {
  StartAgentWithPolicy(1, "pauseWhen:\n  ownerGpu: true\n  handBackAfter: 2s\n");
  auto before = WaitNode(
      1, [](const v1::Node& n) { return n.schedulable(); }, 120000);
  ASSERT_TRUE(before.ok()) << before.status().message();
  const int faults_before = NodeFaults(*NodeById(*before, grid_->node_ids[0]));
  ASSERT_GE(faults_before, 0) << NodeById(*before, grid_->node_ids[0])->reliability_detail();

  std::string id = Submit(grid_->Manifest(
      "counter", {"count", "40", "150"}, "retries: 0\nidempotent: true\ncheckpoint:\n  path: /ckpt\n  interval: 1s\n"));
  auto saved = grid_->WaitJob(id, [](const v1::Job& j) {
    return j.tasks(0).attempts_size() == 1 && j.tasks(0).attempts(0).checkpoints() >= 1;
  });
  ASSERT_TRUE(saved.ok()) << saved.status().ToString();

  auto game = Process::Start({"sleep", "600"}, grid_->root + "/game.err");
  ASSERT_TRUE(game);
  SetGpuState("count 1\ngraphics 0 " + std::to_string(game->pid()) + " 2048\n");
  auto handed = grid_->WaitJob(
      id,
      [](const v1::Job& j) {
        return j.tasks(0).attempts_size() >= 1 && j.tasks(0).attempts(0).failure_reason() == v1::HANDED_BACK;
      },
      30000);
  ASSERT_TRUE(handed.ok()) << handed.status().ToString();
  const auto& first = handed->tasks(0).attempts(0);
  EXPECT_NE(first.message().find("paused by its owner: process sleep"), std::string::npos) << first.message();

  // Another node takes it (the first stays paused), from the checkpoint.
  ASSERT_TRUE(grid_->StartAgent(2).ok());
  auto done = grid_->WaitJob(
      id, [](const v1::Job& j) { return jobs::IsSettled(j); }, 120000);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  ASSERT_EQ(done->state(), v1::SUCCEEDED) << done->DebugString();
  const auto& task = done->tasks(0);
  ASSERT_EQ(task.attempts_size(), 2);
  EXPECT_EQ(task.attempts(1).node_id(), grid_->node_ids[1]);
  EXPECT_EQ(task.attempts(1).restored_from_attempt(), first.id());

  // Not the node's fault: through a reliability refresh (every 10 s) no lost
  // or failed attempt may be counted against it. Waiting for one must time out.
  auto fell = WaitNode(
      1, [&](const v1::Node& n) { return NodeFaults(n) != faults_before; }, 12000);
  EXPECT_FALSE(fell.ok()) << "counted against the node: " << NodeById(*fell, grid_->node_ids[0])->reliability_detail();
  game->Signal(SIGKILL);
  game->Wait();
}

// A job on a (simulated) GPU with a checkpoint directory: when the owner's
// game appears, it is handed back at once — its last checkpoint saved, its
// VRAM free for the game — without waiting for handBackAfter (10 min here),
// and it finishes on another node from that checkpoint.
TEST_F(Pause, AGpuJobWithACheckpointIsHandedBackAtOnceAndResumesElsewhere) {
  const std::vector<std::string> gpu = {"--simulate-gpu", "RTX 4090:24GiB:8.9"};
  StartAgentWithPolicy(1, "pauseWhen:\n  ownerGpu: true\n  handBackAfter: 10m\n", gpu);
  const std::string id = SubmitCheckpointedGpuJob();
  ASSERT_FALSE(HasFailure()) << "the GPU job saved no checkpoint";

  auto game = Process::Start({"sleep", "600"}, grid_->root + "/game.err");
  ASSERT_TRUE(game);
  const auto appeared = Clock::now();
  SetGpuState("count 1\ngraphics 0 " + std::to_string(game->pid()) + " 2048\n");
  // handBackAfter is 10 min: a hand back inside this wait is the GPU rule's.
  auto handed = grid_->WaitJob(
      id,
      [](const v1::Job& j) {
        return j.tasks(0).attempts_size() >= 1 && j.tasks(0).attempts(0).failure_reason() == v1::HANDED_BACK;
      },
      60000);
  ASSERT_TRUE(handed.ok()) << handed.status().ToString();
  const auto handed_after = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - appeared);
  const auto& first = handed->tasks(0).attempts(0);
  EXPECT_NE(first.message().find("paused by its owner: process sleep"), std::string::npos) << first.message();

  ASSERT_TRUE(grid_->StartAgent(2, gpu).ok());
  auto done = grid_->WaitJob(
      id, [](const v1::Job& j) { return jobs::IsSettled(j); }, 120000);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  ASSERT_EQ(done->state(), v1::SUCCEEDED) << done->DebugString();
  const auto& task = done->tasks(0);
  ASSERT_EQ(task.attempts_size(), 2);
  EXPECT_EQ(task.attempts(1).node_id(), grid_->node_ids[1]);
  EXPECT_EQ(task.attempts(1).restored_from_attempt(), first.id());
  game->Signal(SIGKILL);
  game->Wait();
  std::printf("game on the GPU -> GPU job handed back after %lld ms (poll %d ms, handBackAfter 10 min)\n",
              static_cast<long long>(handed_after.count()), kPollMs);
}

// A display server holds the GPU all the time: ownerGpu looks past it (the
// reason names the game listed after it), and with only the display server
// left the node resumes.
TEST_F(Pause, ADisplayServerOnTheGpuDoesNotPauseTheNode) {
  StartAgentWithPolicy(1, "pauseWhen:\n  ownerGpu: true\n  resumeAfter: 1s\n");
  // A process whose /proc/PID/comm is "Xorg", as the owner's display server's is.
  const std::string xorg_bin = grid_->root + "/Xorg";
  ASSERT_EQ(RunCommand({"cp", "/bin/sleep", xorg_bin}).exit_code, 0);
  auto xorg = Process::Start({xorg_bin, "600"}, grid_->root + "/xorg.err");
  auto game = Process::Start({"sleep", "600"}, grid_->root + "/game.err");
  ASSERT_TRUE(xorg && game);
  SetGpuState("count 1\ngraphics 0 " + std::to_string(xorg->pid()) + " 512\ngraphics 0 " + std::to_string(game->pid()) +
              " 2048\n");
  auto paused = WaitNode(
      1, [](const v1::Node& n) { return n.pause().paused(); }, 15000);
  ASSERT_TRUE(paused.ok()) << paused.status().message();
  EXPECT_EQ(NodeById(*paused, grid_->node_ids[0])->pause().reason(),
            "process sleep (pid " + std::to_string(game->pid()) + ") uses GPU 0")
      << "Xorg, listed first, is not the owner's game";

  game->Signal(SIGKILL);
  game->Wait();
  SetGpuState("count 1\ngraphics 0 " + std::to_string(xorg->pid()) + " 512\n");
  auto resumed = WaitNode(
      1, [](const v1::Node& n) { return !n.pause().paused() && n.pause().pauses() == 1; }, 15000);
  ASSERT_TRUE(resumed.ok()) << "Xorg alone kept the node paused: " << resumed.status().message();
  xorg->Signal(SIGKILL);
  xorg->Wait();
}

// `idlegrid agent pause --for` pauses the node with cause owner-command and
// an end time, and expires by itself; `--gpu` holds back one GPU only; and
// `agent resume` ends a pause at once.
TEST_F(Pause, AgentPauseForExpiresAndPerGpuPauseHoldsOneDevice) {
  StartAgentWithPolicy(1, "{}\n", {"--simulate-gpu", "RTX 4090:24GiB:8.9", "--simulate-gpu", "RTX 3060:12GiB:8.6"});
  const std::string data_dir = grid_->AgentDataDir(1) + "/state";
  // Measured first (the CPU benchmark), so every reason below is the owner's.
  ASSERT_TRUE(WaitNode(
                  1, [](const v1::Node& n) { return n.schedulable(); }, 120000)
                  .ok());
  auto p = grid_->Cli({"agent", "pause", "--data-dir", data_dir, "--for", "3s"}, false);
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.out.find("node paused until"), std::string::npos) << p.out;
  auto paused = WaitNode(
      1, [](const v1::Node& n) { return n.pause().paused(); }, 15000);
  ASSERT_TRUE(paused.ok()) << paused.status().message();
  const v1::Node* node = NodeById(*paused, grid_->node_ids[0]);
  EXPECT_EQ(node->pause().cause(), "owner-command");
  EXPECT_EQ(node->pause().reason(), "the owner ran idlegrid agent pause --for 3s");
  EXPECT_GT(node->pause().until_ms(), node->pause().since_ms());
  EXPECT_FALSE(node->schedulable());
  // It ends by itself, and the file goes with it.
  auto expired = WaitNode(
      1, [](const v1::Node& n) { return !n.pause().paused() && n.pause().pauses() == 1; }, 20000);
  ASSERT_TRUE(expired.ok()) << "--for did not expire: " << expired.status().message();
  EXPECT_FALSE(std::filesystem::exists(data_dir + "/owner-pause"));

  // One GPU: held back with its reason, the node and its other GPU still offered.
  p = grid_->Cli({"agent", "pause", "--data-dir", data_dir, "--gpu", "1"}, false);
  ASSERT_EQ(p.exit_code, 0) << p.err;
  auto held = WaitNode(
      1,
      [](const v1::Node& n) { return n.gpus_size() == 2 && n.gpus(1).unavailable_reason().rfind("held back", 0) == 0; },
      15000);
  ASSERT_TRUE(held.ok()) << held.status().message();
  node = NodeById(*held, grid_->node_ids[0]);
  EXPECT_EQ(node->gpus(1).unavailable_reason(),
            "held back by its owner: paused: the owner ran idlegrid agent pause --gpu 1");
  EXPECT_EQ(node->gpus(0).unavailable_reason(), "");
  EXPECT_FALSE(node->pause().paused());
  EXPECT_TRUE(node->schedulable()) << node->unschedulable_reason();
  auto r = grid_->Cli({"agent", "resume", "--data-dir", data_dir}, false);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto back = WaitNode(
      1, [](const v1::Node& n) { return n.gpus_size() == 2 && n.gpus(1).unavailable_reason().empty(); }, 15000);
  ASSERT_TRUE(back.ok()) << "GPU 1 still held after resume: " << back.status().message();

  // No --for: until resumed, then at once (no resumeAfter wait).
  ASSERT_EQ(grid_->Cli({"agent", "pause", "--data-dir", data_dir}, false).exit_code, 0);
  ASSERT_TRUE(WaitNode(
                  1, [](const v1::Node& n) { return n.pause().paused(); }, 15000)
                  .ok());
  ASSERT_EQ(grid_->Cli({"agent", "resume", "--data-dir", data_dir}, false).exit_code, 0);
  ASSERT_TRUE(WaitNode(
                  1, [](const v1::Node& n) { return !n.pause().paused() && n.pause().pauses() == 2; }, 15000)
                  .ok());
  auto bad = grid_->Cli({"agent", "pause", "--data-dir", data_dir, "--for", "soon"}, false);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--for soon"), std::string::npos) << bad.err;
}

// `agent pause --gpu 0` on a node whose GPU job has a checkpoint: that job
// is handed back and finishes elsewhere from its checkpoint, while the node
// itself stays unpaused.
TEST_F(Pause, APerGpuPauseHandsBackTheJobOnThatGpu) {
  const std::vector<std::string> gpu = {"--simulate-gpu", "RTX 4090:24GiB:8.9"};
  StartAgentWithPolicy(1, "{}\n", gpu);
  const std::string id = SubmitCheckpointedGpuJob();
  ASSERT_FALSE(HasFailure()) << "the GPU job saved no checkpoint";
  auto p = grid_->Cli({"agent", "pause", "--data-dir", grid_->AgentDataDir(1) + "/state", "--gpu", "0"}, false);
  ASSERT_EQ(p.exit_code, 0) << p.err;
  auto handed = grid_->WaitJob(
      id,
      [](const v1::Job& j) {
        return j.tasks(0).attempts_size() >= 1 && j.tasks(0).attempts(0).failure_reason() == v1::HANDED_BACK;
      },
      60000);
  ASSERT_TRUE(handed.ok()) << handed.status().ToString();
  const auto& first = handed->tasks(0).attempts(0);
  EXPECT_EQ(first.message(),
            "handed back by the node: paused by its owner: the owner ran idlegrid agent pause --gpu 0");
  auto nodes = WaitNode(
      1, [](const v1::Node&) { return true; }, 10000);
  ASSERT_TRUE(nodes.ok()) << nodes.status().message();
  EXPECT_FALSE(NodeById(*nodes, grid_->node_ids[0])->pause().paused()) << "one GPU paused, not the node";

  ASSERT_TRUE(grid_->StartAgent(2, gpu).ok());
  auto done = grid_->WaitJob(
      id, [](const v1::Job& j) { return jobs::IsSettled(j); }, 120000);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  ASSERT_EQ(done->state(), v1::SUCCEEDED) << done->DebugString();
  ASSERT_EQ(done->tasks(0).attempts_size(), 2);
  EXPECT_EQ(done->tasks(0).attempts(1).node_id(), grid_->node_ids[1]) << "not back on the paused GPU";
  EXPECT_EQ(done->tasks(0).attempts(1).restored_from_attempt(), first.id());
}

}  // namespace
}  // namespace idlegrid::testing
