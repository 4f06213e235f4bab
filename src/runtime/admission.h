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

// The OCI runtime an attempt runs with, and why, for the agent's log.
struct RuntimeChoice {
  std::string runtime;
  std::string why;  // "" when the job's own choice stands for no reason worth saying
};
// A tenant's job that asks for runc runs under gVisor (runsc) when the agent
// prefers it for tenants (`gvisor_for_tenants`) and the host can enforce its
// limits there (enforcement.runsc_unavailable() empty); otherwise as asked,
// with the reason gVisor was not used. The operator's jobs and jobs naming
// runsc run as asked. Pure.
RuntimeChoice ChooseRuntime(const std::string& asked, bool untrusted_tenant, bool gvisor_for_tenants,
                            const v1::Enforcement& enforcement);

}  // namespace idlegrid::runtime
