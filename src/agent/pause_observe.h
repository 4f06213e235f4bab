#pragma once
// The pause watcher's eyes (agent/pause_policy.h is its judgement): what the
// GPUs, the process table, logind, the power supply and the clock say now.
// Each source is read only when the owner's policy asks about it; a source
// that cannot be read leaves its observation unknown and says why.
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "agent/pause_policy.h"

namespace idlegrid::agent {

struct ObserveInputs {
  std::string nvml_library;
  // Host pids of the agent's own job processes (their GPU use is the job's,
  // not the owner's); called only when some GPU lists a process.
  std::function<std::set<int>()> own_pids;
  std::set<std::string> held_gpu_uuids;  // devices the agent's attempts hold
  int64_t now_ms = 0;                    // the agent's clock, for the owner's hours (0: the system's)
};

// One poll. `unknown` receives "what: why" for each source the policy asks
// about that could not be read (the caller logs each once).
PauseObservation ObserveHost(const PausePolicy& policy, const ObserveInputs& in, std::vector<std::string>* unknown);

// Running processes whose comm or argv[0]'s file name is one of `names`.
std::vector<HostProcess> FindNamedProcesses(const std::vector<std::string>& names);

// "yes"/"no" of `loginctl show-user UID -p IdleHint --value`: true when idle.
// Pure.
std::optional<bool> ParseIdleHint(const std::string& loginctl_output);

}  // namespace idlegrid::agent
