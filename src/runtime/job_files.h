#pragma once
// Files a job wrote to its writable mounts belong to the job user's host id
// (a subordinate id of the agent's user, job_sandbox.h), not to the agent:
// the agent can read what the job left readable, but cannot delete inside
// the job's directories or read what it hid. These give the agent its files
// back once no process of the job runs.
#include <string>
#include <vector>

#include "common/status.h"

namespace idlegrid::runtime {

// Makes the directories (for every mount/dir to be writable by the job
// user) world-writable; each must be inside a directory only the agent can
// enter. Returns the first error.
Status OpenForJob(const std::vector<std::string>& dirs);

// OpenForJob for `dir` and every directory under it, and makes its regular
// files read-write for all (a restored checkpoint the job must update).
// Links are not followed.
Status OpenTreeForJob(const std::string& dir);

// Whether any entry under `dirs` (not following links) belongs to another
// user than this process's and is out of its reach (a directory not rwx
// for all, a file not readable by all), or cannot be read.
bool HoldsForeignEntries(const std::vector<std::string>& dirs);

// Chowns everything under `dirs` to the agent's own user, without following
// links, through a user namespace of the agent's user with its subordinate
// ids mapped (`unshare --map-root-user --map-auto chown -hR 0:0`), where the
// agent may act as the job user's owner. Ok at once when nothing there is
// out of reach (HoldsForeignEntries). Call only when no process of the job can still write there.
Status ReclaimJobFiles(const std::vector<std::string>& dirs);

}  // namespace idlegrid::runtime
