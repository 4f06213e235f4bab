#include "runtime/podman_runtime.h"

#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include "common/fs.h"
#include "runtime/active_runs.h"
#include "runtime/admission.h"
#include "runtime/enforcement_probe.h"
#include "runtime/job_sandbox.h"
#include "runtime/process_freeze.h"
#include "runtime/runc_host.h"
#include "runtime/seccomp_hardening.h"
#include "runtime/subprocess.h"
#include "runtime/supervise.h"
#include "runtime/tree_cpu.h"

namespace idlegrid::runtime {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kCommandTimeout{60'000};
constexpr milliseconds kLoadTimeout{10 * 60'000};
// While stopping, `podman kill` is retried this often: Kill() may land before
// `podman run` has created the container.
constexpr milliseconds kKillRetryInterval{500};
// If `podman run` is still alive this long after we started stopping it, it is
// SIGKILLed itself and the container removed with `rm -f`.
constexpr milliseconds kForceKillAfter{15'000};
constexpr size_t kStderrTailBytes = 4096;
// Tasks `podman run` adds to the agent's uid when it starts a container
// (podman's Go threads, conmon, the rootless pause process): measured ~13;
// RLIMIT_NPROC must leave room for them or the container cannot start.
constexpr uint32_t kPodmanTaskAllowance = 32;

// A directory of the agent's own, fresh for one run, where podman writes
// the container's pid (--pidfile): nobody can plant a link or a stale pid
// there. Removed with its file when the run is done. Without one (no
// usable temp directory) the run goes on unmetered: file() is "".
class PidDir {
 public:
  PidDir() {
    std::error_code no_tmp;
    dir_ = (std::filesystem::temp_directory_path(no_tmp) / "idlegrid-pid-XXXXXX").string();
    if (no_tmp || ::mkdtemp(dir_.data()) == nullptr) dir_.clear();
  }
  ~PidDir() {
    if (dir_.empty()) return;
    (void)::unlink(file().c_str());
    (void)::rmdir(dir_.c_str());
  }
  PidDir(const PidDir&) = delete;
  PidDir& operator=(const PidDir&) = delete;
  std::string file() const { return dir_.empty() ? "" : dir_ + "/pid"; }

 private:
  std::string dir_;
};

// Decodes podman run's wait status. `stopping`: we killed or timed it out.
ExitInfo DecodeExit(int wait_status, bool stopping, const std::string& stderr_tail, ExitInfo info) {
  if (!WIFEXITED(wait_status)) {
    if (!stopping) info.error = "podman was killed by signal " + std::to_string(WTERMSIG(wait_status));
    return info;
  }
  info.exit_code = WEXITSTATUS(wait_status);
  if (stopping) return info;
  if (info.exit_code == 125) info.error = "podman failed: " + Trimmed(stderr_tail);
  if (info.exit_code == 137) info.oom = true;
  return info;
}

// The hardened profiles as files podman can read: a private directory
// (0700, made fresh) that lives as long as the runtime, so no other user can
// swap a profile in.
class ProfileFiles {
 public:
  ProfileFiles() = default;
  ~ProfileFiles() {
    if (!dir_.empty()) (void)RemoveTree(dir_);
  }
  ProfileFiles(const ProfileFiles&) = delete;
  ProfileFiles& operator=(const ProfileFiles&) = delete;

  Status Write(const std::map<std::string, JobProfile>& profiles) {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp == '/' ? tmp : "/tmp") + "/idlegrid-seccomp-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr)
      return Status::Internal("cannot create " + tmpl + ": " + std::strerror(errno));
    dir_ = tmpl;
    for (const auto& [job_class, p] : profiles) {
      const std::string path = dir_ + "/" + (job_class.empty() ? "default" : job_class) + ".json";
      IG_RETURN_IF_ERROR(WriteFileAtomic(path, p.json, 0600));
      paths_[job_class] = path;
      digests_[job_class] = p.digest;
    }
    return Status::Ok();
  }
  std::string PathFor(const std::string& job_class) const {
    auto it = paths_.find(job_class);
    return it == paths_.end() ? "" : it->second;
  }
  std::string DigestFor(const std::string& job_class) const {
    auto it = digests_.find(job_class);
    return it == digests_.end() ? "" : it->second;
  }

 private:
  std::string dir_;
  std::map<std::string, std::string> paths_;
  std::map<std::string, std::string> digests_;
};

class PodmanRuntime final : public ContainerRuntime {
 public:
  PodmanRuntime(std::string podman_binary, v1::Enforcement enforcement, std::vector<std::string> runtimes)
      : podman_(std::move(podman_binary)), enforcement_(std::move(enforcement)), runtimes_(std::move(runtimes)) {
    for (const std::string& rt : runtimes_) versions_[rt] = ToolVersion(ResolveExecutable(rt));
    if (::geteuid() != 0) {
      auto maps = AgentUserNamespaceMaps(true);
      job_user_ = JobUserFor(maps.first, maps.second);
      uid_maps_ = maps.first;
    }
    if (job_user_) user_ = std::to_string(job_user_->first) + ":" + std::to_string(job_user_->second);
    Result<std::map<std::string, JobProfile>> profiles = BuildJobProfiles(BuiltInBaseSeccompProfile());
    Status written = profiles.ok() ? profiles_.Write(*profiles) : profiles.status();
    // Without its profile no container starts (Run refuses): fail closed.
    if (!written.ok()) problem_ = "idlegrid's seccomp profile: " + written.message();
  }

  v1::Enforcement Enforcement() const override { return enforcement_; }
  SandboxFacts Facts(const RunSpec& spec) const override {
    SandboxFacts f;
    f.driver = "podman";
    f.runtime = spec.runtime;
    auto v = versions_.find(spec.runtime);
    if (v != versions_.end()) f.runtime_version = v->second;
    f.seccomp_digest = profiles_.DigestFor(spec.job_class);
    f.job_user = DescribeJobUser(job_user_, uid_maps_);
    return f;
  }
  std::vector<std::string> Runtimes() const override { return runtimes_; }

  Status LoadImage(const std::string& archive_path, const std::string& image_id) override {
    IG_RETURN_IF_ERROR(ValidateImageId(image_id));
    if (!PathExists(archive_path)) return Status::NotFound("image archive " + archive_path + " does not exist");
    IG_ASSIGN_OR_RETURN(CommandOutput load, RunCommand({podman_, "load", "-q", "-i", archive_path}, kLoadTimeout));
    if (load.exit_code != 0) {
      return Status::Internal("podman load -i " + archive_path +
                              " failed: " + Trimmed(Tail(load.stderr_text, kStderrTailBytes)));
    }
    if (!HasImage(image_id)) {
      return Status::DataLoss("image archive " + archive_path + " loaded but did not produce image " + image_id +
                              " (podman said: " + Trimmed(load.stdout_text) + ")");
    }
    return Status::Ok();
  }

  Status RemoveImage(const std::string& image_id) override {
    IG_RETURN_IF_ERROR(ValidateImageId(image_id));
    if (!HasImage(image_id)) return Status::Ok();
    IG_ASSIGN_OR_RETURN(CommandOutput rm, RunCommand({podman_, "rmi", image_id}, kCommandTimeout));
    if (rm.exit_code != 0) {
      return Status::FailedPrecondition("podman rmi " + image_id.substr(0, 12) +
                                        " failed: " + Trimmed(Tail(rm.stderr_text, kStderrTailBytes)));
    }
    return Status::Ok();
  }

  bool HasImage(const std::string& image_id) override {
    if (!ValidateImageId(image_id).ok()) return false;
    Result<CommandOutput> exists = RunCommand({podman_, "image", "exists", image_id}, kCommandTimeout);
    return exists.ok() && exists->exit_code == 0;
  }

  Result<ExitInfo> Run(const RunSpec& spec, const OutputSink& sink, milliseconds timeout,
                       const std::function<void()>& on_started) override;
  Status Kill(const std::string& container_name) override;
  Result<std::vector<std::string>> ListContainers() override;
  // Signals, like the runc driver (process_freeze.h): `podman pause` needs a
  // cgroup freezer the agent's user may not have.
  Status Freeze(const std::string& container_name) override {
    IG_ASSIGN_OR_RETURN(int init, InitPid(container_name));
    IG_RETURN_IF_ERROR(StopTree(init).WithContext("freezing " + container_name));
    active_runs_.MarkFrozen(container_name, true);
    return Status::Ok();
  }
  Status Thaw(const std::string& container_name) override {
    IG_ASSIGN_OR_RETURN(int init, InitPid(container_name));
    // Before the signal, as in the runc driver: a failed thaw must not leave
    // a stopped job without a timeout.
    active_runs_.MarkFrozen(container_name, false);
    return ContinueTree(init).WithContext("thawing " + container_name);
  }
  std::vector<int> HostPids(const std::string& container_name) override {
    Result<int> init = InitPid(container_name);
    return init.ok() ? DescendantsOf(*init, ReadParentMap()) : std::vector<int>{};
  }

 private:
  // Host pid of the container's first process; NotFound when it does not run.
  Result<int> InitPid(const std::string& container_name) {
    IG_RETURN_IF_ERROR(ValidateContainerName(container_name));
    IG_ASSIGN_OR_RETURN(
        CommandOutput out,
        RunCommand({podman_, "inspect", "--format", "{{.State.Pid}}", "--", container_name}, kCommandTimeout));
    const int pid = out.exit_code == 0 ? std::atoi(out.stdout_text.c_str()) : 0;
    if (pid <= 0) return Status::NotFound("container " + container_name + " is not running");
    return pid;
  }

  // `podman kill`; errors ignored: the container may not exist (yet, or any more).
  void SendKill(const std::string& name) { (void)RunCommand({podman_, "kill", "--", name}, kCommandTimeout); }

  // Constant after construction.
  const std::string podman_;
  const v1::Enforcement enforcement_;
  const std::vector<std::string> runtimes_;
  std::map<std::string, std::string> versions_;  // OCI runtime -> its --version
  std::optional<std::pair<uint32_t, uint32_t>> job_user_;
  std::vector<IdMapping> uid_maps_;
  std::string user_;  // --user, "" when jobs keep the image's user
  ProfileFiles profiles_;
  std::string problem_;  // why no container may start; "" when they may

  ActiveRuns active_runs_;
};

Result<ExitInfo> PodmanRuntime::Run(const RunSpec& spec, const OutputSink& sink, milliseconds timeout,
                                    const std::function<void()>& on_started) {
  IG_RETURN_IF_ERROR(ValidateRunSpec(spec));
  IG_RETURN_IF_ERROR(CheckAdmission(spec.resources, spec.runtime, enforcement_, runtimes_));
  if (!problem_.empty()) return Status::FailedPrecondition(problem_);
  const PidDir pid_dir;
  PodmanSandbox sandbox{profiles_.PathFor(spec.job_class), user_, pid_dir.file()};
  if (sandbox.seccomp_profile_path.empty()) {
    return Status::InvalidArgument("no seccomp profile for job class " + spec.job_class);
  }
  RunSpec effective = spec;
  if (effective.host_user_processes == 0) {
    effective.host_user_processes = CountUserProcesses(::getuid()) + kPodmanTaskAllowance;
  }
  std::vector<std::string> argv = {podman_};
  for (std::string& arg : BuildPodmanRunArgs(effective, enforcement_, sandbox)) argv.push_back(std::move(arg));

  const std::string& name = spec.container_name;
  IG_ASSIGN_OR_RETURN(std::unique_ptr<ActiveRuns::Entry> active, active_runs_.Register(name));

  // Watching before podman starts: the pid file may come at once.
  std::optional<TreeCpuWatch> cpu;
  if (!sandbox.pidfile.empty()) cpu.emplace(sandbox.pidfile);
  IG_ASSIGN_OR_RETURN(Subprocess child, Subprocess::Spawn(argv));
  if (on_started) on_started();

  std::string stderr_tail;
  auto tee = [&](const std::string& stream, std::string_view data) {
    if (stream == "stderr") stderr_tail = Tail(stderr_tail + std::string(data), kStderrTailBytes);
    if (sink) sink(stream, data);
  };

  ExitInfo info;
  const Supervised run =
      Supervise(child, active->Control(), timeout, tee, [&] { SendKill(name); }, {kKillRetryInterval, kForceKillAfter});
  if (cpu) {
    cpu->Stop();
    if (cpu->measured()) {
      info.cpu_usec = cpu->usec();
      info.cpu_source = "proc";
    }
  }
  info.killed = run.killed;
  info.timed_out = run.timed_out;
  if (run.stopping()) {
    // --rm is done by podman run itself; if we had to SIGKILL it, nothing did.
    // Should this fail too, the agent's orphan sweep removes the container.
    (void)RunCommand({podman_, "rm", "-f", "-i", "-t", "0", "--", name}, kCommandTimeout);
  }
  info.paused_ms = active->paused_for().count();
  return DecodeExit(child.wait_status(), run.stopping(), stderr_tail, info);
}

Status PodmanRuntime::Kill(const std::string& container_name) {
  IG_RETURN_IF_ERROR(ValidateContainerName(container_name));
  active_runs_.RequestKill(container_name);
  SendKill(container_name);
  IG_ASSIGN_OR_RETURN(CommandOutput rm,
                      RunCommand({podman_, "rm", "-f", "-i", "-t", "0", "--", container_name}, kCommandTimeout));
  if (rm.exit_code != 0) {
    return Status::Internal("podman rm -f " + container_name +
                            " failed: " + Trimmed(Tail(rm.stderr_text, kStderrTailBytes)));
  }
  return Status::Ok();
}

Result<std::vector<std::string>> PodmanRuntime::ListContainers() {
  IG_ASSIGN_OR_RETURN(CommandOutput ps, RunCommand({podman_, "ps", "-a", "--filter",
                                                    std::string("label=") + kContainerLabel, "--format", "{{.Names}}"},
                                                   kCommandTimeout));
  if (ps.exit_code != 0)
    return Status::Internal("podman ps failed: " + Trimmed(Tail(ps.stderr_text, kStderrTailBytes)));
  std::vector<std::string> names;
  std::istringstream in(ps.stdout_text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) names.push_back(line);
  }
  return names;
}

}  // namespace

std::unique_ptr<ContainerRuntime> NewPodmanRuntime(std::string podman_binary) {
  return NewPodmanRuntime(PodmanRuntimeOptions{std::move(podman_binary), std::nullopt});
}

std::unique_ptr<ContainerRuntime> NewPodmanRuntime(PodmanRuntimeOptions options) {
  v1::Enforcement enforcement = options.enforcement ? *options.enforcement : ProbeEnforcement();
  std::vector<std::string> runtimes = ProbeRuntimes();
  enforcement.set_runsc_unavailable(RunscUnavailable(enforcement, runtimes));
  enforcement.set_runsc_gpu_unavailable(ProbeRunscGpuUnavailable());
  return std::make_unique<PodmanRuntime>(std::move(options.podman_binary), std::move(enforcement), std::move(runtimes));
}

}  // namespace idlegrid::runtime
