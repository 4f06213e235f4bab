#pragma once
// `idlegrid agent join` decided on plain values (docs/provider.md): where an
// unprivileged user's agent keeps its config and state, the config file's
// text, the systemd user unit, and what this host lacks for rootless podman
// with the fix for each. No I/O here; agent/join.cc gathers the facts and
// does the writing.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "common/status.h"

namespace idlegrid::agent {

// "https://host:port", "grpcs://host:port", "host:port" or "host" (then the
// coordinator's default gRPC port 7443) -> "host:port". IPv6 as "[::1]:7443".
// InvalidArgument for another scheme, a path, or an empty host.
Result<std::string> CoordinatorAddressFromUrl(const std::string& url);

// The XDG base directories as the spec defines them: XDG_CONFIG_HOME or
// HOME/.config, XDG_DATA_HOME or HOME/.local/share (relative values are
// ignored, as the spec says).
struct AgentPaths {
  std::string config_dir;          // .../idlegrid
  std::string config_file;         // .../idlegrid/agent.yaml
  std::string client_config_file;  // .../idlegrid/config.yaml (what the CLI reads by default)
  std::string data_dir;            // .../idlegrid/agent
  std::string unit_dir;            // .../systemd/user
  std::string unit_file;           // .../systemd/user/idlegrid-agent.service
};
// InvalidArgument when neither HOME nor the XDG variables give an absolute path.
Result<AgentPaths> AgentPathsFromEnv(const std::map<std::string, std::string>& env);

constexpr char kAgentUnitName[] = "idlegrid-agent.service";

// The agent's config file (YAML): the keys of RenderAgentConfig, each the
// long name of an `idlegrid agent` flag with '_' for '-'. No secrets: the
// join token is spent at join time and the node credential lives in the data
// directory.
std::string RenderAgentConfig(const AgentConfig& config);
// Applies a config file's keys to `config`, except those whose flag was
// given on the command line (`given`, flag names without "--"). Unknown keys
// are InvalidArgument (a typo must not silently do nothing), as are values of
// the wrong type.
Status ApplyAgentConfig(const std::string& yaml_text, const std::set<std::string>& given, AgentConfig* config);

// The systemd user unit that runs `binary agent --config config_file`
// (paths are escaped for systemd, except a leading "%h/", kept as the home
// specifier for the packaged unit).
// SIGTERM goes to the agent alone (KillMode=mixed) so it can drain its
// containers; systemd kills what is left after TimeoutStopSec.
std::string RenderUserUnit(const std::string& binary, const std::string& config_file, int grace_seconds);

// What the join looked at on this host.
struct HostFacts {
  std::string user;
  uid_t uid = 0;
  std::string subuid_text;  // /etc/subuid ("" when missing)
  std::string subgid_text;  // /etc/subgid
  bool has_podman = false;
  bool has_newuidmap = false;         // newuidmap and newgidmap (package uidmap)
  std::vector<std::string> runtimes;  // runtime::ProbeRuntimes()
  v1::Enforcement enforcement;        // runtime::ProbeEnforcement()
  bool podman_works = true;           // `podman info` as this user succeeded
  std::string podman_error;           // its stderr when not
};

struct Finding {
  bool blocking = false;  // the agent cannot run jobs until it is fixed
  std::string what;
  std::string fix;  // a command or a step, exact enough to paste
};

// Every problem HostFacts shows, blocking ones first. Empty: all is well.
std::vector<Finding> CheckHost(const HostFacts& facts);

// The subordinate id ranges ("name:start:count" lines) of `user` or of its
// numeric uid. Malformed lines are skipped.
struct IdRange {
  uint64_t start = 0;
  uint64_t count = 0;
};
std::vector<IdRange> SubordinateRanges(const std::string& file_text, const std::string& user, uid_t uid);
// A start for a new range that overlaps none in `file_text`: 100000, or
// just past the highest range there.
uint64_t FreeSubordinateStart(const std::string& file_text);

}  // namespace idlegrid::agent
