#pragma once
// The host owner's local policy, from a YAML file the owner edits
// (<data-dir>/policy.yaml by default):
//
//   acceptJobs: true            # false pauses the node
//   maxRunSeconds: 3600         # refuse jobs whose run timeout is longer
//   allowedRuntimes: [runc]     # refuse other runtimes
//   allowedJobClasses: [io-uring]  # job classes that widen the sandbox (none by default)
//   reservedGpuMemory: 4Gi      # per device, kept for the owner
//   reservedCpu: 1              # cores kept for the owner
//   asks:                       # hourly price asks per device class
//     "RTX 4090": 0.35
//     cpu-core: 0.01
#include <string>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::agent {

struct OwnerPolicy {
  v1::LocalPolicy policy;
  std::vector<v1::PriceAsk> asks;
};

// Defaults: accept jobs, no limits, no reserves, no asks.
OwnerPolicy DefaultOwnerPolicy();
// InvalidArgument "<file>:<line>:<col>: ..." for unknown keys, wrong types or impossible values.
Result<OwnerPolicy> ParseOwnerPolicy(const std::string& yaml_text, const std::string& filename);
// Why the owner's policy refuses this job, or Ok. Pure.
Status CheckOwnerPolicy(const v1::JobSpec& spec, const v1::LocalPolicy& policy);

}  // namespace idlegrid::agent
