// Pilots (runtime/pilot_pool.h) against real runc: tasks of one sandbox group
// share a sandbox, nothing one task leaves reaches the next, outputs land in
// each attempt's own directory, the sandbox is the one a container of its own
// gives, and a stopped task takes its pilot with it. Runs as root and again,
// rootless, inside RuncRuntimeTest.RootlessRunOfThisSuite.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "common/fs.h"
#include "image/oci_builder.h"
#include "image/rootfs_unpack.h"
#include "runtime/pilot_protocol.h"
#include "runtime/run_support.h"
#include "runtime/runc_runtime.h"
#include "runtime/subprocess.h"

namespace idlegrid::runtime {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class PilotTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    work_dir_ = std::filesystem::temp_directory_path() / ("igpilot-" + std::to_string(::getpid()));
    if (!MakeDirs(work_dir_, 0755).ok()) {
      skip_reason_ = "cannot create " + work_dir_;
      return;
    }
    Result<std::string> probe = ReadFile(SandboxProbePath());
    if (!probe.ok()) {
      skip_reason_ = "the sandbox probe was not built: " + probe.status().message();
      return;
    }
    Result<image::BuiltImage> built =
        image::BuildOciArchive({{"/probe", *probe, 0755}}, {"/probe"}, "idlegrid-pilot-test", work_dir_ + "/image.tar");
    if (!built.ok()) {
      skip_reason_ = "cannot build the probe image: " + built.status().ToString();
      return;
    }
    archive_ = built->archive_path;
    image_id_ = built->config_digest.substr(7);
    runtime_ = NewRuntime("").release();
    if (runtime_->Runtimes().empty()) skip_reason_ = "runc runtime unusable here";
  }

  static void TearDownTestSuite() {
    delete runtime_;
    runtime_ = nullptr;
    if (!work_dir_.empty()) (void)image::RemoveUnpackedTree(work_dir_);
  }

  static std::unique_ptr<ContainerRuntime> NewRuntime(const std::string& suffix,
                                                      milliseconds linger = std::chrono::minutes(5)) {
    RuncRuntimeOptions options;
    options.state_dir = work_dir_ + "/state" + suffix;
    options.bundles_dir = work_dir_ + "/bundles" + suffix;
    options.pilot_linger = linger;
    auto runtime = NewRuncRuntime(options);
    EXPECT_TRUE(runtime->LoadImage(archive_, image_id_).ok());
    return runtime;
  }

  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
  }

  // A task of sandbox group `group` (its own output directory).
  RunSpec Task(const std::string& group, std::vector<std::string> args) {
    const std::string n = std::to_string(next_id_++);
    RunSpec spec;
    spec.container_name = std::string(kRuncContainerPrefix) + "p" + std::to_string(::getpid()) + "-" + n;
    spec.image_id = image_id_;
    spec.args = std::move(args);
    spec.sandbox_group = group;
    const std::string out = work_dir_ + "/out-" + n;
    EXPECT_TRUE(MakeDirs(out, 0777).ok());
    spec.mounts = {{out, "/out", false, ""}};
    spec.resources.set_memory_bytes(256 << 20);
    spec.resources.set_pids(40);
    spec.resources.set_disk_bytes(16 << 20);
    spec.env = {{"IG_VALUE", "v"}};
    return spec;
  }

  // Containers runc knows under `runtime`'s state directory (pilots included).
  static std::vector<std::string> RuncContainers(const std::string& suffix) {
    const std::string runc = ::access("/usr/sbin/runc", X_OK) == 0 ? "/usr/sbin/runc" : "runc";
    Result<CommandOutput> list = RunCommand({runc, "--root", work_dir_ + "/state" + suffix, "list", "-q"}, seconds(30));
    EXPECT_TRUE(list.ok() && list->exit_code == 0);
    std::vector<std::string> names;
    std::istringstream in(list.ok() ? list->stdout_text : "");
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) names.push_back(line);
    }
    return names;
  }

  static inline std::string skip_reason_, work_dir_, image_id_, archive_;
  static inline ContainerRuntime* runtime_ = nullptr;
  static inline int next_id_ = 0;
};

TEST_F(PilotTest, TasksOfOneGroupShareASandboxAndNothingOneLeavesReachesTheNext) {
  RunSpec first = Task("share", {"leave", "first"});
  Outcome a = MustRun(runtime_, first);
  ASSERT_EQ(a.exit.exit_code, 0) << a.out << a.err << a.exit.error;
  EXPECT_EQ(a.out, "left first\n");
  RunSpec second = Task("share", {"look"});
  Outcome b = MustRun(runtime_, second);
  ASSERT_EQ(b.exit.exit_code, 0) << b.out << b.err << b.exit.error;
  auto r = ProbeReport(b.out);
  EXPECT_EQ(r["pid1"], "pilot") << "the second task ran in the first one's pilot";
  EXPECT_EQ(r["tmp_left"], "no");
  EXPECT_EQ(r["shm_left"], "no");
  EXPECT_EQ(r["ipc_left"], "0") << "SysV IPC objects are removed between tasks";
  EXPECT_EQ(r["other_processes"], "0") << "the daemon the first task left was killed";
  EXPECT_EQ(r["out_files"], "0") << "outputs never reach the next task, and /out is usable again";
  // Each attempt's outputs are in its own directory.
  Result<std::string> left = ReadFile(first.mounts[0].host_path + "/first");
  ASSERT_TRUE(left.ok()) << left.status().ToString();
  EXPECT_EQ(*left, "first");
  EXPECT_TRUE(std::filesystem::is_empty(second.mounts[0].host_path));
  // One pilot ran both; the runtime does not report it as a leftover.
  auto names = RuncContainers("");
  EXPECT_EQ(std::count_if(names.begin(), names.end(), [](const std::string& n) { return n.find("pilot") != n.npos; }),
            1);
  auto listed = runtime_->ListContainers();
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty()) << (listed->empty() ? "" : (*listed)[0]);
  // Another group gets a sandbox of its own.
  Outcome c = MustRun(runtime_, Task("other", {"look"}));
  EXPECT_EQ(ProbeReport(c.out)["pid1"], "pilot");
  EXPECT_EQ(RuncContainers("").size(), 2u);
}

// Probe report keys that legitimately differ between a pilot and a container
// of the task's own.
const std::map<std::string, std::string> kPilotDifferences = {
    {"env.HOSTNAME", "the host is named after the pilot, not the attempt"},
    {"rlimit.NPROC", "one more: the pilot is a process of the sandbox too"},
    {"forks", "follows rlimit.NPROC"},
    {"pid", "the pilot is PID 1; the task is its child"},
};

TEST_F(PilotTest, SameSandboxAsAContainerOfItsOwn) {
  RunSpec own = Task("", {});
  RunSpec piloted = Task("same", {});
  Outcome a = MustRun(runtime_, own);
  Outcome b = MustRun(runtime_, piloted);
  ASSERT_EQ(a.exit.exit_code, 0) << a.out << a.err << a.exit.error;
  ASSERT_EQ(b.exit.exit_code, 0) << b.out << b.err << b.exit.error;
  auto ra = ProbeReport(a.out), rb = ProbeReport(b.out);
  ASSERT_GT(ra.size(), 40u) << a.out;
  EXPECT_EQ(rb["env.HOSTNAME"].rfind("idlegrid-pilot-", 0), 0u) << rb["env.HOSTNAME"];
  std::set<std::string> keys;
  for (const auto& [k, v] : ra) keys.insert(k);
  for (const auto& [k, v] : rb) keys.insert(k);
  for (const std::string& k : keys) {
    const std::string va = ra.count(k) ? ra[k] : "<absent>", vb = rb.count(k) ? rb[k] : "<absent>";
    if (kPilotDifferences.count(k)) {
      std::cout << "  may differ: " << k << ": own=" << va << " pilot=" << vb << "\n";
      continue;
    }
    EXPECT_EQ(va, vb) << k << " differs (own container vs pilot)";
  }
}

size_t Pilots(const std::vector<std::string>& names) {
  return std::count_if(names.begin(), names.end(), [](const std::string& n) { return n.find("pilot") != n.npos; });
}

TEST_F(PilotTest, ExitCodesAndExecFailuresKeepThePilot) {
  const size_t before = Pilots(RuncContainers(""));
  Outcome a = MustRun(runtime_, Task("codes", {"exit", "7"}));
  EXPECT_EQ(a.exit.exit_code, 7);
  EXPECT_TRUE(a.exit.error.empty()) << a.exit.error;
  RunSpec missing = Task("codes", {});
  missing.command = {"/no/such/program"};
  missing.args.clear();
  // The command is not part of the key: the same pilot runs it.
  Outcome b = MustRun(runtime_, missing);
  EXPECT_NE(b.exit.error.find("/no/such/program"), std::string::npos) << b.exit.error;
  Outcome c = MustRun(runtime_, Task("codes", {"echo", "x y"}));
  EXPECT_EQ(c.exit.exit_code, 3);
  EXPECT_EQ(c.out, "[x y]\n");
  EXPECT_EQ(c.err, "to-stderr\n");
  EXPECT_EQ(Pilots(RuncContainers("")), before + 1) << "one pilot ran all three: a failed exec does not cost it";
}

// The pilot measures each task's CPU time (its processes, waited for by the
// pilot as their init) and reports it with the exit: the receipt's
// cpu_millis under cpu_source "rusage". The next task in the same sandbox is
// measured from zero.
TEST_F(PilotTest, EachTasksCpuTimeIsMeasuredByThePilot) {
  Outcome spin = MustRun(runtime_, Task("cpu", {"spin", "300"}));
  EXPECT_EQ(spin.exit.exit_code, 0) << spin.out << spin.err;
  EXPECT_EQ(spin.exit.cpu_source, "rusage");
  EXPECT_GE(spin.exit.cpu_usec, 280'000u) << "300 ms of CPU burnt by a child of the task";
  EXPECT_LT(spin.exit.cpu_usec, 5'000'000u);
  Outcome idle = MustRun(runtime_, Task("cpu", {"exit", "0"}));
  EXPECT_EQ(idle.exit.cpu_source, "rusage");
  EXPECT_LT(idle.exit.cpu_usec, 150'000u) << "the previous task's CPU is not counted again";
}

TEST_F(PilotTest, ATimedOutTaskTakesItsPilotAndTheNextTaskGetsAFreshOne) {
  auto runtime = NewRuntime("-timeout");
  Outcome first = MustRun(runtime.get(), Task("slow", {"exit", "0"}));
  EXPECT_EQ(first.exit.exit_code, 0);
  const std::vector<std::string> before = RuncContainers("-timeout");
  ASSERT_EQ(before.size(), 1u);
  Outcome slow = MustRun(runtime.get(), Task("slow", {"sleep", "60"}), seconds(1));
  EXPECT_TRUE(slow.exit.timed_out);
  EXPECT_LT(slow.took, seconds(20));
  EXPECT_TRUE(RuncContainers("-timeout").empty()) << "the pilot went with its task";
  Outcome next = MustRun(runtime.get(), Task("slow", {"exit", "0"}));
  EXPECT_EQ(next.exit.exit_code, 0);
  auto now = RuncContainers("-timeout");
  ASSERT_EQ(now.size(), 1u);
  EXPECT_NE(now[0], before[0]);
}

TEST_F(PilotTest, KillFromAnotherThreadStopsTheTaskAndItsPilot) {
  auto runtime = NewRuntime("-kill");
  RunSpec spec = Task("kill", {"sleep", "60"});
  std::atomic<bool> started{false};
  std::thread killer([&] {
    while (!started) std::this_thread::yield();
    EXPECT_TRUE(runtime->Kill(spec.container_name).ok());
  });
  Outcome o = MustRun(runtime.get(), spec, seconds(60), [&] { started = true; });
  killer.join();
  EXPECT_TRUE(o.exit.killed);
  EXPECT_LT(o.took, seconds(20));
  EXPECT_TRUE(RuncContainers("-kill").empty());
}

// While a task runs, what it writes is in the pilot's directory, not yet in
// the attempt's: the runtime names that directory so the agent's disk
// watcher (agent/output_watch.h) can measure it, and names nothing once the
// task's files are back in the attempt's own directory.
TEST_F(PilotTest, WhileATaskRunsTheRuntimeNamesWhereItsOutputsAre) {
  auto runtime = NewRuntime("-live");
  RunSpec spec = Task("live", {"write", "progress", "60"});
  const std::string own = spec.mounts[0].host_path;
  std::vector<std::string> live_at_start, live_once_written;
  bool in_live_dir = false, in_own_dir = true;
  Result<ExitInfo> r = runtime->Run(
      spec,
      [&](const std::string& stream, std::string_view data) {
        if (stream != "stdout" || data.find("written") == std::string_view::npos) return;
        live_once_written = runtime->LiveWritableDirs(spec.container_name);
        in_live_dir = live_once_written.size() == 1 && PathExists(live_once_written[0] + "/progress");
        in_own_dir = PathExists(own + "/progress");
        EXPECT_TRUE(runtime->Kill(spec.container_name).ok());
      },
      seconds(60), [&] { live_at_start = runtime->LiveWritableDirs(spec.container_name); });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->killed);
  ASSERT_EQ(live_at_start.size(), 1u) << "one writable mount, one pilot directory";
  EXPECT_NE(live_at_start[0], own);
  EXPECT_EQ(live_once_written, live_at_start);
  EXPECT_TRUE(in_live_dir) << "the task's file was not where the runtime said";
  EXPECT_FALSE(in_own_dir);
  // Over: nothing is live, and what the task wrote is the attempt's.
  EXPECT_TRUE(runtime->LiveWritableDirs(spec.container_name).empty());
  EXPECT_TRUE(PathExists(own + "/progress"));
}

TEST_F(PilotTest, IdlePilotsRetireAfterTheLingerAndWithTheRuntime) {
  {
    auto runtime = NewRuntime("-linger", milliseconds(300));
    Outcome o = MustRun(runtime.get(), Task("linger", {"exit", "0"}));
    EXPECT_EQ(o.exit.exit_code, 0);
    // Awaits the retirement: bounded, polled on runc's own list.
    const auto deadline = std::chrono::steady_clock::now() + seconds(20);
    while (!RuncContainers("-linger").empty() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(50));
    }
    EXPECT_TRUE(RuncContainers("-linger").empty()) << "an idle pilot outlived its linger";
  }
  auto runtime = NewRuntime("-end");
  Outcome o = MustRun(runtime.get(), Task("end", {"exit", "0"}));
  EXPECT_EQ(RuncContainers("-end").size(), 1u);
  runtime.reset();
  EXPECT_TRUE(RuncContainers("-end").empty()) << "destroying the runtime ends its pilots";
}

TEST_F(PilotTest, InputsAreSharedReadOnlyAndAnotherContentIsAnotherSandbox) {
  const std::string input = work_dir_ + "/input-a";
  ASSERT_TRUE(WriteFileAtomic(input, "data", 0444).ok());
  RunSpec spec = Task("inputs", {"look"});
  spec.mounts.push_back({input, "/in/data", true, "sha256:a"});
  Outcome o = MustRun(runtime_, spec);
  EXPECT_EQ(o.exit.exit_code, 0) << o.err << o.exit.error;
  RunSpec same = Task("inputs", {"look"});
  same.mounts.push_back({input, "/in/data", true, "sha256:a"});
  RunSpec other = Task("inputs", {"look"});
  other.mounts.push_back({input, "/in/data", true, "sha256:b"});
  EXPECT_EQ(PilotKey(spec), PilotKey(same));
  EXPECT_NE(PilotKey(spec), PilotKey(other));
  const size_t before = RuncContainers("").size();
  MustRun(runtime_, same);
  EXPECT_EQ(RuncContainers("").size(), before);
  MustRun(runtime_, other);
  EXPECT_EQ(RuncContainers("").size(), before + 1);
}

}  // namespace
}  // namespace idlegrid::runtime
