#include "runtime/process_freeze.h"

#include <dirent.h>
#include <signal.h>

#include <cerrno>
#include <cstdlib>
#include <set>

#include "common/fs.h"

namespace idlegrid::runtime {

namespace {

// A tree that keeps forking faster than we sweep is a fork bomb the pids
// limit stops; a few sweeps are plenty for anything else.
constexpr int kMaxSweeps = 20;

Status SignalTree(int root, int signal, bool sweep_until_stable) {
  if (root <= 0 || ::kill(root, 0) != 0) {
    return Status::NotFound("process " + std::to_string(root) + " does not exist");
  }
  std::set<int> signalled;
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    bool found_new = false;
    for (int pid : DescendantsOf(root, ReadParentMap())) {
      if (!signalled.insert(pid).second) continue;
      found_new = true;
      // ESRCH: it ended between the listing and the signal.
      if (::kill(pid, signal) != 0 && errno != ESRCH) {
        return Status::PermissionDenied("cannot signal process " + std::to_string(pid) + ": errno " +
                                        std::to_string(errno));
      }
    }
    if (!found_new || !sweep_until_stable) return Status::Ok();
  }
  return Status::Ok();
}

}  // namespace

std::vector<int> DescendantsOf(int root, const std::map<int, int>& parent_of) {
  std::map<int, std::vector<int>> children;
  for (const auto& [pid, ppid] : parent_of) children[ppid].push_back(pid);
  std::vector<int> out{root};
  for (size_t i = 0; i < out.size(); ++i) {
    auto it = children.find(out[i]);
    if (it == children.end()) continue;
    for (int child : it->second) {
      if (child != root) out.push_back(child);
    }
  }
  return out;
}

std::map<int, int> ReadParentMap() {
  std::map<int, int> out;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return out;
  while (struct dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    Result<std::string> stat = ReadFile("/proc/" + std::string(e->d_name) + "/stat");
    if (!stat.ok()) continue;
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    size_t close = stat->rfind(')');
    if (close == std::string::npos || close + 4 >= stat->size()) continue;
    out[static_cast<int>(pid)] = std::atoi(stat->c_str() + close + 4);
  }
  ::closedir(dir);
  return out;
}

Status StopTree(int root) { return SignalTree(root, SIGSTOP, true); }

Status ContinueTree(int root) { return SignalTree(root, SIGCONT, false); }

Result<int> InitPidOfRuncState(const std::string& state_json) {
  const std::string key = "\"pid\":";
  size_t at = state_json.find(key);
  if (at == std::string::npos) return Status::NotFound("no pid in the container's state");
  at += key.size();
  while (at < state_json.size() && state_json[at] == ' ') ++at;
  int pid = std::atoi(state_json.c_str() + at);
  if (pid <= 0) return Status::NotFound("the container has no running process");
  return pid;
}

}  // namespace idlegrid::runtime
