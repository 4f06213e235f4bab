#pragma once
// `idlegrid agent join` and the local half of `idlegrid agent status`
// (docs/provider.md): the shell around agent/join_plan.h that reads this
// host, writes the user's files, enrolls and drives systemd.
#include <set>
#include <string>

#include "agent/agent.h"
#include "common/status.h"

namespace idlegrid::agent {

struct JoinOptions {
  std::string url;         // https://HOST:PORT of the coordinator's gRPC API
  std::string join_token;  // igj_...
  std::string ca_hash;     // sha256:... of the coordinator CA
  // A provider API token (read scope) saved in the CLI's default config so
  // that `agent status` and `idlegrid nodes` work for this user; optional.
  std::string api_token;
  AgentConfig agent;       // name, cpus, memory, region, drivers: kept in the config file
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
