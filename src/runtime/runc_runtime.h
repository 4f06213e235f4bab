#pragma once
// ContainerRuntime that starts each attempt with `runc run` directly, without
// podman (bench/runtime_start.cc: ~4x podman's rate on a loaded 2-core box,
// ~190 ms vs ~790 ms a container, almost all of it runc). Each verified image is
// unpacked ONCE per node into an OCI root filesystem (image/rootfs_unpack.h)
// that every container of that image mounts read-only; each Run writes a
// small per-container bundle (config.json from BuildOciConfig, /etc/hosts,
// /etc/hostname) and removes it afterwards. The sandbox is the one podman
// gives (oci_config.h): same namespaces, rlimits, seccomp filter, masked
// paths, capabilities (none) and mounts.
//
// Works as root and as an unprivileged user (rootless runc: the user's
// subordinate ids mapped as podman maps them; no cgroup limits unless root).
// Refuses, with FailedPrecondition, what only podman can do: runsc (gVisor),
// GPUs (CDI), images whose User is a name other than root.
//
// Known differences from podman's sandbox (tests/runtime/runc_runtime_test.cc
// compares the two): the hostname is the container name; RLIMIT_NPROC is
// exact (see Run); rootless runc never calls setgroups, so the job keeps the
// agent user's supplementary groups (run the agent as a user with no groups
// but its own); as root only uid 0 is mapped (podman as root uses no user
// namespace), so setuid() to another id fails with EINVAL instead of EPERM;
// /etc/hosts lists loopback and the hostname only; bind mounts also get
// nosuid,nodev. runc creates missing mount points (e.g. a job's "/out") as
// empty entries in the shared rootfs, where later containers of that image
// on this node see them.
//
// Layout under `bundles_dir`:
//   <image id>/rootfs/            the unpacked image, shared by its containers
//   <image id>/image-config.json  the verified image config; marks a complete unpack
//   containers/<name>/            one Run's bundle, removed when it ends (and
//                                 each pilot's, with its mounts' directories)
//   pilot/pilot                   the pilot program, written at start
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "runtime/container_runtime.h"

namespace idlegrid::runtime {

struct RuncRuntimeOptions {
  // A path, or a name searched on PATH and then in the sbin directories an
  // unprivileged user's PATH often lacks (Debian installs /usr/sbin/runc).
  std::string runc_binary = "runc";
  // runc's state (`runc --root`): one per agent, on a filesystem runc can
  // lock, owned by the agent's user, e.g. $XDG_RUNTIME_DIR/idlegrid-runc or
  // <agent data dir>/runc. Created (0700) if missing.
  std::string state_dir;
  // Unpacked images and per-container bundles, e.g. <agent data dir>/bundles.
  // Created (0700) if missing. Must not be shared with another agent.
  std::string bundles_dir;
  // Overrides the probed enforcement (tests; operators pinning behaviour). By
  // default root gets ProbeEnforcement(); an unprivileged user gets rlimits
  // only (memory/pids/disk "rlimit", cpu ""), since rootless runc here cannot
  // create cgroups.
  std::optional<v1::Enforcement> enforcement;
  // Unprivileged agents: map the user's /etc/subuid and /etc/subgid ranges
  // as ids 1..N inside (runc runs newuidmap/newgidmap from its PATH), as
  // rootless podman does. Without ranges (or with false) only root exists
  // inside, which starts containers ~12% faster. Root maps only itself.
  bool map_subordinate_ids = true;
  // The base seccomp profile idlegrid's is made from (seccomp_hardening.h):
  // "" for the one built into the binary (containers-common's default).
  std::string seccomp_profile_path;
  // Attempts of one sandbox group (RunSpec.sandbox_group) run one after
  // another in a shared pilot sandbox (pilot_pool.h) when true; an idle pilot
  // is kept this long for the group's next task.
  bool pilots = true;
  std::chrono::milliseconds pilot_linger{2'000};
};

// Never null. Resolves runc, reads and converts the seccomp profile, creates
// the two directories and removes what a crash left there (interrupted
// unpacks, bundles of containers runc no longer knows), once, now. If any of that fails, Runtimes() is empty and Run
// returns FailedPrecondition saying why, so an agent can fall back to podman.
//
// Contracts beyond ContainerRuntime's:
//   LoadImage  verifies the OCI archive (digests) and unpacks it; Ok at once
//              when the image is already unpacked; concurrent calls for one
//              image unpack it once. DataLoss when the archive holds another
//              image or a gzip layer is not its diff_id; InvalidArgument for
//              a hostile layer, a zstd one, or a gzip one over 32 GiB.
//   HasImage   true when <bundles>/<id>/image-config.json exists.
//   Run        Attempts with a sandbox group run in a pilot (pilot_pool.h)
//              when PilotEligible, the kernel counts RLIMIT_NPROC per user
//              namespace and their mounts are on the bundles' filesystem;
//              otherwise, and when no pilot can be started, in a container
//              of their own.
//              FailedPrecondition for runsc, GPUs or an image User that is a
//              name other than root (or unmapped ids).
//              ExitInfo.error is set when runc itself failed (it logged an
//              error), exit_code is then runc's (1); oom when the container
//              died of SIGKILL (137) that neither Kill nor the timeout sent.
//              RunSpec.host_user_processes is ignored on Linux >= 5.14: the
//              container has its own user namespace, where RLIMIT_NPROC
//              counts only its tasks (so NPROC = pids exactly); older kernels
//              count the whole host uid and get podman's arithmetic.
//   Kill       `runc kill NAME KILL`, then `runc delete --force NAME`.
//   ListContainers  `runc list` names starting with "idlegrid-", except the
//              pilots this runtime runs (a previous agent's are listed).
std::unique_ptr<ContainerRuntime> NewRuncRuntime(RuncRuntimeOptions options);

// Names ListContainers reports, and so the names the agent gives containers.
inline constexpr char kRuncContainerPrefix[] = "idlegrid-";

}  // namespace idlegrid::runtime
