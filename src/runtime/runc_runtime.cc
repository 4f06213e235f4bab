#include "runtime/runc_runtime.h"

#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <spdlog/spdlog.h>
#include <mutex>
#include <sstream>

#include "common/fs.h"
#include "image/rootfs_unpack.h"
#include "runtime/active_runs.h"
#include "runtime/admission.h"
#include "runtime/enforcement_probe.h"
#include "runtime/oci_config.h"
#include "runtime/pilot_pool.h"
#include "runtime/process_freeze.h"
#include "runtime/pilot_program.h"
#include "runtime/pilot_protocol.h"
#include "runtime/job_sandbox.h"
#include "runtime/runc_host.h"
#include "runtime/seccomp_hardening.h"
#include "runtime/subprocess.h"
#include "runtime/supervise.h"

namespace idlegrid::runtime {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kCommandTimeout{60'000};
// While stopping, `runc kill` is retried this often: Kill() may land before
// `runc run` has created the container.
constexpr milliseconds kKillRetryInterval{500};
// If `runc run` is still alive this long after we started stopping it, it is
// SIGKILLed itself and the container removed with `delete --force`.
constexpr milliseconds kForceKillAfter{15'000};
constexpr size_t kStderrTailBytes = 4096;
// Before Linux 5.14 RLIMIT_NPROC counts every task of the host uid, whatever
// its user namespace: the agent's, plus runc's own (~10 Go threads).
constexpr uint32_t kRuncTaskAllowance = 16;

// Decodes runc run's wait status. `stopping`: we killed or timed it out.
ExitInfo DecodeExit(int wait_status, bool stopping, const std::string& runc_errors, ExitInfo info) {
  if (!WIFEXITED(wait_status)) {
    if (!stopping) info.error = "runc was killed by signal " + std::to_string(WTERMSIG(wait_status));
    return info;
  }
  info.exit_code = WEXITSTATUS(wait_status);
  if (stopping) return info;
  if (!runc_errors.empty()) {
    info.error = "runc failed: " + runc_errors;
  } else if (info.exit_code == 137) {
    info.oom = true;
  }
  return info;
}

// One job class's profile, in runc's form, and the digest of its text.
struct ClassProfile {
  SeccompProfile profile;
  std::string digest;
};

// The built-in base (or the file at `base_path`, when given) hardened for
// every job class and converted for this host.
Result<std::map<std::string, ClassProfile>> ConvertJobProfiles(const std::string& base_path, KernelVersion kernel) {
  std::string base(BuiltInBaseSeccompProfile());
  if (!base_path.empty()) {
    IG_ASSIGN_OR_RETURN(base, ReadFile(base_path));
  }
  IG_ASSIGN_OR_RETURN(auto profiles, BuildJobProfiles(base));
  std::map<std::string, ClassProfile> out;
  for (auto& [job_class, p] : profiles) {
    IG_ASSIGN_OR_RETURN(SeccompProfile converted, ConvertSeccompProfile(p.json, HostGoArch(), kernel));
    out[job_class] = ClassProfile{std::move(converted), p.digest};
  }
  return out;
}

class RuncRuntime final : public ContainerRuntime {
 public:
  RuncRuntime(RuncRuntimeOptions options, std::string runc, v1::Enforcement enforcement,
              std::map<std::string, ClassProfile> seccomp, std::string problem, bool nproc_per_userns,
              std::pair<std::vector<IdMapping>, std::vector<IdMapping>> id_maps)
      : options_(std::move(options)),
        uid_mappings_(std::move(id_maps.first)),
        gid_mappings_(std::move(id_maps.second)),
        job_user_(JobUserFor(uid_mappings_, gid_mappings_)),
        runc_(std::move(runc)),
        runc_version_(runc_.empty() ? "" : ToolVersion(runc_)),
        enforcement_(std::move(enforcement)),
        seccomp_(std::move(seccomp)),
        problem_(std::move(problem)),
        nproc_per_userns_(nproc_per_userns) {
    if (problem_.empty() && !job_user_) {
      spdlog::warn(
          "runc driver: jobs run as the agent's own uid ({}); give the agent's user subordinate ids "
          "(/etc/subuid, /etc/subgid) so that they run as a user that owns nothing of the agent's",
          ::geteuid());
    }
    if (problem_.empty() && options_.pilots && nproc_per_userns_) StartPilots();
  }
  // Pilots first: their containers go before the runtime does.
  ~RuncRuntime() override { pilots_.reset(); }

  v1::Enforcement Enforcement() const override { return enforcement_; }
  SandboxFacts Facts(const RunSpec& spec) const override {
    SandboxFacts f;
    f.driver = "runc";
    f.runtime = spec.runtime;
    f.runtime_version = runc_version_;
    auto profile = seccomp_.find(spec.job_class);
    if (profile != seccomp_.end()) f.seccomp_digest = profile->second.digest;
    f.job_user = DescribeJobUser(job_user_, uid_mappings_);
    return f;
  }
  std::vector<std::string> Runtimes() const override {
    return problem_.empty() ? std::vector<std::string>{"runc"} : std::vector<std::string>{};
  }
  Status LoadImage(const std::string& archive_path, const std::string& image_id) override;
  Status RemoveImage(const std::string& image_id) override;
  image::UnpackBase BaseFor(const std::string& archive_path) const;
  bool HasImage(const std::string& image_id) override {
    return ValidateImageId(image_id).ok() && PathExists(ImageDir(image_id) + "/" + image::kImageConfigFileName);
  }
  Result<ExitInfo> Run(const RunSpec& spec, const OutputSink& sink, milliseconds timeout,
                       const std::function<void()>& on_started) override;
  Status Kill(const std::string& container_name) override;
  Status Freeze(const std::string& container_name) override;
  Status Thaw(const std::string& container_name) override;
  std::vector<int> HostPids(const std::string& container_name) override;
  Result<std::vector<std::string>> ListContainers() override;
  std::vector<std::string> LiveWritableDirs(const std::string& container_name) override {
    return pilots_ ? pilots_->LiveWritableDirs(container_name) : std::vector<std::string>{};
  }

 private:
  std::string ImageDir(const std::string& image_id) const { return options_.bundles_dir + "/" + image_id; }
  std::string BundleDir(const std::string& name) const { return options_.bundles_dir + "/containers/" + name; }
  std::vector<std::string> Runc(std::vector<std::string> args) const {
    args.insert(args.begin(), {runc_, "--root", options_.state_dir});
    return args;
  }
  Result<image::ImageConfig> ImageConfigFor(const std::string& image_id);
  Result<std::string> WriteBundle(const RunSpec& spec, const image::ImageConfig& config);
  // Errors ignored: the container may not exist (yet, or any more).
  void SendKill(const std::string& name) { (void)RunCommand(Runc({"kill", name, "KILL"}), kCommandTimeout); }
  Status ForceDelete(const std::string& name);
  void StartPilots();
  // Host pid of the init of the runc container the attempt's processes run
  // in now: its own, or its pilot's. NotFound when none runs.
  Result<int> InitPid(const std::string& container_name);

  // Constant after construction.
  const RuncRuntimeOptions options_;
  const std::vector<IdMapping> uid_mappings_;
  const std::vector<IdMapping> gid_mappings_;
  const std::optional<std::pair<uint32_t, uint32_t>> job_user_;
  const std::string runc_;  // absolute path
  const std::string runc_version_;
  const v1::Enforcement enforcement_;
  const std::map<std::string, ClassProfile> seccomp_;  // by job class
  const std::string problem_;                          // why this runtime cannot run anything; "" when it can
  const bool nproc_per_userns_;
  std::unique_ptr<PilotPool> pilots_;  // null when pilots are off or unusable

  ActiveRuns active_runs_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<std::mutex>> loads_;  // guarded by mu_; one unpack per image at a time
  std::map<std::string, image::ImageConfig> image_configs_;   // guarded by mu_; parsed once per image
};

Status RuncRuntime::LoadImage(const std::string& archive_path, const std::string& image_id) {
  IG_RETURN_IF_ERROR(ValidateImageId(image_id));
  if (!PathExists(archive_path)) return Status::NotFound("image archive " + archive_path + " does not exist");
  std::shared_ptr<std::mutex> image_mu;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& slot = loads_[image_id];
    if (!slot) slot = std::make_shared<std::mutex>();
    image_mu = slot;
  }
  std::lock_guard<std::mutex> one_unpack(*image_mu);
  if (HasImage(image_id)) return Status::Ok();
  Result<image::UnpackedImage> unpacked =
      image::UnpackOciImage(archive_path, ImageDir(image_id), "sha256:" + image_id, BaseFor(archive_path));
  // AlreadyExists: another agent process won the race (this one holds image_mu).
  if (!unpacked.ok() && unpacked.status().code() == Code::kAlreadyExists && HasImage(image_id)) return Status::Ok();
  return unpacked.ok() ? Status::Ok() : unpacked.status();
}

// The unpacked image sharing the longest run of first layers with the
// archive's image (a new version of a script on the same python3-torch
// base), or none. Images are loaded and removed one at a time by the agent's
// image cache, so a base does not vanish while it is cloned.
image::UnpackBase RuncRuntime::BaseFor(const std::string& archive_path) const {
  image::UnpackBase best;
  auto chain = image::ArchiveLayerChain(archive_path);
  if (!chain.ok()) return best;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(options_.bundles_dir, ec)) {
    const std::string id = e.path().filename().string();
    if (!ValidateImageId(id).ok() || !PathExists(e.path().string() + "/" + image::kImageConfigFileName)) continue;
    std::vector<std::string> theirs = image::ReadLayerChain(e.path().string());
    size_t shared = 0;
    while (shared < theirs.size() && shared < chain->size() && theirs[shared] == (*chain)[shared]) ++shared;
    if (shared > best.layers) best = {e.path().string(), shared};
  }
  return best;
}

// Containers run on a copy-free bundle of the unpacked tree, so the agent's
// image cache removes an image only when no attempt uses it (it pins them).
Status RuncRuntime::RemoveImage(const std::string& image_id) {
  IG_RETURN_IF_ERROR(ValidateImageId(image_id));
  {
    std::lock_guard<std::mutex> lock(mu_);
    image_configs_.erase(image_id);
  }
  return image::RemoveUnpackedTree(ImageDir(image_id));
}

Result<image::ImageConfig> RuncRuntime::ImageConfigFor(const std::string& image_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = image_configs_.find(image_id);
    if (it != image_configs_.end()) return it->second;
  }
  Result<std::string> text = ReadFile(ImageDir(image_id) + "/" + image::kImageConfigFileName);
  if (!text.ok()) {
    return Status::FailedPrecondition("image " + image_id + " is not loaded in the runc runtime (LoadImage first)");
  }
  IG_ASSIGN_OR_RETURN(image::ImageConfig config, image::ParseImageConfig(*text));
  std::lock_guard<std::mutex> lock(mu_);
  image_configs_.emplace(image_id, config);
  return config;
}

Result<std::string> RuncRuntime::WriteBundle(const RunSpec& spec, const image::ImageConfig& config) {
  const std::string dir = BundleDir(spec.container_name);
  (void)RemoveTree(dir);  // a leftover of a crashed agent; the container itself is gone or killed
  IG_RETURN_IF_ERROR(MakeDirs(dir, 0700));
  OciHostContext host;
  host.uid_mappings = uid_mappings_;
  host.gid_mappings = gid_mappings_;
  host.rootfs_path = ImageDir(spec.image_id) + "/" + image::kRootfsDirName;
  IG_RETURN_IF_ERROR(PrepareScratchMountPoints(host.rootfs_path));
  host.hosts_file = dir + "/hosts";
  host.hostname_file = dir + "/hostname";
  host.job_user = job_user_;
  auto profile = seccomp_.find(spec.job_class);
  if (profile == seccomp_.end()) return Status::InvalidArgument("no seccomp profile for job class " + spec.job_class);
  const std::string hostname = ContainerHostname(spec.container_name);
  RunSpec effective = spec;
  effective.host_user_processes = nproc_per_userns_ ? 0 : spec.host_user_processes + kRuncTaskAllowance;
  IG_ASSIGN_OR_RETURN(std::string config_json,
                      BuildOciConfig(effective, enforcement_, config, profile->second.profile, host));
  IG_RETURN_IF_ERROR(WriteBundleFile(host.hosts_file, ContainerHostsFile(hostname)));
  IG_RETURN_IF_ERROR(WriteBundleFile(host.hostname_file, hostname + "\n"));
  IG_RETURN_IF_ERROR(WriteBundleFile(dir + "/config.json", config_json));
  return dir;
}

Status RuncRuntime::ForceDelete(const std::string& name) {
  IG_ASSIGN_OR_RETURN(CommandOutput rm, RunCommand(Runc({"delete", "--force", name}), kCommandTimeout));
  if (rm.exit_code != 0) {
    return Status::Internal("runc delete --force " + name +
                            " failed: " + Trimmed(Tail(rm.stderr_text, kStderrTailBytes)));
  }
  return Status::Ok();
}

void RuncRuntime::StartPilots() {
  const std::string dir = options_.bundles_dir + "/pilot";
  Status st = MakeDirs(dir, 0700);
  // Mounted at /.idlegrid, where the job user (not the agent's) runs it; the
  // bundles directory above keeps other host users out.
  if (st.ok() && ::chmod(dir.c_str(), 0755) != 0) st = Status::Internal("cannot chmod " + dir);
  if (st.ok()) st = WriteFileAtomic(dir + "/pilot", std::string(PilotProgram()), 0555);
  if (!st.ok()) {
    spdlog::warn("pilots off, every task gets its own container: {}", st.message());
    return;
  }
  PilotPoolHooks hooks;
  hooks.runc = runc_;
  hooks.state_dir = options_.state_dir;
  hooks.bundles_dir = options_.bundles_dir;
  hooks.program_dir = dir;
  hooks.write_bundle = [this](const RunSpec& spec, const image::ImageConfig& config) {
    return WriteBundle(spec, config);
  };
  hooks.destroy = [this](const std::string& name) {
    SendKill(name);
    // A pilot that cannot be deleted shows in `runc list`; the next agent
    // start's orphan sweep removes it.
    if (Status st = ForceDelete(name); !st.ok()) spdlog::warn("pilot {}: {}", name, st.message());
  };
  pilots_ = std::make_unique<PilotPool>(std::move(hooks), options_.pilot_linger);
}

Result<ExitInfo> RuncRuntime::Run(const RunSpec& spec, const OutputSink& sink, milliseconds timeout,
                                  const std::function<void()>& on_started) {
  IG_RETURN_IF_ERROR(ValidateRunSpec(spec));
  if (!problem_.empty()) return Status::FailedPrecondition(problem_);
  if (spec.runtime != "runc") {
    return Status::FailedPrecondition("the runc runtime cannot run runtime " + spec.runtime + " (podman runs it)");
  }
  IG_RETURN_IF_ERROR(CheckAdmission(spec.resources, spec.runtime, enforcement_, Runtimes()));
  IG_ASSIGN_OR_RETURN(image::ImageConfig config, ImageConfigFor(spec.image_id));

  const std::string& name = spec.container_name;
  IG_ASSIGN_OR_RETURN(std::unique_ptr<ActiveRuns::Entry> active, active_runs_.Register(name));
  struct RemoveBundle {
    RuncRuntime* self;
    const std::string& name;
    ~RemoveBundle() {
      // A bundle left behind is removed at the next start (RemoveRuncLeftovers)
      // and rewritten by a Run of the same name.
      (void)RemoveTree(self->BundleDir(name));
    }
  } remove_bundle{this, name};  // declared after `active`: runs before the name is free again

  // A pilot that failed before its task ran hands the task back here, where
  // its own container starts: the attempt is reported started once.
  bool started = false;
  auto started_once = [&] {
    if (!started && on_started) on_started();
    started = true;
  };
  if (pilots_ && PilotEligible(spec).ok()) {
    std::optional<Result<ExitInfo>> piloted =
        pilots_->Run(spec, config, sink, timeout, started_once, active->Control());
    if (piloted) {
      if (piloted->ok()) (*piloted)->paused_ms = active->paused_for().count();
      return *piloted;
    }
  }

  IG_ASSIGN_OR_RETURN(std::string bundle, WriteBundle(spec, config));
  const std::string log_path = bundle + "/runc.log";
  IG_ASSIGN_OR_RETURN(Subprocess child, Subprocess::Spawn({runc_, "--root", options_.state_dir, "--log", log_path,
                                                           "--log-format", "json", "run", "--bundle", bundle, name}));
  started_once();

  // runc's own messages go to its --log, so both streams are the job's.
  auto forward = [&](const std::string& stream, std::string_view data) {
    if (sink) sink(stream, data);
  };

  ExitInfo info;
  const Supervised run = Supervise(child, active->Control(), timeout, forward, [&] { SendKill(name); },
                                   {kKillRetryInterval, kForceKillAfter});
  info.killed = run.killed;
  info.timed_out = run.timed_out;
  // runc run waits for the container's init, which reaps the job's processes.
  info.cpu_usec = child.cpu_usec();
  info.cpu_source = "rusage";
  Result<std::string> log = ReadFile(log_path);
  const std::string runc_errors = log.ok() ? RuncLogErrors(*log) : "";
  // `runc run` deletes the container when it returns normally; after a kill,
  // a runc failure or a SIGKILLed runc, make sure nothing is left.
  if (run.stopping() || !runc_errors.empty() || !WIFEXITED(child.wait_status())) {
    // Should it fail, the agent's orphan sweep finds the container and retries.
    if (Status st = ForceDelete(name); !st.ok()) spdlog::warn("{}", st.message());
  }
  info.paused_ms = active->paused_for().count();
  return DecodeExit(child.wait_status(), run.stopping(), runc_errors, info);
}

Status RuncRuntime::Kill(const std::string& container_name) {
  IG_RETURN_IF_ERROR(ValidateContainerName(container_name));
  const bool running_here = active_runs_.RequestKill(container_name);
  if (!problem_.empty()) return Status::Ok();  // nothing can have been started
  SendKill(container_name);
  IG_RETURN_IF_ERROR(ForceDelete(container_name));
  // A leftover of a crashed agent; a Run in progress removes its own. What
  // stays is removed at the next start (RemoveRuncLeftovers).
  if (!running_here) (void)RemoveTree(BundleDir(container_name));
  return Status::Ok();
}

Result<int> RuncRuntime::InitPid(const std::string& container_name) {
  IG_RETURN_IF_ERROR(ValidateContainerName(container_name));
  if (!problem_.empty()) return Status::NotFound("container " + container_name + " is not running");
  // A pilot's task shares the pilot's sandbox, one task at a time: freezing
  // the pilot freezes exactly that task (and the idle pilot program).
  std::string name = pilots_ ? pilots_->PilotOf(container_name) : "";
  if (name.empty()) name = container_name;
  IG_ASSIGN_OR_RETURN(CommandOutput state, RunCommand(Runc({"state", name}), kCommandTimeout));
  if (state.exit_code != 0) return Status::NotFound("container " + container_name + " is not running");
  return InitPidOfRuncState(state.stdout_text);
}

// Signals, not `runc pause`: the cgroup freezer is there only where cgroups
// are delegated to the agent's user (process_freeze.h).
Status RuncRuntime::Freeze(const std::string& container_name) {
  IG_ASSIGN_OR_RETURN(int init, InitPid(container_name));
  IG_RETURN_IF_ERROR(StopTree(init).WithContext("freezing " + container_name));
  active_runs_.MarkFrozen(container_name, true);
  return Status::Ok();
}

Status RuncRuntime::Thaw(const std::string& container_name) {
  IG_ASSIGN_OR_RETURN(int init, InitPid(container_name));
  // Marked running before the signal: should it fail, the timeout counts
  // again and ends a job that stays stopped, rather than never.
  active_runs_.MarkFrozen(container_name, false);
  return ContinueTree(init).WithContext("thawing " + container_name);
}

std::vector<int> RuncRuntime::HostPids(const std::string& container_name) {
  Result<int> init = InitPid(container_name);
  return init.ok() ? DescendantsOf(*init, ReadParentMap()) : std::vector<int>{};
}

Result<std::vector<std::string>> RuncRuntime::ListContainers() {
  if (!problem_.empty()) return std::vector<std::string>{};
  // `runc list` fails when a container's state goes while it reads it (a
  // pilot being deleted): look again before calling it an error.
  IG_ASSIGN_OR_RETURN(CommandOutput list, RunCommand(Runc({"list", "-q"}), kCommandTimeout));
  for (int again = 0; again < 3 && list.exit_code != 0; ++again) {
    IG_ASSIGN_OR_RETURN(list, RunCommand(Runc({"list", "-q"}), kCommandTimeout));
  }
  if (list.exit_code != 0) {
    return Status::Internal("runc list failed: " + Trimmed(Tail(list.stderr_text, kStderrTailBytes)));
  }
  std::vector<std::string> names;
  const std::set<std::string> pilots = pilots_ ? pilots_->Names() : std::set<std::string>{};
  std::istringstream in(list.stdout_text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(kRuncContainerPrefix, 0) == 0 && pilots.count(line) == 0) names.push_back(line);
  }
  return names;
}

}  // namespace

std::unique_ptr<ContainerRuntime> NewRuncRuntime(RuncRuntimeOptions options) {
  std::string problem;
  const std::string runc = ResolveExecutable(options.runc_binary);
  if (runc.empty()) problem = "runc (" + options.runc_binary + ") is not installed";
  v1::Enforcement enforcement = options.enforcement ? *options.enforcement
                                : ::geteuid() == 0
                                    ? ProbeEnforcement()
                                    : DecideEnforcement({ProbeCgroupFacts(::geteuid()).cgroup_version, {}});
  enforcement.set_runsc_unavailable("the runc driver does not run gVisor (agent --driver auto or podman does)");
  enforcement.set_runsc_gpu_unavailable(enforcement.runsc_unavailable());
  const KernelVersion kernel = HostKernel();
  std::map<std::string, ClassProfile> seccomp;
  if (problem.empty()) {
    Result<std::map<std::string, ClassProfile>> converted = ConvertJobProfiles(options.seccomp_profile_path, kernel);
    if (converted.ok()) {
      seccomp = std::move(*converted);
    } else {
      problem = "cannot use the seccomp profile: " + converted.status().message();
    }
  }
  for (const std::string* dir : {&options.state_dir, &options.bundles_dir}) {
    if (!problem.empty()) break;
    if (dir->empty() || (*dir)[0] != '/') {
      problem = "the runc runtime needs absolute state and bundles directories";
    } else if (Status made = MakeDirs(*dir, 0700); !made.ok()) {
      problem = made.message();
    }
  }
  if (problem.empty()) RemoveRuncLeftovers(runc, options.state_dir, options.bundles_dir);
  // Linux 5.14 counts RLIMIT_NPROC per user namespace (ucounts).
  const bool nproc_per_userns = kernel.major > 5 || (kernel.major == 5 && kernel.minor >= 14);
  auto id_maps = AgentUserNamespaceMaps(options.map_subordinate_ids);
  return std::make_unique<RuncRuntime>(std::move(options), runc, std::move(enforcement), std::move(seccomp),
                                       std::move(problem), nproc_per_userns, std::move(id_maps));
}

}  // namespace idlegrid::runtime
