#pragma once
// What this host can enforce for the agent's user, and which OCI runtimes it
// has. The Decide/Parse functions (and RunscNvproxyUnavailable) are pure; the
// Probe/Count ones read /sys, /proc and PATH, and ProbeRunscGpuUnavailable
// runs runsc.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::runtime {

struct CgroupFacts {
  std::string cgroup_version;            // "v1" | "v2" | "hybrid"
  std::vector<std::string> controllers;  // controllers podman may configure for this user
};

// Pure. memory/pids: "cgroup" when the controller is usable, else "rlimit";
// cpu: "cgroup" or "" (no rlimit caps a CPU share); disk: always "rlimit".
v1::Enforcement DecideEnforcement(const CgroupFacts& facts);

// Reads /sys/fs/cgroup for `uid`. Version from the filesystem magic of
// /sys/fs/cgroup (cgroup2 = v2; a tmpfs with a cgroup2 "unified" below = hybrid;
// else v1). Usable controllers: on v2, root gets /sys/fs/cgroup/cgroup.controllers
// and others what systemd delegated to user@<uid>.service; on v1/hybrid root
// gets every mounted memory/pids/cpu hierarchy and others none (rootless podman
// cannot use v1 cgroups). Never fails: unreadable files mean "not usable".
CgroupFacts ProbeCgroupFacts(uid_t uid);

// DecideEnforcement(ProbeCgroupFacts(geteuid())).
v1::Enforcement ProbeEnforcement();

// Which of runc and runsc exist as executable files on `path_env` (a PATH
// value) or in the system directories podman itself searches, in that order
// ("runc" first). No process is started.
std::vector<std::string> ProbeRuntimes(const std::string& path_env);
// ProbeRuntimes($PATH).
std::vector<std::string> ProbeRuntimes();

// Pure. Why the runsc whose `runsc flags` output is `flags_text` cannot pass
// a GPU into its sandbox, or "" when it can: gVisor passes NVIDIA GPUs only
// through nvproxy, and a runsc that lists no `-nvproxy` flag has none (Debian
// 12's release 20221219 has none; gVisor added it in 2023). `version_text`
// (`runsc --version`) only names the release in the reason.
std::string RunscNvproxyUnavailable(const std::string& flags_text, const std::string& version_text);

// Enforcement.runsc_gpu_unavailable for the runsc that podman would find on
// `path_env` (ProbeRuntimes' directories): "not installed", why `runsc flags`
// could not be read, or RunscNvproxyUnavailable of its output. Runs `runsc
// flags` and `runsc --version` (a few milliseconds each, 5 s at most).
std::string ProbeRunscGpuUnavailable(const std::string& path_env);
// ProbeRunscGpuUnavailable($PATH).
std::string ProbeRunscGpuUnavailable();

// Pure. The real uid and thread count from the text of /proc/<pid>/status;
// nullopt when either line is missing or malformed.
struct ProcStatus {
  uid_t real_uid = 0;
  uint32_t threads = 0;
};
std::optional<ProcStatus> ParseProcStatus(const std::string& status_text);

// Tasks (threads) whose real uid is `uid`, summed over /proc/*/status: what
// RLIMIT_NPROC compares against when that uid forks. Processes that vanish
// while we read are skipped.
uint32_t CountUserProcesses(uid_t uid);

}  // namespace idlegrid::runtime
