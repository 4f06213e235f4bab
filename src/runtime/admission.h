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

}  // namespace idlegrid::runtime
