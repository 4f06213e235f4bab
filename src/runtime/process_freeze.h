#pragma once
// Freezing a container's processes with signals: SIGSTOP to every process
// under its init, SIGCONT to thaw. Works without a cgroup freezer (rootless
// runc on cgroup v1, or without delegation): the agent's user owns the
// container's user namespace, so it may signal the job's processes even when
// they run as a subordinate uid. A stopped process uses no CPU, and a GPU
// context whose host threads are stopped submits no more work.
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace idlegrid::runtime {

// `root` and every process descending from it in `parent_of` (pid -> ppid),
// root first. Pure.
std::vector<int> DescendantsOf(int root, const std::map<int, int>& parent_of);

// The host's processes' parents, from /proc/*/stat.
std::map<int, int> ReadParentMap();

// Stops every process of the tree under `root` (itself included), sweeping
// until a sweep finds no process it has not stopped (a fork between sweeps
// is caught by the next one). NotFound when `root` does not exist.
Status StopTree(int root);
// Continues every process of the tree under `root`. NotFound as above.
Status ContinueTree(int root);

// The "pid" of a `runc state` JSON document; NotFound when absent or 0. Pure.
Result<int> InitPidOfRuncState(const std::string& state_json);

}  // namespace idlegrid::runtime
