#pragma once
// `idlegrid agent join` and the local half of `idlegrid agent status`
// (docs/provider.md): the shell around agent/join_plan.h that reads this
// host, writes the user's files, enrolls and drives systemd.
#include <set>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "agent/join_gpu.h"
#include "common/status.h"
#include "discovery/nvml_loader.h"

namespace idlegrid::agent {

struct JoinOptions {
  std::string url;         // https://HOST:PORT of the coordinator's gRPC API
  std::string join_token;  // igj_...
  std::string ca_hash;     // sha256:... of the coordinator CA
  // A provider API token (read scope) saved in the CLI's default config so
  // that `agent status` and `idlegrid nodes` work for this user; optional.
  std::string api_token;
  AgentConfig agent;  // name, cpus, memory, region, drivers: kept in the config file
  int grace_seconds = 30;
  bool ignore_checks = false;  // enroll even when the host checks find a blocking problem
  bool no_start = false;       // write the unit but do not enable or start it
};

// Checks the host, enrolls, writes the config, client config and user unit,
// then enables and starts the unit where a systemd user manager exists (and
// says how to run the agent by hand where none does). Prints what it did and
// each problem with its fix. Returns the exit code: 0 joined, 1 a blocking
// host problem or a failed step, 2 invalid input.
int RunJoin(const JoinOptions& options);

// Where ReadGpuChainFacts looks; the defaults are this host's real places.
struct GpuChainSources {
  std::string nvml_library = discovery::kDefaultNvmlPath;  // AgentConfig.nvml_library
  std::string cuda_library = discovery::kDefaultCudaPath;
  std::vector<std::string> cdi_dirs = {"/etc/cdi", "/var/run/cdi"};  // podman's default cdi_spec_dirs
  std::vector<std::string> extra_cdi_specs;                          // AgentConfig.cdi_specs (--cdi-spec)
  std::vector<std::string> agent_cdi_paths;                          // empty: AttemptEnv's default pair
  std::string pci_devices_dir = "/sys/bus/pci/devices";
};

// Reads the GPU chain for CheckGpuChain: discovery's NVML view (driver and
// CUDA versions, each GPU's index, UUID and name), the NVIDIA display and 3D
// controllers in sysfs, and every CDI spec (*.yaml, *.json) in the CDI dirs,
// plus the extra and the agent's paths that exist, each file once. A file
// that cannot be read or parsed is listed with its error. Never fails.
GpuChainFacts ReadGpuChainFacts(const GpuChainSources& sources);

// Where the current user's agent config lives (XDG), for `agent --config`
// defaults and `agent status`. InvalidArgument without a usable HOME.
Result<std::string> DefaultAgentConfigFile();

// Reads `path` (agent.yaml) into `config`, skipping keys whose flags were given.
Status LoadAgentConfigFile(const std::string& path, const std::set<std::string>& given, AgentConfig* config);

// The node id this data directory enrolled as; NotFound before enrollment.
Result<std::string> EnrolledNodeId(const std::string& data_dir);

// `systemctl --user is-active` of the agent's unit, or a sentence saying why
// there is no answer (no systemd user manager on this host).
std::string UserUnitState();

}  // namespace idlegrid::agent
