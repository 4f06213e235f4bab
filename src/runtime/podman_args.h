#pragma once
// Pure translation of one job attempt into a `podman run` argument vector.
// No I/O: the caller (PodmanRuntime) supplies everything it needs, including
// how this host enforces limits.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::runtime {

// Floors applied to the memory cap, because the OCI runtime itself must start
// inside it. Measured with runc 1.1 here: runc's init fails to load its seccomp
// filter under RLIMIT_DATA below ~80 MiB, and podman cannot attach to a
// container whose memory cgroup is 4 MiB. A job asking for less gets the floor.
inline constexpr uint64_t kMinDataRlimitBytes = 128ull << 20;
inline constexpr uint64_t kMinCgroupMemoryBytes = 8ull << 20;
// Every container may open this many files; podman refuses values above the
// caller's hard limit, and 1024 is below every default hard limit.
inline constexpr int kNofileLimit = 1024;
// The size of /dev/shm, /tmp and /var/tmp (tmpfs) for a spec that gives none
// (resources.shm_bytes or tmp_bytes 0: a spec from a coordinator older than
// those fields): 64 MiB each, what every job got before, and podman's own
// /dev/shm default. Newer coordinators always fill them (manifest/manifest.h).
inline constexpr uint64_t kUnsizedTmpfsBytes = 64ull << 20;
// Where a job's HOME is inside its container: a writable directory of the
// attempt's scratch (agent/attempt_stages.h), counted in its disk total.
inline constexpr char kJobHomeDir[] = "/home/job";

// The job's /dev/shm size, and that of /tmp and of /var/tmp (each): the spec's,
// or kUnsizedTmpfsBytes when it gives none. Pure.
uint64_t ShmBytes(const v1::Resources& resources);
uint64_t TmpBytes(const v1::Resources& resources);
// `bytes` in KiB, rounded up ("65536k"): what podman's --shm-size and a
// tmpfs `size=` option both read. Pure.
std::string TmpfsSize(uint64_t bytes);
// The user a job runs as inside its container when the agent's user has
// subordinate ids: not root, and mapped to a subordinate id on the host, so
// the job owns nothing of the agent's (its key, state, home) even if it
// escaped its mount namespace. Files it writes to its mounts are owned by
// that subordinate id (agent/job_files.h gives them back).
inline constexpr uint32_t kJobUid = 1000;
inline constexpr uint32_t kJobGid = 1000;
// Label on every container we start, so a restarted agent can find leftovers.
inline constexpr char kContainerLabel[] = "idlegrid=1";

struct Mount {
  std::string host_path;       // absolute; no ':' or ','
  std::string container_path;  // absolute; no ':' or ','
  bool read_only = true;
  // What a read-only mount holds (e.g. the input artifact's digest), so that
  // attempts of one sandbox group can share one copy (pilot_protocol.h).
  std::string content_digest;
};

struct RunSpec {
  std::string container_name;        // "idlegrid-<attempt id>"
  std::string image_id;              // podman image id (config digest hex, 64 chars)
  std::string runtime = "runc";      // "runc" | "runsc"
  std::vector<std::string> command;  // overrides the image entrypoint when non-empty
  std::vector<std::string> args;     // overrides the image cmd when non-empty
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<Mount> mounts;
  // Real GPUs to pass in, by UUID, through the host's CDI spec
  // (`--device nvidia.com/gpu=<uuid>`, written by `nvidia-ctk cdi generate`).
  std::vector<std::string> gpu_uuids;
  // runsc only: gVisor's GPU proxy (`--runtime-flag nvproxy`), without which
  // runsc cannot pass a GPU in (runtime::ChooseRuntime decides).
  bool nvproxy = false;
  v1::Resources resources;  // a zero limit means "no cap" (validation fills defaults)
  // Processes/threads the agent's uid already has: RLIMIT_NPROC counts per
  // host uid, and rootless containers run as that uid.
  uint32_t host_user_processes = 0;
  // Attempts with the same non-empty group (tasks of one array job) may run
  // one after another in one sandbox on this node (pilot_pool.h); "" gives
  // the attempt a container of its own.
  std::string sandbox_group;
  // The provider-approved job class ("" or "io-uring"): which seccomp
  // profile the container gets (seccomp_hardening.h).
  std::string job_class;
};

// What the podman driver adds for every container on this host.
struct PodmanSandbox {
  std::string seccomp_profile_path;  // --security-opt seccomp=PATH; "" leaves podman's default
  std::string user;                  // --user UID:GID; "" runs the image's user
  std::string pidfile;               // --pidfile PATH (the container's first process); "": none
};

// Checks that every string of `spec` is safe to hand to podman as an argument:
// a name podman accepts, a 64-hex image id, a known runtime (runsc with GPUs
// only with nvproxy, nvproxy only with runsc), absolute mount
// paths without the ':' and ',' that `-v` splits on, portable env names, and no
// NUL bytes anywhere. Returns InvalidArgument naming the offending field.
Status ValidateRunSpec(const RunSpec& spec);

// InvalidArgument unless `name` matches podman's [a-zA-Z0-9][a-zA-Z0-9_.-]*.
Status ValidateContainerName(const std::string& name);
// InvalidArgument unless `image_id` is 64 lowercase hex digits.
Status ValidateImageId(const std::string& image_id);

// Returns the arguments after the podman binary ("run", "--rm", ...), ending in
// the image id and spec.args. Flags follow `enforcement` (see idlegrid.proto):
//   memory  cgroup: --memory/--memory-swap B    rlimit: --ulimit data=B:B
//   pids    cgroup: --pids-limit N (runc only)  both:   --ulimit nproc=M:M
//   cpu     cgroup: --cpus X                    otherwise not capped
//   disk    rlimit: --ulimit fsize=B:B (per file)
// and always --shm-size ShmBytes, --tmpfs /tmp and /var/tmp of TmpBytes each.
// Expects a spec that passed ValidateRunSpec; never fails.
std::vector<std::string> BuildPodmanRunArgs(const RunSpec& spec, const v1::Enforcement& enforcement,
                                            const PodmanSandbox& sandbox = {});

// `command` as the JSON array `--entrypoint` takes: ["/bin/sh","-c"].
std::string EntrypointJson(const std::vector<std::string>& command);

}  // namespace idlegrid::runtime
