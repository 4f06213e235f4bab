#pragma once
// Pure translation of one job attempt into an OCI runtime-spec `config.json`
// for `runc run`, giving the job the same sandbox BuildPodmanRunArgs asks
// podman for: no network (a fresh network namespace holding only loopback),
// a read-only root, /tmp, /var/tmp and /dev/shm tmpfs of the spec's sizes
// (ShmBytes, TmpBytes), no capabilities, no_new_privs, podman's
// seccomp filter and masked/read-only /proc and /sys paths, the same rlimits
// and (only where enforcement says cgroup) the same cgroup limits.
//
// The container gets its own user namespace in which the agent's uid (and
// gid) is root. Like rootless podman, ids 1..N map to the agent user's
// subordinate ranges (/etc/subuid, /etc/subgid) when it has them (runc then
// writes the maps with newuidmap/newgidmap); without them only root exists
// inside, which is all an unprivileged runc can map on its own.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "image/image_config.h"
#include "runtime/podman_args.h"
#include "runtime/seccomp_profile.h"

namespace idlegrid::runtime {

// One line of a user namespace's uid_map or gid_map.
struct IdMapping {
  uint32_t container_id = 0;
  uint32_t host_id = 0;
  uint32_t size = 0;
};

// A range of subordinate ids granted to a user (a line of /etc/subuid).
struct SubordinateRange {
  uint32_t start = 0;
  uint32_t count = 0;
};

// Pure: the ranges /etc/subuid (or /etc/subgid) text grants the user named
// `user` or numbered `id`, in file order; malformed lines are skipped.
std::vector<SubordinateRange> ParseSubordinateIds(std::string_view text, const std::string& user, uint32_t id);

// Pure: `host_id` as 0, then `subordinate` ranges as 1, 2, ... in order.
std::vector<IdMapping> NamespaceIdMappings(uint32_t host_id, const std::vector<SubordinateRange>& subordinate);

// What the caller knows about the host and the bundle; all paths absolute.
struct OciHostContext {
  // Must map container id 0 (the agent's uid/gid, e.g. NamespaceIdMappings).
  std::vector<IdMapping> uid_mappings;
  std::vector<IdMapping> gid_mappings;
  std::string rootfs_path;    // the image's shared unpacked root, mounted read-only
  std::string hosts_file;     // bind-mounted read-only at /etc/hosts; "" for none
  std::string hostname_file;  // bind-mounted read-only at /etc/hostname; "" for none
  // Parent of the container's cgroup ("/idlegrid" gives "/idlegrid/<name>").
  // Used only when `enforcement` names a cgroup controller; otherwise the
  // config has no cgroupsPath and no resources, which rootless runc accepts.
  std::string cgroups_parent = "/idlegrid";
  // The non-root user jobs run as (JobUserFor), or nullopt for the image's
  // user. An image whose User is numeric, non-root and mapped keeps it.
  std::optional<std::pair<uint32_t, uint32_t>> job_user;
};

// The argv the container starts with, with podman's rules: `spec.command`
// replaces the image entrypoint; `spec.args` replaces the image cmd, and the
// image cmd is also dropped when `spec.command` is set. Empty when neither the
// spec nor the image gives a program.
std::vector<std::string> ContainerArgv(const RunSpec& spec, const image::ImageConfig& image);

// The environment, in podman's order and with its defaults: PATH and TERM,
// then the image's Env, then container=podman (kept so a job cannot tell the
// two runtimes apart), HOSTNAME, then `spec.env`; a later NAME replaces an
// earlier one in place.
std::vector<std::string> ContainerEnv(const RunSpec& spec, const image::ImageConfig& image,
                                      const std::string& hostname);

// The container's hostname: its name, cut to the 63 bytes a hostname may have.
std::string ContainerHostname(const std::string& container_name);

// /etc/hosts for a container without network: loopback names and `hostname`.
std::string ContainerHostsFile(const std::string& hostname);

// Renders config.json for `spec` (which must have passed ValidateRunSpec).
// Rlimits follow BuildPodmanRunArgs exactly: NOFILE=kNofileLimit always;
// DATA=max(memory, kMinDataRlimitBytes) when memory is enforced by rlimit;
// NPROC=pids+spec.host_user_processes when pids are enforced at all; FSIZE when
// disk is enforced by rlimit. Cgroup limits (memory+swap, pids, CPU quota) and
// a deny-all device list only for controllers `enforcement` names "cgroup".
// Seccomp: `seccomp` as given (see ConvertSeccompProfile).
// FailedPrecondition when the job cannot run this way: GPUs requested (CDI is
// podman's), runtime other than runc, or an image User that is neither root
// nor numeric ids mapped in `host` (names would need the image's /etc/passwd).
// InvalidArgument when there is no program to run or no mapping of id 0. Pure.
Result<std::string> BuildOciConfig(const RunSpec& spec, const v1::Enforcement& enforcement,
                                   const image::ImageConfig& image, const SeccompProfile& seccomp,
                                   const OciHostContext& host);

}  // namespace idlegrid::runtime
