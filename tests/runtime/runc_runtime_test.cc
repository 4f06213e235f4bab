// RuncRuntime against real runc, on a FROM scratch image holding the static
// sandbox probe (tests/runtime/sandbox_probe.c), and the "same sandbox" check:
// the probe's report under RuncRuntime and under PodmanRuntime must agree.
// Skipped (each test saying why) when runc, podman or the probe is missing.
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "common/fs.h"
#include "image/oci_builder.h"
#include "image/rootfs_unpack.h"
#include "runtime/enforcement_probe.h"
#include "runtime/podman_runtime.h"
#include "runtime/runc_host.h"
#include "runtime/runc_runtime.h"
#include "runtime/subprocess.h"
#include "runtime/run_support.h"

namespace idlegrid::runtime {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Set in the child that RootlessSameSandbox starts as an unprivileged user.
constexpr char kAsUserEnv[] = "IDLEGRID_RUNC_TEST_AS_USER";
constexpr char kTestUser[] = "igtest-runc";

TEST(RuncLogErrorsTest, KeepsOnlyErrorAndFatalMessages) {
  const std::string log =
      "{\"level\":\"warning\",\"msg\":\"ignored\",\"time\":\"t\"}\n"
      "{\"level\":\"error\",\"msg\":\"mount \\\"/x\\\": no such file\",\"time\":\"t\"}\n"
      "not json\n"
      "{\"level\":\"fatal\",\"msg\":\"boom\"}";
  EXPECT_EQ(RuncLogErrors(log), "mount \"/x\": no such file; boom");
  EXPECT_EQ(RuncLogErrors(""), "");
}

class RuncRuntimeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    skip_reason_ = Prepare();
    if (!skip_reason_.empty()) return;
    runtime_ = NewRuncRuntime(Options()).release();
    if (runtime_->Runtimes().empty()) {
      RunSpec probe_spec;
      probe_spec.container_name = "idlegrid-x";
      probe_spec.image_id = image_id_;
      skip_reason_ = "runc runtime unusable: " + runtime_->Run(probe_spec, {}, seconds(1), {}).status().message();
    }
  }

  static void TearDownTestSuite() {
    delete runtime_;
    runtime_ = nullptr;
    if (!work_dir_.empty()) (void)image::RemoveUnpackedTree(work_dir_);
  }

  static RuncRuntimeOptions Options(const std::string& suffix = "") {
    RuncRuntimeOptions options;
    options.state_dir = work_dir_ + "/state" + suffix;
    options.bundles_dir = work_dir_ + "/bundles" + suffix;
    return options;
  }

  // Builds the probe image as an OCI archive (no podman needed). Returns why
  // the tests must be skipped, or "".
  static std::string Prepare() {
    work_dir_ = std::filesystem::temp_directory_path() / ("igrunc-" + std::to_string(::getpid()));
    if (!MakeDirs(work_dir_, 0755).ok()) return "cannot create " + work_dir_;
    Result<std::string> probe = ReadFile(SandboxProbePath());
    if (!probe.ok()) return "the sandbox probe was not built: " + probe.status().message();
    Result<image::BuiltImage> built =
        image::BuildOciArchive({{"/probe", *probe, 0755}}, {"/probe"}, "idlegrid-runc-test", work_dir_ + "/image.tar");
    if (!built.ok()) return "cannot build the probe image: " + built.status().ToString();
    archive_ = built->archive_path;
    image_id_ = built->config_digest.substr(7);
    return "";
  }

  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
    Status load = runtime_->LoadImage(archive_, image_id_);
    ASSERT_TRUE(load.ok()) << load.ToString();
    const std::string n = std::to_string(next_id_);
    out_dir_ = work_dir_ + "/out-" + n;
    in_dir_ = work_dir_ + "/in-" + n;
    ASSERT_TRUE(MakeDirs(out_dir_, 0777).ok());
    ASSERT_TRUE(MakeDirs(in_dir_, 0777).ok());
  }

  RunSpec Spec(std::vector<std::string> args) {
    RunSpec spec;
    spec.container_name =
        std::string(kRuncContainerPrefix) + "t" + std::to_string(::getpid()) + "-" + std::to_string(next_id_++);
    spec.image_id = image_id_;
    spec.args = std::move(args);
    spec.mounts = {{out_dir_, "/out", false, ""}, {in_dir_, "/in", true, ""}};
    spec.resources.set_memory_bytes(256 << 20);
    spec.resources.set_pids(40);
    spec.resources.set_disk_bytes(16 << 20);
    return spec;
  }

  static inline std::string skip_reason_, work_dir_, image_id_, archive_;
  static inline ContainerRuntime* runtime_ = nullptr;
  static inline int next_id_ = 0;
  std::string out_dir_, in_dir_;
};

TEST_F(RuncRuntimeTest, LoadImageUnpacksOnceAndChecksTheId) {
  EXPECT_TRUE(runtime_->HasImage(image_id_));
  EXPECT_TRUE(runtime_->LoadImage(archive_, image_id_).ok());  // already there: at once
  std::string other = image_id_;
  other[0] = other[0] == '0' ? '1' : '0';
  EXPECT_FALSE(runtime_->HasImage(other));
  EXPECT_EQ(runtime_->LoadImage(archive_, other).code(), Code::kDataLoss);
  EXPECT_FALSE(runtime_->HasImage(other));
  EXPECT_EQ(runtime_->LoadImage(work_dir_ + "/missing.tar", image_id_).code(), Code::kNotFound);
  EXPECT_EQ(runtime_->LoadImage(archive_, "../" + image_id_).code(), Code::kInvalidArgument);
  EXPECT_FALSE(runtime_->HasImage("--help"));

  // A fresh runtime, three concurrent loads of one image: all succeed.
  std::unique_ptr<ContainerRuntime> fresh = NewRuncRuntime(Options("-fresh"));
  Status results[3];
  std::vector<std::thread> threads;
  for (Status& r : results) threads.emplace_back([&] { r = fresh->LoadImage(archive_, image_id_); });
  for (auto& t : threads) t.join();
  for (const Status& r : results) EXPECT_TRUE(r.ok()) << r.ToString();
  EXPECT_TRUE(fresh->HasImage(image_id_));
}

TEST_F(RuncRuntimeTest, StreamsExitCodeArgsAndOutput) {
  bool started = false;
  RunSpec spec = Spec({"echo", "--rm", "a b", "$(id)"});
  Outcome o = MustRun(runtime_, spec, seconds(30), [&] { started = true; });
  EXPECT_TRUE(started);
  EXPECT_EQ(o.exit.exit_code, 3);
  EXPECT_EQ(o.out, "[--rm][a b][$(id)]\n");
  EXPECT_EQ(o.err, "to-stderr\n");
  EXPECT_FALSE(o.exit.timed_out || o.exit.killed || o.exit.oom);
  EXPECT_TRUE(o.exit.error.empty()) << o.exit.error;
  EXPECT_FALSE(PathExists(work_dir_ + "/bundles/containers/" + spec.container_name)) << "bundle left behind";

  RunSpec with_command = Spec({"x"});
  with_command.command = {"/probe", "echo", "from command"};
  o = MustRun(runtime_, with_command);
  EXPECT_EQ(o.out, "[from command][x]\n");
}

TEST_F(RuncRuntimeTest, SandboxBasics) {
  RunSpec spec = Spec({});
  spec.env = {{"IG_VALUE", "x y;z"}};
  Outcome o = MustRun(runtime_, spec);
  ASSERT_EQ(o.exit.exit_code, 0) << o.out << o.err << o.exit.error;
  auto r = ProbeReport(o.out);
  EXPECT_EQ(r["root.readonly"], "yes");
  EXPECT_EQ(r["root.create"], "EROFS");
  EXPECT_EQ(r["tmp.create"], "ok");
  EXPECT_EQ(r["tmp.bytes"], std::to_string(64 << 20)) << "no size in the spec: 64 MiB, as before";
  EXPECT_EQ(r["var_tmp.bytes"], std::to_string(64 << 20));
  EXPECT_EQ(r["dev_shm.bytes"], std::to_string(64 << 20));
  EXPECT_EQ(r["out.create"], "ok");
  EXPECT_EQ(r["in.create"], "EROFS");
  EXPECT_EQ(r["net.interfaces"], "lo,");
  EXPECT_EQ(r["net.connect_external"], "ENETUNREACH");
  EXPECT_EQ(r["status.CapEff"], "0000000000000000");
  EXPECT_EQ(r["status.CapBnd"], "0000000000000000");
  EXPECT_EQ(r["status.NoNewPrivs"], "1");
  EXPECT_EQ(r["status.Seccomp"], "2");
  // Root maps only itself; an unprivileged agent with subordinate ids (the
  // rootless pass) runs the job as the non-root job user.
  EXPECT_EQ(r["id.uid"], ::geteuid() == 0 ? "0" : "1000");
  EXPECT_EQ(r["pid"], "1");
  EXPECT_EQ(r["rlimit.NOFILE"], "1024:1024");
  EXPECT_EQ(r["env.IG_VALUE"], "x y;z");
  EXPECT_NE(r["proc_kcore.read"], "data");  // masked (or absent from this kernel)
  EXPECT_NE(r["proc_keys.read"], "data");
  EXPECT_EQ(r["sys.kexec_load"], "EPERM");
  EXPECT_EQ(r["sys.unknown"], "ENOSYS");
  EXPECT_TRUE(ReadFile(out_dir_ + "/probe").ok()) << "the job's output reaches the host";
}

TEST_F(RuncRuntimeTest, TmpfsSizesAreTheSpecs) {
  RunSpec spec = Spec({});
  spec.resources.set_shm_bytes(96 << 20);
  spec.resources.set_tmp_bytes(80 << 20);
  Outcome o = MustRun(runtime_, spec);
  ASSERT_EQ(o.exit.exit_code, 0) << o.out << o.err << o.exit.error;
  auto r = ProbeReport(o.out);
  EXPECT_EQ(r["dev_shm.bytes"], std::to_string(96 << 20));
  EXPECT_EQ(r["tmp.bytes"], std::to_string(80 << 20));
  EXPECT_EQ(r["var_tmp.bytes"], std::to_string(80 << 20));
  EXPECT_EQ(r["dev_shm.create"], "ok");
  EXPECT_EQ(r["var_tmp.create"], "ok");
}

TEST_F(RuncRuntimeTest, RlimitsCapMemoryAndFiles) {
  RuncRuntimeOptions options = Options();
  options.enforcement = DecideEnforcement({"v1", {}});  // rlimits only
  std::unique_ptr<ContainerRuntime> rlimited = NewRuncRuntime(options);
  Outcome o = MustRun(rlimited.get(), Spec({"membomb"}));
  EXPECT_EQ(o.exit.exit_code, 1) << o.out << o.err << o.exit.error;
  EXPECT_NE(o.out.find("malloc failed"), std::string::npos) << o.out;
  o = MustRun(rlimited.get(), Spec({}));
  auto r = ProbeReport(o.out);
  EXPECT_EQ(r["rlimit.DATA"], std::to_string(256 << 20) + ":" + std::to_string(256 << 20));
  EXPECT_EQ(r["rlimit.FSIZE"], std::to_string(16 << 20) + ":" + std::to_string(16 << 20));
  // Its own user namespace: RLIMIT_NPROC counts only the container's tasks.
  EXPECT_EQ(r["rlimit.NPROC"], "40:40");
  if (::geteuid() != 0) {
    // Root is exempt from RLIMIT_NPROC (the kernel skips INIT_USER).
    EXPECT_LE(std::stoi(r["forks"]), 40) << o.out;
    EXPECT_GE(std::stoi(r["forks"]), 35) << o.out;
  }
}

TEST_F(RuncRuntimeTest, MemoryBombFailsUnderTheHostsEnforcement) {
  Outcome o = MustRun(runtime_, Spec({"membomb"}));
  EXPECT_NE(o.exit.exit_code, 0) << o.out;
  EXPECT_EQ(o.out.find("allocated 1 GiB"), std::string::npos) << o.out;
  if (runtime_->Enforcement().memory() == "cgroup") {
    EXPECT_TRUE(o.exit.oom);
  }
}

TEST_F(RuncRuntimeTest, TimeoutKillsTheContainer) { ExpectTimeoutStopsAndRemoves(runtime_, Spec({"sleep", "60"})); }

TEST_F(RuncRuntimeTest, FrozenTimeIsNotRunTime) { ExpectFrozenTimeIsNotRunTime(runtime_, Spec({"sleep", "3"})); }

TEST_F(RuncRuntimeTest, KillFromAnotherThreadStopsARunningContainer) {
  ExpectKillFromAnotherThreadStops(runtime_, Spec({"sleep", "60"}));
}

TEST_F(RuncRuntimeTest, KillBeforeTheContainerExistsStillStopsIt) {
  const RunSpec spec = Spec({"sleep", "60"});
  Outcome o = MustRun(runtime_, spec, seconds(60), [&] { EXPECT_TRUE(runtime_->Kill(spec.container_name).ok()); });
  EXPECT_TRUE(o.exit.killed);
  EXPECT_LT(o.took, seconds(15));
}

TEST_F(RuncRuntimeTest, RuncFailureIsAPlatformError) {
  RunSpec spec = Spec({"exit", "0"});
  spec.mounts.push_back({work_dir_ + "/does-not-exist", "/missing", true, ""});
  Outcome o = MustRun(runtime_, spec);
  EXPECT_FALSE(o.exit.error.empty()) << "exit " << o.exit.exit_code;
  EXPECT_NE(o.exit.error.find("does-not-exist"), std::string::npos) << o.exit.error;
  EXPECT_FALSE(o.exit.oom);
}

TEST_F(RuncRuntimeTest, RefusesWhatOnlyPodmanCanRun) {
  RunSpec spec = Spec({});
  spec.runtime = "runsc";
  EXPECT_EQ(runtime_->Run(spec, {}, seconds(5), {}).status().code(), Code::kFailedPrecondition);
  spec = Spec({});
  spec.gpu_uuids = {"GPU-0"};
  EXPECT_EQ(runtime_->Run(spec, {}, seconds(5), {}).status().code(), Code::kFailedPrecondition);
  spec = Spec({});
  spec.image_id = std::string(64, 'f');
  EXPECT_EQ(runtime_->Run(spec, {}, seconds(5), {}).status().code(), Code::kFailedPrecondition);
  spec = Spec({});
  spec.container_name = "-bad";
  EXPECT_EQ(runtime_->Run(spec, {}, seconds(5), {}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(runtime_->Runtimes(), (std::vector<std::string>{"runc"}));

  RuncRuntimeOptions no_runc = Options("-none");
  no_runc.runc_binary = "/nonexistent/runc";
  std::unique_ptr<ContainerRuntime> broken = NewRuncRuntime(no_runc);
  EXPECT_TRUE(broken->Runtimes().empty());
  Status s = broken->Run(Spec({}), {}, seconds(5), {}).status();
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("not installed"), std::string::npos) << s.ToString();
}

TEST_F(RuncRuntimeTest, ANewRuntimeRemovesWhatACrashLeftBehind) {
  const RuncRuntimeOptions options = Options("-crash");
  ASSERT_TRUE(MakeDirs(options.bundles_dir + "/containers/idlegrid-gone", 0700).ok());
  ASSERT_TRUE(MakeDirs(options.bundles_dir + "/" + image_id_ + ".tmp-abc123/rootfs/ro", 0700).ok());
  ASSERT_EQ(::chmod((options.bundles_dir + "/" + image_id_ + ".tmp-abc123/rootfs").c_str(), 0500), 0);
  std::unique_ptr<ContainerRuntime> restarted = NewRuncRuntime(options);
  EXPECT_FALSE(PathExists(options.bundles_dir + "/containers/idlegrid-gone"));
  EXPECT_FALSE(PathExists(options.bundles_dir + "/" + image_id_ + ".tmp-abc123"));
}

// An archive written by `podman save` (not by our builder) unpacks and runs.
TEST_F(RuncRuntimeTest, RunsAPodmanSavedImage) {
  Result<CommandOutput> version = RunCommand({"podman", "--version"}, seconds(30));
  if (!version.ok() || version->exit_code != 0) GTEST_SKIP() << "podman is not installed";
  const std::string ctx = work_dir_ + "/ctx";
  ASSERT_TRUE(MakeDirs(ctx).ok());
  ASSERT_TRUE(WriteFileAtomic(ctx + "/probe", ReadFile(SandboxProbePath()).value(), 0755).ok());
  ASSERT_TRUE(WriteFileAtomic(ctx + "/Containerfile",
                              "FROM scratch\nCOPY probe /usr/bin/probe\nWORKDIR /data\nENV MODE=echo\n"
                              "ENTRYPOINT [\"/usr/bin/probe\"]\nCMD [\"echo\", \"from-cmd\"]\n")
                  .ok());
  const std::string tag = "localhost/idlegrid-runc-saved:" + std::to_string(::getpid());
  Result<CommandOutput> build = RunCommand({"podman", "build", "-q", "--pull=never", "-t", tag, ctx}, seconds(120));
  ASSERT_TRUE(build.ok() && build->exit_code == 0) << (build.ok() ? build->stderr_text : build.status().ToString());
  Result<CommandOutput> id = RunCommand({"podman", "image", "inspect", "--format", "{{.Id}}", tag}, seconds(30));
  ASSERT_TRUE(id.ok() && id->exit_code == 0);
  const std::string saved_id = id->stdout_text.substr(0, 64);
  const std::string archive = work_dir_ + "/saved.tar";
  Result<CommandOutput> save =
      RunCommand({"podman", "save", "--format", "oci-archive", "-o", archive, tag}, seconds(120));
  (void)RunCommand({"podman", "rmi", "-f", tag}, seconds(60));
  ASSERT_TRUE(save.ok() && save->exit_code == 0) << (save.ok() ? save->stderr_text : save.status().ToString());

  Status load = runtime_->LoadImage(archive, saved_id);
  ASSERT_TRUE(load.ok()) << load.ToString();
  RunSpec spec = Spec({});
  spec.image_id = saved_id;
  Outcome o = MustRun(runtime_, spec);
  EXPECT_EQ(o.exit.exit_code, 3) << o.err << o.exit.error;
  EXPECT_EQ(o.out, "[from-cmd]\n");
  spec = Spec({"report"});
  spec.image_id = saved_id;
  spec.command = {"/usr/bin/probe"};
  o = MustRun(runtime_, spec);
  auto r = ProbeReport(o.out);
  EXPECT_EQ(r["cwd"], "/data");
  EXPECT_EQ(r["env.MODE"], "echo");
}

// Probe report keys whose values legitimately differ between the runtimes.
const std::map<std::string, std::string> kAllowedDifferences = {
    {"env.HOSTNAME", "podman names the host after the container id, runc after the container name"},
    {"rlimit.NPROC", "podman adds the agent uid's tasks (shared user namespace); runc's container has its own"},
    {"forks", "follows rlimit.NPROC when not root"},
    {"id.groups", "rootless runc never calls setgroups: the job keeps the agent user's groups (checked below)"},
    {"sys.setuid_1",
     "both refuse: runc maps only uid 0 (EINVAL), podman maps more ids but grants no CAP_SETUID (EPERM)"},
};

// Runs the probe under both runtimes and compares every line.
void ExpectSameSandbox(ContainerRuntime* runc, ContainerRuntime* podman, const RunSpec& runc_spec,
                       RunSpec podman_spec) {
  Outcome a = MustRun(runc, runc_spec);
  Outcome b = MustRun(podman, podman_spec);
  ASSERT_EQ(a.exit.exit_code, 0) << a.out << a.err << a.exit.error;
  ASSERT_EQ(b.exit.exit_code, 0) << b.out << b.err << b.exit.error;
  auto ra = ProbeReport(a.out), rb = ProbeReport(b.out);
  ASSERT_GT(ra.size(), 40u) << a.out;
  // The test user's only group is its own, which is root's group inside; an
  // agent user in more groups would leave them to the job (documented).
  EXPECT_TRUE(ra["id.groups"] == "" || ra["id.groups"] == "0," || ra["id.groups"] == "1000,") << ra["id.groups"];
  std::set<std::string> keys;
  for (const auto& [k, v] : ra) keys.insert(k);
  for (const auto& [k, v] : rb) keys.insert(k);
  for (const std::string& k : keys) {
    const std::string va = ra.count(k) ? ra[k] : "<absent>", vb = rb.count(k) ? rb[k] : "<absent>";
    if (kAllowedDifferences.count(k)) {
      std::cout << "  may differ: " << k << ": runc=" << va << " podman=" << vb << "\n";
      continue;
    }
    EXPECT_EQ(va, vb) << k << " differs (runc vs podman)";
  }
}

TEST_F(RuncRuntimeTest, SameSandboxAsPodman) {
  Result<CommandOutput> version = RunCommand({"podman", "--version"}, seconds(30));
  if (!version.ok() || version->exit_code != 0) GTEST_SKIP() << "podman is not installed";
  std::unique_ptr<ContainerRuntime> podman = NewPodmanRuntime();
  Status load = podman->LoadImage(archive_, image_id_);
  ASSERT_TRUE(load.ok()) << load.ToString();
  v1::Enforcement podman_limits = podman->Enforcement(), runc_limits = runtime_->Enforcement();
  podman_limits.clear_runsc_unavailable();  // about gVisor, which only podman runs
  runc_limits.clear_runsc_unavailable();
  podman_limits.clear_runsc_gpu_unavailable();
  runc_limits.clear_runsc_gpu_unavailable();
  ASSERT_EQ(podman_limits.SerializeAsString(), runc_limits.SerializeAsString())
      << "both runtimes must enforce the same way for the comparison to mean anything";
  RunSpec spec = Spec({});
  spec.env = {{"IG_VALUE", "v"}};
  ExpectSameSandbox(runtime_, podman.get(), spec, spec);
  (void)RunCommand({"podman", "rmi", "-f", image_id_}, seconds(60));
}

// The whole suite again as an unprivileged user with subordinate ids (how the
// agent runs): rootless runc and rootless podman. Root starts it; the child
// run is this binary under setpriv.
TEST_F(RuncRuntimeTest, RootlessRunOfThisSuite) {
  if (std::getenv(kAsUserEnv) != nullptr) GTEST_SKIP() << "this is the rootless run";
  if (::geteuid() != 0) GTEST_SKIP() << "not root: this whole run is the rootless one";
  if (::getpwnam(kTestUser) == nullptr) {
    Result<CommandOutput> add = RunCommand({"useradd", "-m", "-s", "/usr/sbin/nologin", kTestUser}, seconds(30));
    ASSERT_TRUE(add.ok() && add->exit_code == 0) << "useradd " << kTestUser;
  }
  for (const char* file : {"/etc/subuid", "/etc/subgid"}) {
    Result<std::string> content = ReadFile(file);
    if (!content.ok() || content->find(std::string(kTestUser) + ":") == std::string::npos) {
      std::ofstream(file, std::ios::app) << kTestUser << ":500000:65536\n";
    }
  }
  const struct passwd* pw = ::getpwnam(kTestUser);
  ASSERT_NE(pw, nullptr);
  const std::string uid = std::to_string(pw->pw_uid), gid = std::to_string(pw->pw_gid);
  const std::string xdg = "/tmp/igtest-xdg-" + uid;
  ASSERT_TRUE(MakeDirs(xdg, 0700).ok());
  ASSERT_EQ(::chown(xdg.c_str(), pw->pw_uid, pw->pw_gid), 0);
  // The user may not be able to reach the build tree (a clone under /root is
  // mode 0700): run copies of this binary and the probe from a readable place.
  const std::string copies = "/tmp/igtest-suite-" + std::to_string(::getpid());
  ASSERT_TRUE(MakeDirs(copies, 0755).ok());
  const std::string exe = copies + "/runtime_test", probe = copies + "/sandbox_probe";
  std::error_code ec;
  std::filesystem::copy_file("/proc/self/exe", exe, std::filesystem::copy_options::overwrite_existing, ec);
  ASSERT_FALSE(ec) << "copy this test binary: " << ec.message();
  std::filesystem::copy_file(SandboxProbePath(), probe, std::filesystem::copy_options::overwrite_existing, ec);
  ASSERT_FALSE(ec) << "copy the sandbox probe: " << ec.message();
  ASSERT_EQ(::chmod(exe.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(probe.c_str(), 0755), 0);
  Result<CommandOutput> child =
      RunCommand({"setpriv", "--reuid=" + uid, "--regid=" + gid, "--init-groups", "env", "--chdir=/",
                  "HOME=" + std::string(pw->pw_dir), "XDG_RUNTIME_DIR=" + xdg, "PATH=/usr/local/bin:/usr/bin:/bin",
                  std::string(kAsUserEnv) + "=1", std::string(kSandboxProbeEnv) + "=" + probe, exe,
                  "--gtest_filter=RuncRuntimeTest.*:PilotTest.*"},
                 std::chrono::minutes(5));
  std::filesystem::remove_all(copies, ec);
  ASSERT_TRUE(child.ok()) << child.status().ToString();
  const std::string output = child->stdout_text + child->stderr_text;
  // What is echoed must not carry gtest's "[  SKIPPED ]" marker: ctest would
  // read it as this test skipping and hide the failure.
  std::string shown = output;
  for (size_t at = shown.find("[  SKIPPED ]"); at != std::string::npos; at = shown.find("[  SKIPPED ]", at)) {
    shown.replace(at, 12, "[ (skipped) ]");
  }
  if (child->exit_code != 0) {
    // Kept past the run: a rare failure here must not depend on the log of
    // the ctest run that saw it.
    const std::string kept = "/tmp/igtest-rootless-" + std::to_string(::getpid()) + ".log";
    std::ofstream(kept) << output;
    ADD_FAILURE() << "the rootless run failed (exit " << child->exit_code << "; its output is also in " << kept
                  << "):\n"
                  << shown;
  }
  // Only this test may skip there; anything else skipped is a tool that failed.
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if ((line.find("[  SKIPPED ] RuncRuntimeTest.") != std::string::npos ||
         line.find("[  SKIPPED ] PilotTest.") != std::string::npos) &&
        line.find("RootlessRunOfThisSuite") == std::string::npos) {
      ADD_FAILURE() << "skipped in the rootless run: " << line.substr(12) << "\n" << shown;
    }
    if (line.find("may differ") != std::string::npos) std::cout << "rootless" << line << "\n";
  }
  EXPECT_NE(output.find("[  PASSED  ]"), std::string::npos) << shown;
}

}  // namespace
}  // namespace idlegrid::runtime
