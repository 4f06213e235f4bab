#pragma once
// The driver interface the agent runs job attempts through. Three drivers
// implement it:
//   - podman (podman_runtime.h), the reference driver: shells out to podman;
//     the one that runs gVisor (runsc) and GPU jobs.
//   - runc (runc_runtime.h): starts `runc run` directly, with podman's
//     sandbox; an array job's tasks may share one pilot sandbox
//     (pilot_pool.h). It refuses runsc, GPUs and images whose User is a
//     name other than root.
//   - routing (routing_runtime.h): sends an attempt to runc when it needs no
//     GPU and runc admits its runtime and limits, every other one to podman
//     (all of them when runc is unusable).
// The agent's --driver picks podman, runc, or auto (the default: routing
// over the two). Tests substitute a fake (tests/agent/attempt_fakes_support.h).
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "runtime/podman_args.h"

namespace idlegrid::runtime {

struct ExitInfo {
  int exit_code = -1;      // the container's exit code; -1 when podman itself died
  bool timed_out = false;  // Run's timeout stopped it
  bool killed = false;     // Kill() stopped it
  // Best effort: podman reported 137 (SIGKILL) and we did not kill it, which
  // under a memory cgroup means the OOM killer. Under RLIMIT_DATA a memory bomb
  // instead sees malloc fail and usually exits non-zero or aborts.
  bool oom = false;
  // Non-empty when the platform, not the job, failed (podman exit 125, or
  // podman killed by a signal): the attempt should not count against the job.
  std::string error;
  // CPU time (user + system) the run used, for the attempt's metering
  // (docs/receipts.md), and how it was measured: "rusage" when the driver
  // waited for the process tree that ran the job (the runc driver's own
  // container, a pilot's task); "proc" when it sampled that tree from /proc
  // (podman: conmon is no child of ours; tree_cpu.h), a lower bound; ""
  // when nothing was measured: then cpu_usec is 0.
  uint64_t cpu_usec = 0;
  std::string cpu_source;
  // Time its processes spent frozen for the node's owner (Freeze to Thaw):
  // not run time, so neither metered nor counted against the timeout.
  int64_t paused_ms = 0;
};

// What a driver runs a given attempt with, for the attempt's provenance record
// (docs/provenance.md): enough to say later which sandbox produced a result.
struct SandboxFacts {
  std::string driver;           // "runc" (started directly) or "podman"
  std::string runtime;          // the OCI runtime: "runc" or "runsc"
  std::string runtime_version;  // first line of `<runtime> --version`, or ""
  std::string seccomp_digest;   // "sha256:<hex>" of the profile passed, or "" when none
  std::string job_user;         // "uid:gid" inside, and what it maps to, e.g. "1000:1000 (host 100999)"
};

// Receives output as it arrives: stream is "stdout" or "stderr".
using OutputSink = std::function<void(const std::string& stream, std::string_view data)>;

class ContainerRuntime {
 public:
  virtual ~ContainerRuntime() = default;

  // What this host enforces for the agent's user; fixed at construction.
  virtual v1::Enforcement Enforcement() const = 0;
  // OCI runtimes available ("runc", "runsc"); fixed at construction.
  virtual std::vector<std::string> Runtimes() const = 0;

  // Loads an image archive (docker or OCI archive) and checks that it produced
  // `image_id` (64 hex). NotFound if the archive is missing, Internal if podman
  // fails, DataLoss if the archive loaded but holds a different image.
  virtual Status LoadImage(const std::string& archive_path, const std::string& image_id) = 0;
  // Whether the image is present locally; false on any error.
  virtual bool HasImage(const std::string& image_id) = 0;
  // Removes a loaded image (the agent's image cache evicts it under the
  // owner's disk budget). Ok if it is not there. FailedPrecondition while a
  // container still uses it. Drivers that keep no images of their own keep
  // this default.
  virtual Status RemoveImage(const std::string& image_id) { return Status::Ok(); }

  // Runs one attempt to completion. InvalidArgument for a spec that fails
  // ValidateRunSpec; FailedPrecondition if the host cannot enforce its limits
  // (CheckAdmission) or podman cannot be started; AlreadyExists if a Run with
  // the same container name is in progress. Otherwise returns ExitInfo, even
  // for a failing job. Calls `on_started` (may be empty) once podman is
  // spawned, and `sink` on the calling thread as output arrives. After
  // `timeout` (<= 0: none) the container is killed and timed_out set.
  // Thread-safe: other threads may Run other containers or Kill this one.
  virtual Result<ExitInfo> Run(const RunSpec& spec, const OutputSink& sink, std::chrono::milliseconds timeout,
                               const std::function<void()>& on_started) = 0;

  // Kills and removes a container. If a Run of it is in progress, that Run
  // returns killed=true, even when Kill lands before the container exists.
  // Ok if the container is already gone. Thread-safe.
  virtual Status Kill(const std::string& container_name) = 0;

  // Host directories, besides the writable mounts' own host paths, where a
  // container whose Run is in progress writes now: a pilot's directories
  // (pilot_pool.h), whose contents reach the mounts' paths only when the
  // task ends. Empty when the container writes to its mounts directly, and
  // once its Run is over. Thread-safe.
  virtual std::vector<std::string> LiveWritableDirs(const std::string& container_name) { return {}; }

  // The sandbox an attempt of `spec` runs in here (see SandboxFacts). Cheap:
  // computed once per driver and runtime. Thread-safe.
  virtual SandboxFacts Facts(const RunSpec& spec) const {
    SandboxFacts f;
    f.runtime = spec.runtime;
    return f;
  }

  // Freezes every process of a container whose Run is in progress (the
  // node's owner needs the machine, agent/pause_policy.h): they use no CPU
  // and submit no GPU work until Thaw; the Run goes on waiting, and the
  // time frozen does not count against its timeout. Idempotent. NotFound when no such container runs now
  // (not started yet, or ended); FailedPrecondition for a driver that cannot.
  // Kill works on a frozen container. Thread-safe.
  virtual Status Freeze(const std::string& container_name) {
    return Status::FailedPrecondition("this driver cannot freeze " + container_name);
  }
  // Lets a frozen container run again. Idempotent; NotFound as for Freeze.
  virtual Status Thaw(const std::string& container_name) {
    return Status::FailedPrecondition("this driver cannot thaw " + container_name);
  }
  // Host pids of the container's processes while its Run is in progress
  // (a GPU process among them is the job's, not the owner's); empty when none
  // or unknown. Thread-safe.
  virtual std::vector<int> HostPids(const std::string& container_name) { return {}; }

  // Names of all containers labelled idlegrid=1, running or not, so that an
  // agent restarted after a crash can Kill its leftovers.
  virtual Result<std::vector<std::string>> ListContainers() = 0;
};

}  // namespace idlegrid::runtime
