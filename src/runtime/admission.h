#pragma once
// Pure admission check: can this host enforce what a job asks for? No I/O.
#include <string>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::runtime {

// Returns Ok when `runtime` is one of `available_runtimes` and `enforcement`
// (from ProbeEnforcement) can cap what `resources` asks: memory and pids must be
// enforceable (cgroup or rlimit), disk too when disk_bytes is set, CPU only when
// strict_cpu is set, and runsc needs memory cgroups (gVisor ignores
// RLIMIT_DATA). Otherwise FailedPrecondition whose message says what the host
// lacks and what the user can change, e.g. "host cannot cap CPU (cgroup v1
// without delegation; only rlimits are enforceable) and the job sets strictCpu".
Status CheckAdmission(const v1::Resources& resources, const std::string& runtime, const v1::Enforcement& enforcement,
                      const std::vector<std::string>& available_runtimes);

// Why gVisor cannot run jobs on a host with `enforcement` and the OCI
// runtimes `available`, or "" when it can (Enforcement.runsc_unavailable).
std::string RunscUnavailable(const v1::Enforcement& enforcement, const std::vector<std::string>& available);

// How a job's GPUs reach its sandbox (Provenance.gpu_isolation); "" for a
// job that is passed no GPU.
inline constexpr char kGpuIsolationNvproxy[] = "runsc-nvproxy";  // gVisor's GPU proxy
inline constexpr char kGpuIsolationRunc[] = "runc";              // runc, idlegrid's sandbox, CDI devices

// The OCI runtime an attempt runs with, and why, for the agent's log.
struct RuntimeChoice {
  std::string runtime;
  bool nvproxy = false;       // runsc passes the GPUs in through nvproxy (RunSpec::nvproxy)
  std::string gpu_isolation;  // kGpuIsolation*, or "" when no GPU is passed in
  std::string why;            // "" when the job's own choice stands for no reason worth saying
  // The job cannot run here as it asks (it names runsc and needs GPUs this
  // runsc cannot pass in): the attempt is refused with `why`, never run
  // under a weaker sandbox than the one it named.
  bool refused = false;
};
// Without GPUs (`passes_gpus` false): a tenant's job that asks for runc runs
// under gVisor (runsc) when the agent prefers it for tenants
// (`gvisor_for_tenants`) and the host can enforce its limits there
// (enforcement.runsc_unavailable() empty); otherwise as asked, with the
// reason gVisor was not used. The operator's jobs and jobs naming runsc run
// as asked.
// With real GPUs passed in: runsc with nvproxy where gVisor would be used
// (the job names runsc, or a tenant's job as above) and this runsc has
// nvproxy (enforcement.runsc_gpu_unavailable() empty too); otherwise, for a
// job that names runsc, refused; for the rest runc, with the sandbox every
// runc job gets (seccomp_hardening.h, podman_args.h) and the GPUs' CDI
// devices; never runsc without nvproxy (which cannot pass a GPU in). Pure.
RuntimeChoice ChooseRuntime(const std::string& asked, bool untrusted_tenant, bool gvisor_for_tenants, bool passes_gpus,
                            const v1::Enforcement& enforcement);

}  // namespace idlegrid::runtime
