// Tests for src/runtime: the pure admission and argv builders (table tests),
// the host probes (sanity), and PodmanRuntime against real podman (skipped
// when podman or a static C toolchain is missing).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "common/fs.h"
#include "runtime/admission.h"
#include "runtime/container_runtime.h"
#include "runtime/enforcement_probe.h"
#include "runtime/podman_args.h"
#include "runtime/podman_runtime.h"
#include "runtime/run_support.h"
#include "runtime/subprocess.h"

namespace idlegrid::runtime {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

v1::Enforcement MakeEnforcement(const std::string& memory, const std::string& pids, const std::string& cpu,
                                const std::string& cgroup_version = "v1") {
  v1::Enforcement e;
  e.set_memory(memory);
  e.set_pids(pids);
  e.set_cpu(cpu);
  e.set_disk("rlimit");
  e.set_cgroup_version(cgroup_version);
  return e;
}

const v1::Enforcement kRlimitHost = MakeEnforcement("rlimit", "rlimit", "");
const v1::Enforcement kCgroupHost = MakeEnforcement("cgroup", "cgroup", "cgroup", "v2");

v1::Resources MakeResources(uint64_t memory, uint32_t pids, double cpu, uint64_t disk, bool strict_cpu = false) {
  v1::Resources r;
  r.set_memory_bytes(memory);
  r.set_pids(pids);
  r.set_cpu(cpu);
  r.set_disk_bytes(disk);
  r.set_strict_cpu(strict_cpu);
  return r;
}

// ---------------------------------------------------------------- admission

TEST(CheckAdmissionTest, Table) {
  struct Case {
    const char* name;
    v1::Resources resources;
    std::string runtime;
    v1::Enforcement enforcement;
    std::vector<std::string> runtimes;
    bool ok;
    std::string message_part;
  };
  const v1::Resources plain = MakeResources(256 << 20, 64, 1, 1 << 30);
  const v1::Resources strict = MakeResources(256 << 20, 64, 1, 1 << 30, /*strict_cpu=*/true);
  const std::vector<Case> cases = {
      {"rlimit host runs runc", plain, "runc", kRlimitHost, {"runc"}, true, ""},
      {"cgroup host runs runc", strict, "runc", kCgroupHost, {"runc", "runsc"}, true, ""},
      {"cgroup host runs runsc", strict, "runsc", kCgroupHost, {"runc", "runsc"}, true, ""},
      {"strict cpu on v1",
       strict,
       "runc",
       kRlimitHost,
       {"runc"},
       false,
       "host cannot cap CPU (cgroup v1 without delegation; only rlimits are enforceable) and the job sets strictCpu"},
      {"strict cpu on v2 without cpu delegation",
       strict,
       "runc",
       MakeEnforcement("cgroup", "cgroup", "", "v2"),
       {"runc"},
       false,
       "cgroup v2 without cpu delegation"},
      {"missing runtime", plain, "runsc", kRlimitHost, {"runc"}, false, "available: runc"},
      {"no runtimes at all", plain, "runc", kRlimitHost, {}, false, "available: none"},
      {"memory unenforceable", plain, "runc", MakeEnforcement("", "rlimit", ""), {"runc"}, false, "cap memory"},
      {"pids unenforceable", plain, "runc", MakeEnforcement("rlimit", "", ""), {"runc"}, false, "cap processes"},
      {"runsc under rlimits", plain, "runsc", kRlimitHost, {"runc", "runsc"}, false, "gVisor ignores RLIMIT_DATA"},
  };
  for (const Case& c : cases) {
    Status s = CheckAdmission(c.resources, c.runtime, c.enforcement, c.runtimes);
    EXPECT_EQ(s.ok(), c.ok) << c.name << ": " << s.ToString();
    if (!c.ok) {
      EXPECT_EQ(s.code(), Code::kFailedPrecondition) << c.name;
      EXPECT_NE(s.message().find(c.message_part), std::string::npos) << c.name << ": " << s.message();
    }
  }
}

TEST(CheckAdmissionTest, DiskNeedsEnforcementOnlyWhenSet) {
  v1::Enforcement no_disk = kRlimitHost;
  no_disk.set_disk("");
  EXPECT_FALSE(CheckAdmission(MakeResources(1 << 30, 10, 1, 1 << 20), "runc", no_disk, {"runc"}).ok());
  EXPECT_TRUE(CheckAdmission(MakeResources(1 << 30, 10, 1, 0), "runc", no_disk, {"runc"}).ok());
}

// ---------------------------------------------------------------- podman args

// True when `flag` is immediately followed by `value`.
bool HasFlag(const std::vector<std::string>& args, const std::string& flag, const std::string& value) {
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == flag && args[i + 1] == value) return true;
  }
  return false;
}

bool HasArg(const std::vector<std::string>& args, const std::string& arg) {
  return std::find(args.begin(), args.end(), arg) != args.end();
}

bool HasUlimit(const std::vector<std::string>& args, const std::string& name) {
  return std::any_of(args.begin(), args.end(), [&](const std::string& a) { return a.rfind(name + "=", 0) == 0; });
}

RunSpec BaseSpec() {
  RunSpec spec;
  spec.container_name = "idlegrid-a-1";
  spec.image_id = std::string(64, 'a');
  spec.resources = MakeResources(256 << 20, 100, 1.5, 64 << 20);
  spec.host_user_processes = 40;
  return spec;
}

TEST(BuildPodmanRunArgsTest, CommonHardeningFlags) {
  const std::vector<std::string> a = BuildPodmanRunArgs(BaseSpec(), kRlimitHost);
  ASSERT_GE(a.size(), 2u);
  EXPECT_EQ(a[0], "run");
  EXPECT_TRUE(HasArg(a, "--rm"));
  EXPECT_TRUE(HasFlag(a, "--name", "idlegrid-a-1"));
  EXPECT_TRUE(HasFlag(a, "--runtime", "runc"));
  EXPECT_TRUE(HasFlag(a, "--network", "none"));
  EXPECT_TRUE(HasArg(a, "--read-only"));
  EXPECT_TRUE(HasFlag(a, "--cap-drop", "all"));
  EXPECT_TRUE(HasFlag(a, "--security-opt", "no-new-privileges"));
  EXPECT_TRUE(HasFlag(a, "--ulimit", "nofile=1024:1024"));
  EXPECT_TRUE(HasFlag(a, "--pull", "never"));
  EXPECT_TRUE(HasFlag(a, "--label", "idlegrid=1"));
  // No sizes in the spec (an older coordinator's): 64 MiB each, as before.
  EXPECT_TRUE(HasFlag(a, "--tmpfs", "/tmp:rw,size=65536k,mode=1777"));
  EXPECT_TRUE(HasFlag(a, "--tmpfs", "/var/tmp:rw,size=65536k,mode=1777"));
  EXPECT_TRUE(HasFlag(a, "--shm-size", "65536k"));
  EXPECT_FALSE(HasArg(a, "--log-driver"));
  EXPECT_FALSE(HasArg(a, "--runtime-flag"));
  EXPECT_EQ(a.back(), std::string(64, 'a'));  // no args: the image is last
}

TEST(BuildPodmanRunArgsTest, TmpfsSizesAreTheSpecs) {
  RunSpec spec = BaseSpec();
  spec.resources.set_shm_bytes(256ull << 20);
  spec.resources.set_tmp_bytes(100ull << 20);
  for (const v1::Enforcement& host : {kRlimitHost, kCgroupHost}) {
    const std::vector<std::string> a = BuildPodmanRunArgs(spec, host);
    EXPECT_TRUE(HasFlag(a, "--shm-size", "262144k"));
    EXPECT_TRUE(HasFlag(a, "--tmpfs", "/tmp:rw,size=102400k,mode=1777"));
    // podman's --read-only would give /var/tmp an unsized tmpfs.
    EXPECT_TRUE(HasFlag(a, "--tmpfs", "/var/tmp:rw,size=102400k,mode=1777"));
    EXPECT_EQ(std::count(a.begin(), a.end(), "--tmpfs"), 2);
    EXPECT_EQ(std::count(a.begin(), a.end(), "--shm-size"), 1);
  }
  EXPECT_EQ(TmpfsSize(1), "1k") << "rounded up, never below what the job asked for";
  EXPECT_EQ(TmpfsSize(1024), "1k");
  EXPECT_EQ(TmpfsSize(1025), "2k");
}

TEST(BuildPodmanRunArgsTest, OnlyTheAssignedGpusArePassedInThroughCdi) {
  EXPECT_FALSE(HasArg(BuildPodmanRunArgs(BaseSpec(), kRlimitHost), "--device"));
  RunSpec spec = BaseSpec();
  spec.gpu_uuids = {"GPU-8d1f3c2a-0000-1111-2222-333344445555"};
  const std::vector<std::string> a = BuildPodmanRunArgs(spec, kRlimitHost);
  EXPECT_TRUE(HasFlag(a, "--device", "nvidia.com/gpu=GPU-8d1f3c2a-0000-1111-2222-333344445555"));
  EXPECT_EQ(std::count(a.begin(), a.end(), "--device"), 1);
  EXPECT_TRUE(ValidateRunSpec(spec).ok());
  spec.gpu_uuids = {"GPU-1,nvidia.com/gpu=all"};  // a hostile uuid must not widen access
  EXPECT_EQ(ValidateRunSpec(spec).code(), Code::kInvalidArgument);
}

TEST(BuildPodmanRunArgsTest, RlimitHost) {
  const std::vector<std::string> a = BuildPodmanRunArgs(BaseSpec(), kRlimitHost);
  EXPECT_TRUE(HasFlag(a, "--ulimit", "data=268435456:268435456"));
  EXPECT_TRUE(HasFlag(a, "--ulimit", "nproc=140:140"));  // 100 pids + 40 already used by the uid
  EXPECT_TRUE(HasFlag(a, "--ulimit", "fsize=67108864:67108864"));
  EXPECT_FALSE(HasArg(a, "--memory"));
  EXPECT_FALSE(HasArg(a, "--memory-swap"));
  EXPECT_FALSE(HasArg(a, "--pids-limit"));
  EXPECT_FALSE(HasArg(a, "--cpus"));
}

TEST(BuildPodmanRunArgsTest, CgroupHost) {
  const std::vector<std::string> a = BuildPodmanRunArgs(BaseSpec(), kCgroupHost);
  EXPECT_TRUE(HasFlag(a, "--memory", "268435456"));
  EXPECT_TRUE(HasFlag(a, "--memory-swap", "268435456"));
  EXPECT_TRUE(HasFlag(a, "--pids-limit", "100"));
  EXPECT_TRUE(HasFlag(a, "--cpus", "1.5"));
  EXPECT_TRUE(HasFlag(a, "--ulimit", "fsize=67108864:67108864"));
  EXPECT_TRUE(HasFlag(a, "--ulimit", "nproc=140:140"));
  EXPECT_FALSE(HasUlimit(a, "data"));
}

TEST(BuildPodmanRunArgsTest, MemoryFloorsLeaveRoomForTheOciRuntime) {
  RunSpec spec = BaseSpec();
  spec.resources.set_memory_bytes(4 << 20);
  EXPECT_TRUE(HasFlag(BuildPodmanRunArgs(spec, kRlimitHost), "--ulimit",
                      "data=" + std::to_string(kMinDataRlimitBytes) + ":" + std::to_string(kMinDataRlimitBytes)));
  EXPECT_TRUE(HasFlag(BuildPodmanRunArgs(spec, kCgroupHost), "--memory", std::to_string(kMinCgroupMemoryBytes)));
}

TEST(BuildPodmanRunArgsTest, RunscWithCgroups) {
  RunSpec spec = BaseSpec();
  spec.runtime = "runsc";
  const std::vector<std::string> a = BuildPodmanRunArgs(spec, kCgroupHost);
  EXPECT_TRUE(HasFlag(a, "--runtime", "runsc"));
  EXPECT_TRUE(HasFlag(a, "--runtime-flag", "network=none"));
  EXPECT_FALSE(HasFlag(a, "--runtime-flag", "ignore-cgroups"));  // it would drop the memory cap
  EXPECT_TRUE(HasFlag(a, "--memory", "268435456"));
  EXPECT_FALSE(HasArg(a, "--pids-limit"));               // would count gVisor's own threads
  EXPECT_TRUE(HasFlag(a, "--ulimit", "nproc=100:100"));  // gVisor counts sandbox tasks only
}

TEST(BuildPodmanRunArgsTest, RunscWithoutCgroups) {
  RunSpec spec = BaseSpec();
  spec.runtime = "runsc";
  const std::vector<std::string> a = BuildPodmanRunArgs(spec, kRlimitHost);
  EXPECT_TRUE(HasFlag(a, "--runtime-flag", "network=none"));
  EXPECT_TRUE(HasFlag(a, "--runtime-flag", "ignore-cgroups"));
}

// GPU jobs (issue 27): gVisor gets a GPU only through nvproxy, which podman
// passes to runsc as --nvproxy; runc gets the CDI devices alone.
TEST(BuildPodmanRunArgsTest, RunscPassesGpusOnlyThroughNvproxy) {
  RunSpec spec = BaseSpec();
  spec.runtime = "runsc";
  spec.gpu_uuids = {"GPU-8d1f3c2a-0000-1111-2222-333344445555"};
  spec.nvproxy = true;
  ASSERT_TRUE(ValidateRunSpec(spec).ok());
  const std::vector<std::string> a = BuildPodmanRunArgs(spec, kCgroupHost);
  EXPECT_TRUE(HasFlag(a, "--runtime", "runsc"));
  EXPECT_TRUE(HasFlag(a, "--runtime-flag", "nvproxy"));
  EXPECT_TRUE(HasFlag(a, "--runtime-flag", "network=none"));
  EXPECT_TRUE(HasFlag(a, "--device", "nvidia.com/gpu=GPU-8d1f3c2a-0000-1111-2222-333344445555"));

  spec.nvproxy = false;
  Status without = ValidateRunSpec(spec);
  EXPECT_EQ(without.code(), Code::kInvalidArgument);
  EXPECT_NE(without.message().find("runsc cannot pass a GPU in without nvproxy"), std::string::npos)
      << without.message();

  RunSpec runc = BaseSpec();
  runc.gpu_uuids = spec.gpu_uuids;
  EXPECT_TRUE(ValidateRunSpec(runc).ok());
  EXPECT_FALSE(HasArg(BuildPodmanRunArgs(runc, kCgroupHost), "--runtime-flag"));
  runc.nvproxy = true;
  EXPECT_EQ(ValidateRunSpec(runc).code(), Code::kInvalidArgument) << "nvproxy is gVisor's";
}

TEST(BuildPodmanRunArgsTest, ZeroLimitsEmitNoCaps) {
  RunSpec spec = BaseSpec();
  spec.resources = v1::Resources();
  const std::vector<std::string> a = BuildPodmanRunArgs(spec, kCgroupHost);
  EXPECT_FALSE(HasArg(a, "--memory"));
  EXPECT_FALSE(HasArg(a, "--pids-limit"));
  EXPECT_FALSE(HasArg(a, "--cpus"));
  EXPECT_FALSE(HasUlimit(a, "nproc"));
  EXPECT_FALSE(HasUlimit(a, "fsize"));
}

TEST(BuildPodmanRunArgsTest, MountsEnvCommandAndArgs) {
  RunSpec spec = BaseSpec();
  spec.mounts = {{"/var/in", "/in", true, ""}, {"/var/out", "/out", false, ""}};
  spec.env = {{"A", "1"}, {"B", "x y=z"}};
  spec.command = {"/bin/tool", "say \"hi\""};
  spec.args = {"--rm", "a b"};
  const std::vector<std::string> a = BuildPodmanRunArgs(spec, kRlimitHost);
  EXPECT_TRUE(HasFlag(a, "-v", "/var/in:/in:ro"));
  EXPECT_TRUE(HasFlag(a, "-v", "/var/out:/out:rw"));
  EXPECT_TRUE(HasFlag(a, "-e", "A=1"));
  EXPECT_TRUE(HasFlag(a, "-e", "B=x y=z"));
  EXPECT_TRUE(HasFlag(a, "--entrypoint", R"(["/bin/tool","say \"hi\""])"));
  ASSERT_GE(a.size(), 3u);
  // The image, then the args verbatim: a "--rm" there belongs to the job.
  EXPECT_EQ(a[a.size() - 3], spec.image_id);
  EXPECT_EQ(a[a.size() - 2], "--rm");
  EXPECT_EQ(a[a.size() - 1], "a b");
}

TEST(EntrypointJsonTest, EscapesControlCharacters) {
  EXPECT_EQ(EntrypointJson({}), "[]");
  EXPECT_EQ(EntrypointJson({"a\\b", "line\nnext", std::string("\x01")}), R"(["a\\b","line\nnext","\u0001"])");
}

TEST(ValidateRunSpecTest, Table) {
  struct Case {
    const char* name;
    std::function<void(RunSpec*)> mutate;
    bool ok;
  };
  const std::vector<Case> cases = {
      {"base", [](RunSpec*) {}, true},
      {"name looks like a flag", [](RunSpec* s) { s->container_name = "--privileged"; }, false},
      {"empty name", [](RunSpec* s) { s->container_name = ""; }, false},
      {"short image id", [](RunSpec* s) { s->image_id = "abc"; }, false},
      {"uppercase image id", [](RunSpec* s) { s->image_id = std::string(64, 'A'); }, false},
      {"unknown runtime", [](RunSpec* s) { s->runtime = "kata"; }, false},
      {"relative mount",
       [](RunSpec* s) {
         s->mounts = {{"rel", "/in", true, ""}};
       },
       false},
      {"colon in mount",
       [](RunSpec* s) {
         s->mounts = {{"/a:b", "/in", true, ""}};
       },
       false},
      {"comma in mount",
       [](RunSpec* s) {
         s->mounts = {{"/a", "/in,rw", true, ""}};
       },
       false},
      {"bad env name",
       [](RunSpec* s) {
         s->env = {{"A=B", "1"}};
       },
       false},
      {"nul in arg", [](RunSpec* s) { s->args = {std::string("a\0b", 3)}; }, false},
      {"odd but legal arg",
       [](RunSpec* s) {
         s->args = {"$(rm -rf /)", ";", "--privileged"};
       },
       true},
  };
  for (const Case& c : cases) {
    RunSpec spec = BaseSpec();
    c.mutate(&spec);
    Status s = ValidateRunSpec(spec);
    EXPECT_EQ(s.ok(), c.ok) << c.name << ": " << s.ToString();
    if (!c.ok) {
      EXPECT_EQ(s.code(), Code::kInvalidArgument) << c.name;
    }
  }
}

// ---------------------------------------------------------------- probes

TEST(DecideEnforcementTest, Table) {
  struct Case {
    CgroupFacts facts;
    std::string memory, pids, cpu;
  };
  const std::vector<Case> cases = {
      {{"v1", {}}, "rlimit", "rlimit", ""},
      {{"hybrid", {}}, "rlimit", "rlimit", ""},
      {{"v1", {"memory", "pids", "cpu"}}, "cgroup", "cgroup", "cgroup"},
      {{"v2", {"cpuset", "cpu", "io", "memory", "pids"}}, "cgroup", "cgroup", "cgroup"},
      {{"v2", {"memory", "pids"}}, "cgroup", "cgroup", ""},
  };
  for (const Case& c : cases) {
    v1::Enforcement e = DecideEnforcement(c.facts);
    EXPECT_EQ(e.memory(), c.memory) << c.facts.cgroup_version;
    EXPECT_EQ(e.pids(), c.pids) << c.facts.cgroup_version;
    EXPECT_EQ(e.cpu(), c.cpu) << c.facts.cgroup_version;
    EXPECT_EQ(e.disk(), "rlimit");
    EXPECT_EQ(e.cgroup_version(), c.facts.cgroup_version);
  }
}

TEST(ProbeTest, EnforcementIsSane) {
  v1::Enforcement e = ProbeEnforcement();
  EXPECT_TRUE(e.cgroup_version() == "v1" || e.cgroup_version() == "v2" || e.cgroup_version() == "hybrid")
      << e.cgroup_version();
  EXPECT_TRUE(e.memory() == "cgroup" || e.memory() == "rlimit") << e.memory();
  EXPECT_TRUE(e.pids() == "cgroup" || e.pids() == "rlimit") << e.pids();
  EXPECT_TRUE(e.cpu() == "cgroup" || e.cpu().empty()) << e.cpu();
  EXPECT_EQ(e.disk(), "rlimit");
  // An unprivileged user on cgroup v1 gets no cgroups (podman cannot use them).
  v1::Enforcement nobody = DecideEnforcement(ProbeCgroupFacts(65534));
  if (nobody.cgroup_version() != "v2") {
    EXPECT_EQ(nobody.memory(), "rlimit");
  }
}

TEST(ProbeTest, RuntimesFoundOnPath) {
  const std::string dir = std::filesystem::temp_directory_path() / ("igrt-path-" + std::to_string(::getpid()));
  ASSERT_TRUE(MakeDirs(dir).ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/runsc", "#!/bin/sh\n", 0755).ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/runc", "not executable", 0644).ok());
  std::vector<std::string> found = ProbeRuntimes(dir);
  EXPECT_TRUE(HasArg(found, "runsc"));
  // The probe also looks where podman does, so the system runc may still count.
  EXPECT_EQ(HasArg(found, "runc"), HasArg(ProbeRuntimes(""), "runc"));
  EXPECT_TRUE(RemoveTree(dir).ok());
}

TEST(ProbeTest, ParseProcStatus) {
  std::optional<ProcStatus> s = ParseProcStatus("Name:\tx\nUid:\t1001\t1001\t1001\t1001\nThreads:\t7\n");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->real_uid, 1001u);
  EXPECT_EQ(s->threads, 7u);
  EXPECT_FALSE(ParseProcStatus("Name:\tx\nUid:\t1\t1\t1\t1\n").has_value());
  EXPECT_FALSE(ParseProcStatus("Threads:\tlots\nUid:\t1\n").has_value());
}

TEST(ProbeTest, CountsOwnThreads) {
  std::atomic<bool> stop{false};
  std::thread extra([&] {
    while (!stop) std::this_thread::yield();
  });
  EXPECT_GE(CountUserProcesses(::getuid()), 2u);  // this process has two threads now
  stop = true;
  extra.join();
  EXPECT_EQ(CountUserProcesses(4000000000u), 0u);
}

// ---------------------------------------------------------------- subprocess

TEST(SubprocessTest, CapturesStreamsAndExitCode) {
  Result<CommandOutput> r = RunCommand({"sh", "-c", "echo out; echo err >&2; exit 4"}, seconds(10));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->stdout_text, "out\n");
  EXPECT_EQ(r->stderr_text, "err\n");
  EXPECT_EQ(r->exit_code, 4);
}

TEST(SubprocessTest, MissingProgramAndTimeout) {
  Result<CommandOutput> missing = RunCommand({"/nonexistent/idlegrid-program"}, seconds(1));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Code::kFailedPrecondition);
  const auto start = std::chrono::steady_clock::now();
  Result<CommandOutput> slow = RunCommand({"sleep", "30"}, milliseconds(200));
  EXPECT_FALSE(slow.ok());
  EXPECT_EQ(slow.status().code(), Code::kUnavailable);
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(5));
}

// ---------------------------------------------------------------- real podman

// The job the podman tests run: one static binary, a mode per test.
constexpr char kJobSource[] = R"C(
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "hello";
  if (!strcmp(mode, "hello")) {
    printf("to-stdout\n"); fflush(stdout);
    fprintf(stderr, "to-stderr\n");
    FILE* f = fopen("/out/result.txt", "w");
    if (!f) { perror("open /out/result.txt"); return 10; }
    fputs("written", f); fclose(f);
    return 3;
  }
  if (!strcmp(mode, "args")) {
    for (int i = 2; i < argc; i++) printf("[%s]", argv[i]);
    printf(" env=%s\n", getenv("IG_VALUE") ? getenv("IG_VALUE") : "(unset)");
    return 0;
  }
  if (!strcmp(mode, "rootfs")) {
    int fd = open("/newfile", O_CREAT | O_WRONLY, 0644);
    if (fd >= 0) { printf("rootfs writable\n"); return 1; }
    printf("rootfs: %s\n", strerror(errno));
    fd = open("/tmp/scratch", O_CREAT | O_WRONLY, 0644);
    if (fd < 0) { printf("tmp: %s\n", strerror(errno)); return 2; }
    return 0;
  }
  if (!strcmp(mode, "net")) {
    struct if_nameindex* ifs = if_nameindex();
    for (struct if_nameindex* i = ifs; i && i->if_index; i++) {
      printf("if %s\n", i->if_name);
      if (strcmp(i->if_name, "lo") != 0) return 1;
    }
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET; a.sin_port = htons(80); inet_pton(AF_INET, "1.1.1.1", &a.sin_addr);
    if (connect(s, (struct sockaddr*)&a, sizeof a) == 0) { printf("connected\n"); return 1; }
    printf("connect: %s\n", strerror(errno));
    return 0;
  }
  if (!strcmp(mode, "membomb")) {
    for (int i = 0; i < 1024; i++) {
      char* p = malloc(1 << 20);
      if (!p) { printf("malloc failed after %d MiB\n", i); return 1; }
      memset(p, 1, 1 << 20);
    }
    printf("allocated 1 GiB\n");
    return 0;
  }
  if (!strcmp(mode, "bigfile")) {
    signal(SIGXFSZ, SIG_IGN);
    int fd = open("/out/big", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    static char buf[1 << 20];
    for (int i = 0; i < 32; i++) {
      if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf) { printf("write failed after %d MiB: %s\n", i, strerror(errno)); return 1; }
    }
    printf("wrote 32 MiB\n");
    return 0;
  }
  if (!strcmp(mode, "tmpfs")) {
    const char* dirs[] = {"/dev/shm", "/tmp", "/var/tmp"};
    for (int i = 0; i < 3; i++) {
      struct statvfs st;
      if (statvfs(dirs[i], &st) != 0) { printf("%s: %s\n", dirs[i], strerror(errno)); return 1; }
      printf("%s=%llu\n", dirs[i], (unsigned long long)st.f_blocks * st.f_frsize);
    }
    return 0;
  }
  if (!strcmp(mode, "sleep")) { printf("sleeping\n"); fflush(stdout); sleep(atoi(argv[2])); return 0; }
  if (!strcmp(mode, "spin")) {
    /* A child burns argv[2] ms of CPU and is waited for; then this process
       burns as much again. */
    long ms = atol(argv[2]);
    for (int round = 0; round < 2; round++) {
      pid_t child = round == 0 ? fork() : 0;
      if (child > 0) { waitpid(child, NULL, 0); continue; }
      struct timespec a, b;
      clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
      do { clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b); }
      while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
      if (child == 0 && round == 0) _exit(0);
    }
    return 0;
  }
  return 99;
}
)C";

class PodmanRuntimeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    skip_reason_ = Prepare();
    if (!skip_reason_.empty()) return;
    runtime_ = NewPodmanRuntime().release();
  }

  static void TearDownTestSuite() {
    delete runtime_;
    runtime_ = nullptr;
    if (!image_id_.empty()) (void)RunCommand({"podman", "rmi", "-f", image_id_}, seconds(60));
    if (!work_dir_.empty()) (void)RemoveTree(work_dir_);
  }

  // Builds the job image and leaves it only as an OCI archive, so that tests
  // load it through LoadImage. Returns why the tests must be skipped, or "".
  static std::string Prepare() {
    Result<CommandOutput> version = RunCommand({"podman", "--version"}, seconds(30));
    if (!version.ok() || version->exit_code != 0) return "podman is not installed";
    work_dir_ = std::filesystem::temp_directory_path() / ("igrt-" + std::to_string(::getpid()));
    if (!MakeDirs(work_dir_ + "/ctx").ok()) return "cannot create " + work_dir_;
    if (!WriteFileAtomic(work_dir_ + "/job.c", kJobSource).ok()) return "cannot write job.c";
    Result<CommandOutput> cc =
        RunCommand({"gcc", "-static", "-O1", "-o", work_dir_ + "/ctx/job", work_dir_ + "/job.c"}, seconds(60));
    if (!cc.ok() || cc->exit_code != 0) return "cannot build a static C program (gcc -static)";
    if (!WriteFileAtomic(work_dir_ + "/ctx/Containerfile", "FROM scratch\nCOPY job /job\nENTRYPOINT [\"/job\"]\n")
             .ok()) {
      return "cannot write Containerfile";
    }
    const std::string tag = "localhost/idlegrid-runtime-test:" + std::to_string(::getpid());
    Result<CommandOutput> build = RunCommand({"podman", "build", "-q", "-t", tag, work_dir_ + "/ctx"}, seconds(120));
    if (!build.ok() || build->exit_code != 0) {
      return "podman build failed: " + (build.ok() ? build->stderr_text : build.status().ToString());
    }
    Result<CommandOutput> id = RunCommand({"podman", "image", "inspect", "--format", "{{.Id}}", tag}, seconds(30));
    if (!id.ok() || id->exit_code != 0) return "podman image inspect failed";
    image_id_ = id->stdout_text.substr(0, 64);
    archive_ = work_dir_ + "/image.tar";
    Result<CommandOutput> save =
        RunCommand({"podman", "save", "--format", "oci-archive", "-o", archive_, tag}, seconds(120));
    if (!save.ok() || save->exit_code != 0) return "podman save failed";
    (void)RunCommand({"podman", "rmi", "-f", tag}, seconds(60));
    return "";
  }

  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
    // Every test after the first finds the image already loaded; load it anyway.
    Status load = runtime_->LoadImage(archive_, image_id_);
    ASSERT_TRUE(load.ok()) << load.ToString();
    out_dir_ = work_dir_ + "/out-" + std::to_string(next_id_);
    ASSERT_TRUE(MakeDirs(out_dir_, 0777).ok());
  }

  RunSpec Spec(std::vector<std::string> args) {
    RunSpec spec;
    spec.container_name = "igrt-" + std::to_string(::getpid()) + "-" + std::to_string(next_id_++);
    spec.image_id = image_id_;
    spec.args = std::move(args);
    spec.mounts = {{out_dir_, "/out", false, ""}};
    spec.resources = MakeResources(64 << 20, 64, 1, 16 << 20);
    return spec;
  }

  static inline std::string skip_reason_, work_dir_, image_id_, archive_;
  static inline ContainerRuntime* runtime_ = nullptr;
  static inline int next_id_ = 0;
  std::string out_dir_;
};

TEST_F(PodmanRuntimeTest, LoadImageChecksTheId) {
  EXPECT_TRUE(runtime_->HasImage(image_id_));
  std::string other = image_id_;
  other[0] = other[0] == '0' ? '1' : '0';
  Status wrong = runtime_->LoadImage(archive_, other);
  EXPECT_EQ(wrong.code(), Code::kDataLoss) << wrong.ToString();
  EXPECT_EQ(runtime_->LoadImage(work_dir_ + "/missing.tar", image_id_).code(), Code::kNotFound);
  EXPECT_EQ(runtime_->LoadImage(archive_, "--help").code(), Code::kInvalidArgument);
}

TEST_F(PodmanRuntimeTest, StreamsExitCodeAndOutputFile) {
  bool started = false;
  Outcome o = MustRun(runtime_, Spec({"hello"}), seconds(30), [&] { started = true; });
  EXPECT_TRUE(started);
  EXPECT_EQ(o.exit.exit_code, 3);
  EXPECT_EQ(o.out, "to-stdout\n");
  EXPECT_EQ(o.err, "to-stderr\n");
  EXPECT_FALSE(o.exit.timed_out || o.exit.killed || o.exit.oom);
  EXPECT_TRUE(o.exit.error.empty()) << o.exit.error;
  Result<std::string> written = ReadFile(out_dir_ + "/result.txt");
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(*written, "written");
}

TEST_F(PodmanRuntimeTest, ArgsEnvAndCommandPassVerbatim) {
  RunSpec spec = Spec({"args", "--rm", "a b", "$(id)", "\"q\""});
  spec.env = {{"IG_VALUE", "x y;z"}};
  Outcome o = MustRun(runtime_, spec);
  EXPECT_EQ(o.exit.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "[--rm][a b][$(id)][\"q\"] env=x y;z\n");

  RunSpec with_command = Spec({"c"});
  with_command.command = {"/job", "args", "from command"};
  o = MustRun(runtime_, with_command);
  EXPECT_EQ(o.out, "[from command][c] env=(unset)\n");
}

TEST_F(PodmanRuntimeTest, RootfsIsReadOnlyButTmpIsWritable) {
  Outcome o = MustRun(runtime_, Spec({"rootfs"}));
  EXPECT_EQ(o.exit.exit_code, 0) << o.out << o.err;
  EXPECT_NE(o.out.find("Read-only file system"), std::string::npos) << o.out;
}

TEST_F(PodmanRuntimeTest, TmpfsSizesAreTheSpecs) {
  RunSpec spec = Spec({"tmpfs"});
  spec.resources.set_shm_bytes(24 << 20);
  spec.resources.set_tmp_bytes(20 << 20);
  Outcome o = MustRun(runtime_, spec);
  EXPECT_EQ(o.exit.exit_code, 0) << o.out << o.err << o.exit.error;
  EXPECT_EQ(o.out, "/dev/shm=" + std::to_string(24 << 20) + "\n/tmp=" + std::to_string(20 << 20) +
                       "\n/var/tmp=" + std::to_string(20 << 20) + "\n");
}

TEST_F(PodmanRuntimeTest, NetworkIsOnlyLoopback) {
  Outcome o = MustRun(runtime_, Spec({"net"}));
  EXPECT_EQ(o.exit.exit_code, 0) << o.out << o.err;
  EXPECT_NE(o.out.find("connect: "), std::string::npos) << o.out;
}

TEST_F(PodmanRuntimeTest, MemoryBombFailsUnderTheHostsEnforcement) {
  Outcome o = MustRun(runtime_, Spec({"membomb"}));
  EXPECT_NE(o.exit.exit_code, 0) << o.out;
  EXPECT_EQ(o.out.find("allocated 1 GiB"), std::string::npos) << o.out;
  if (runtime_->Enforcement().memory() == "cgroup") {
    EXPECT_TRUE(o.exit.oom);
  }
}

TEST_F(PodmanRuntimeTest, MemoryBombFailsUnderRlimits) {
  PodmanRuntimeOptions options;
  options.enforcement = DecideEnforcement({"v1", {}});
  std::unique_ptr<ContainerRuntime> rlimited = NewPodmanRuntime(options);
  Outcome o = MustRun(rlimited.get(), Spec({"membomb"}));
  EXPECT_EQ(o.exit.exit_code, 1) << o.out << o.err;
  EXPECT_NE(o.out.find("malloc failed"), std::string::npos) << o.out;

  o = MustRun(rlimited.get(), Spec({"bigfile"}));  // 16 MiB per-file cap
  EXPECT_EQ(o.exit.exit_code, 1) << o.out << o.err;
  EXPECT_NE(o.out.find("write failed after 16 MiB"), std::string::npos) << o.out;
}

// Why this host gives a rootless container no memory cgroup, in its own
// terms: the skip below names it (tests/may-skip.txt lists the test).
std::string WhyNoMemoryCgroup() {
  std::string why;
  auto controllers = ReadFile("/sys/fs/cgroup/cgroup.controllers");
  if (!controllers.ok()) controllers = ReadFile("/sys/fs/cgroup/unified/cgroup.controllers");
  if (!controllers.ok() || controllers->find("memory") == std::string::npos) {
    why += "the memory controller is not on cgroup v2 here (";
    why += PathExists("/sys/fs/cgroup/memory") ? "it is mounted on cgroup v1 at /sys/fs/cgroup/memory" : "not mounted";
    why += "), and rootless podman places containers in cgroups only on v2";
  } else {
    why += "cgroup v2 has the memory controller but it is not delegated to this user";
  }
  auto init = ReadFile("/proc/1/comm");
  if (!init.ok() || init->rfind("systemd", 0) != 0) {
    why += "; PID 1 is not systemd (" + (init.ok() ? init->substr(0, init->find('\n')) : std::string("unknown")) +
           "), so no delegated systemd scope can be made for the agent";
  }
  return why;
}

TEST_F(PodmanRuntimeTest, RunscRunsAndCapsMemoryWithCgroups) {
  if (!HasArg(runtime_->Runtimes(), "runsc")) GTEST_SKIP() << "runsc (gVisor) is not installed";
  if (runtime_->Enforcement().memory() != "cgroup") {
    GTEST_SKIP() << "gVisor's memory cap needs a memory cgroup the agent's podman can use: " << WhyNoMemoryCgroup();
  }
  RunSpec spec = Spec({"hello"});
  spec.runtime = "runsc";
  Outcome o = MustRun(runtime_, spec);
  EXPECT_EQ(o.exit.exit_code, 3) << o.err;
  EXPECT_EQ(o.out, "to-stdout\n");
  EXPECT_TRUE(ReadFile(out_dir_ + "/result.txt").ok());

  spec = Spec({"membomb"});
  spec.runtime = "runsc";
  o = MustRun(runtime_, spec);
  EXPECT_NE(o.exit.exit_code, 0) << o.out;
  EXPECT_EQ(o.out.find("allocated 1 GiB"), std::string::npos) << o.out;
}

TEST_F(PodmanRuntimeTest, TimeoutKillsTheContainer) { ExpectTimeoutStopsAndRemoves(runtime_, Spec({"sleep", "60"})); }

TEST_F(PodmanRuntimeTest, FrozenTimeIsNotRunTime) { ExpectFrozenTimeIsNotRunTime(runtime_, Spec({"sleep", "3"})); }

TEST_F(PodmanRuntimeTest, MetersTheContainersCpuFromProc) {
  // 700 ms in a child the job waits for, then 700 ms of its own: sampled
  // every 500 ms, so at least the first 700 ms and part of the rest.
  Outcome o = MustRun(runtime_, Spec({"spin", "700"}), seconds(60));
  EXPECT_EQ(o.exit.exit_code, 0) << o.out;
  EXPECT_EQ(o.exit.cpu_source, "proc");
  EXPECT_GE(o.exit.cpu_usec, 700'000u) << "the waited-for child's CPU at least";
  EXPECT_LT(o.exit.cpu_usec, 3'000'000u) << "1.4 s were burnt";
}

TEST_F(PodmanRuntimeTest, KillFromAnotherThreadStopsARunningContainer) {
  ExpectKillFromAnotherThreadStops(runtime_, Spec({"sleep", "60"}));
}

TEST_F(PodmanRuntimeTest, KillBeforeTheContainerExistsStillStopsIt) {
  const RunSpec spec = Spec({"sleep", "60"});
  // on_started runs right after podman is spawned, before it has created the
  // container, so the first `podman kill` finds nothing and Run must retry.
  Outcome o = MustRun(runtime_, spec, seconds(60), [&] { EXPECT_TRUE(runtime_->Kill(spec.container_name).ok()); });
  EXPECT_TRUE(o.exit.killed);
  EXPECT_LT(o.took, seconds(15));
}

TEST_F(PodmanRuntimeTest, RejectsWhatItCannotRun) {
  RunSpec spec = Spec({"hello"});
  spec.container_name = "-bad";
  EXPECT_EQ(runtime_->Run(spec, {}, seconds(5), {}).status().code(), Code::kInvalidArgument);
  spec = Spec({"hello"});
  spec.runtime = "runsc";
  spec.resources.set_strict_cpu(true);
  PodmanRuntimeOptions options;
  options.enforcement = DecideEnforcement({"v1", {}});
  EXPECT_EQ(NewPodmanRuntime(options)->Run(spec, {}, seconds(5), {}).status().code(), Code::kFailedPrecondition);
}

}  // namespace
}  // namespace idlegrid::runtime
