// The hostile-job battery (issue 12): a static probe (hostile_probe.c) runs
// as ordinary jobs through a real coordinator and agent, under each driver
// the agent has, and tries to get out. A probe that escapes fails here.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "common/probe_report.h"
#include "e2e/harness.h"
#include "jobs/task_state.h"

namespace idlegrid::testing {
namespace {

// The probe image, built once per test binary; its archive path.
std::string HostileArchive() {
  static std::string archive;
  if (!archive.empty()) return archive;
  const std::string out = "/tmp/igtest-hostile-" + std::to_string(::getpid()) + ".tar";
  CmdResult r = RunCommand({std::string(IDLEGRID_SOURCE_DIR) + "/scripts/build-image.sh",
                            std::string(IDLEGRID_SOURCE_DIR) + "/tests/e2e/hostile_probe.c",
                            "localhost/igtest-hostile:" + std::to_string(::getpid()), out});
  if (r.exit_code != 0) {
    std::fprintf(stderr, "[hostile] building the probe image failed: %s%s\n", r.out.c_str(), r.err.c_str());
    return "";
  }
  archive = out;
  return archive;
}

class HostileJobs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
    grid_ = std::make_unique<Grid>(::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(grid_->StartCoordinator().ok());
    const std::string archive = HostileArchive();
    ASSERT_FALSE(archive.empty());
    CmdResult push = grid_->Cli({"image", "push", archive});
    ASSERT_EQ(push.exit_code, 0) << push.err;
    image_ = Trim(push.out);
  }

  void StartAgent(const std::vector<std::string>& extra = {}) {
    Status st = grid_->StartAgent(1, extra);
    ASSERT_TRUE(st.ok()) << st.message();
  }

  std::string Manifest(const std::string& name, const std::vector<std::string>& args, const std::string& extra = "",
                       const std::string& resources = "") {
    std::ostringstream y;
    y << "apiVersion: idlegrid/v1\nname: " << name << "\nimage: hostile@" << image_ << "\ncommand: [\"/sim\"]\nargs: [";
    for (size_t i = 0; i < args.size(); ++i) y << (i ? ", " : "") << "\"" << args[i] << "\"";
    y << "]\nresources:\n  cpu: 500m\n  memory: 256Mi\n  pids: 64\n" << resources << "output: /out\n" << extra;
    return grid_->WriteFile(name + ".yaml", y.str());
  }

  std::string Submit(const std::string& manifest) {
    CmdResult r = grid_->Cli({"submit", manifest, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    v1::Job job;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &job).ok()) << r.out;
    return job.id();
  }

  v1::Job Finished(const std::string& id, int timeout_ms = 180'000) {
    Result<v1::Job> job = grid_->WaitJob(
        id, [](const v1::Job& j) { return j.state() == v1::SUCCEEDED || j.state() == v1::FAILED; }, timeout_ms);
    EXPECT_TRUE(job.ok()) << job.status().message();
    return job.ok() ? *job : v1::Job();
  }

  std::string Logs(const std::string& id) {
    CmdResult r = grid_->Cli({"logs", id});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }

  uid_t AgentUid() {
    const passwd* pw = ::getpwnam(grid_->AgentUser(1).c_str());
    return pw ? pw->pw_uid : ::getuid();
  }

  // Runs the battery as one job and checks every probe was contained.
  void RunBattery(const std::string& extra) {
    const std::string id = Submit(Manifest("battery", {"battery"}, extra));
    const v1::Job job = Finished(id);
    ASSERT_EQ(job.state(), v1::SUCCEEDED) << job.DebugString();
    const std::string logs = Logs(id);
    const std::map<std::string, std::string> lines = ProbeReport(logs);
    int contained = 0;
    for (const auto& [key, value] : lines) {
      if (key.rfind("probe.", 0) != 0) continue;
      EXPECT_EQ(value.rfind("contained", 0), 0u) << key << "=" << value;
      contained += value.rfind("contained", 0) == 0;
    }
    ASSERT_TRUE(lines.count("probes")) << logs;
    EXPECT_GE(std::stoi(lines.at("probes")), 40) << logs;
    EXPECT_EQ(contained, std::stoi(lines.at("probes"))) << logs;
    // The job user owns nothing of the agent's: not root inside, and on the
    // host neither root nor the agent's own uid.
    if (::geteuid() == 0) {
      EXPECT_NE(lines.at("uid"), "0") << logs;
      const long host_uid = std::stol(lines.at("host_uid"));
      EXPECT_NE(host_uid, 0) << logs;
      EXPECT_NE(host_uid, static_cast<long>(AgentUid())) << logs;
    }
    std::fprintf(stderr, "[hostile] %s: %d probes contained, job uid %s = host uid %s\n", extra.c_str(), contained,
                 lines.at("uid").c_str(), lines.at("host_uid").c_str());
  }

  std::unique_ptr<Grid> grid_;
  std::string image_;
};

TEST_F(HostileJobs, EveryProbeIsContainedUnderTheRuncDriver) {
  ASSERT_NO_FATAL_FAILURE(StartAgent({"--driver", "auto"}));
  RunBattery("");
}

TEST_F(HostileJobs, EveryProbeIsContainedUnderPodman) {
  ASSERT_NO_FATAL_FAILURE(StartAgent({"--driver", "podman"}));
  RunBattery("");
}

TEST_F(HostileJobs, EveryProbeIsContainedUnderGvisorWhereTheHostCanCapIt) {
  ASSERT_NO_FATAL_FAILURE(StartAgent({"--driver", "podman"}));
  // runsc needs a memory cgroup (gVisor ignores RLIMIT_DATA): a node that
  // cannot cap it refuses runsc, and the scheduler never sends it there.
  Result<v1::ListNodesResponse> nodes =
      grid_->WaitNodes([](const v1::ListNodesResponse& r) { return r.nodes_size() == 1; });
  ASSERT_TRUE(nodes.ok());
  const v1::NodeInfo& info = nodes->nodes(0).info();
  const bool has_runsc = std::find(info.runtimes().begin(), info.runtimes().end(), "runsc") != info.runtimes().end();
  const std::string& why_not = info.enforcement().runsc_unavailable();
  // The node says why; a node that cannot must say something.
  EXPECT_EQ(why_not.empty(), has_runsc && info.enforcement().memory() == "cgroup") << why_not;
  if (!why_not.empty()) GTEST_SKIP() << "gVisor cannot run here: " << why_not;
  RunBattery("runtime: runsc\n");
}

TEST_F(HostileJobs, FloodsBombsDaemonsAndOddOutputsEndContainedAndTheNodeStaysClean) {
  ASSERT_NO_FATAL_FAILURE(StartAgent({"--driver", "auto"}));
  const auto start = std::chrono::steady_clock::now();
  const std::string fork = Submit(Manifest("forkbomb", {"forkbomb"}));
  const std::string mem = Submit(Manifest("membomb", {"membomb"}));
  const std::string disk =
      Submit(Manifest("diskflood", {"diskflood"}, "runTimeout: 5m\n", "  maxFileSize: 64Mi\n  disk: 256Mi\n"));
  const std::string log = Submit(Manifest("logflood", {"logflood", "48"}));
  const std::string daemon = Submit(Manifest("daemon", {"daemon"}));
  const std::string noterm = Submit(Manifest("noterm", {"noterm"}, "runTimeout: 5s\n"));
  const std::string specials = Submit(Manifest("specials", {"specials"}));
  const std::string many = Submit(Manifest("manyfiles", {"manyfiles", "2000"}));

  // A fork bomb stops at the pids cap.
  const v1::Job f = Finished(fork);
  const std::string fork_logs = Logs(fork);
  const std::map<std::string, std::string> forks = ProbeReport(fork_logs);
  ASSERT_TRUE(forks.count("forks")) << "logs:\n" << fork_logs << "\njob:\n" << f.DebugString();
  EXPECT_LE(std::stoi(forks.at("forks")), 64);

  // A memory bomb cannot take more than its 256Mi.
  const v1::Job m = Finished(mem);
  EXPECT_EQ(m.state(), v1::FAILED);
  const std::string mem_logs = Logs(mem);
  EXPECT_NE(mem_logs.find("malloc failed after"), std::string::npos) << mem_logs;
  EXPECT_EQ(mem_logs.find("allocated"), std::string::npos) << mem_logs;

  // A disk flood is stopped by the per-file or the total cap.
  const v1::Job d = Finished(disk);
  EXPECT_EQ(d.state(), v1::FAILED);
  const std::string disk_logs = Logs(disk);
  EXPECT_TRUE(d.tasks(0).failure_reason() == v1::DISK_LIMIT || disk_logs.find("File too large") != std::string::npos)
      << jobs::ReasonName(d.tasks(0).failure_reason()) << "\n"
      << disk_logs;

  // A log flood is kept to the log cap (head and tail).
  const v1::Job l = Finished(log);
  EXPECT_EQ(l.state(), v1::SUCCEEDED);
  EXPECT_LT(Logs(log).size(), size_t{12} << 20);

  // A daemon left behind does not keep the job (or its container) alive.
  const v1::Job dm = Finished(daemon);
  EXPECT_EQ(dm.state(), v1::SUCCEEDED);

  // SIGTERM ignored: killed at runTimeout.
  const v1::Job n = Finished(noterm);
  EXPECT_EQ(n.state(), v1::FAILED);
  EXPECT_EQ(n.tasks(0).failure_reason(), v1::RUN_TIMEOUT) << jobs::ReasonName(n.tasks(0).failure_reason());

  // Links, fifos, sockets and hidden files in outputs: only regular files
  // leave the node, links are never followed, nothing stays behind.
  const v1::Job s = Finished(specials);
  ASSERT_EQ(s.state(), v1::SUCCEEDED) << s.DebugString();
  std::set<std::string> outputs;
  for (const v1::OutputFile& o : s.tasks(0).attempts(0).outputs()) outputs.insert(o.path());
  EXPECT_TRUE(outputs.count("ok.txt"));
  EXPECT_TRUE(outputs.count("private/inside.txt")) << "a directory the job hid is the agent's again";
  for (const char* never : {"passwd-link", "root-link", "fifo", "socket"}) {
    EXPECT_EQ(outputs.count(never), 0u) << never;
  }

  // Many small files: collected, or refused with a reason; either way the job ends.
  const v1::Job mf = Finished(many);
  EXPECT_TRUE(mf.state() == v1::SUCCEEDED || !mf.tasks(0).message().empty()) << mf.DebugString();

  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "[hostile] 8 hostile jobs ended in %.1f s\n", seconds);
  EXPECT_LT(seconds, 170) << "a daemon or an ignored SIGTERM held a job";

  // The node is still usable, and no attempt left files or containers.
  const v1::Job after = Finished(Submit(Manifest("after", {"battery"})));
  EXPECT_EQ(after.state(), v1::SUCCEEDED);
  const std::string attempts = grid_->AgentDataDir(1) + "/state/attempts";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(attempts, ec)) {
    ADD_FAILURE() << entry.path() << " left behind";
  }
  Result<std::vector<std::string>> containers = AgentContainers(*grid_, 1);
  ASSERT_TRUE(containers.ok()) << containers.status().message();
  EXPECT_TRUE(containers->empty()) << containers->front();
}

}  // namespace
}  // namespace idlegrid::testing
