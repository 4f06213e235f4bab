#include "runtime/enforcement_probe.h"

#include <dirent.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "common/fs.h"

namespace idlegrid::runtime {
namespace {

constexpr char kCgroupRoot[] = "/sys/fs/cgroup";

bool IsCgroup2(const std::string& path) {
  struct statfs fs {};
  return ::statfs(path.c_str(), &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
}

bool Contains(const std::vector<std::string>& items, const std::string& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

std::vector<std::string> ReadControllers(const std::string& path) {
  std::vector<std::string> out;
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return out;
  std::istringstream in(*text);
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

v1::Enforcement DecideEnforcement(const CgroupFacts& facts) {
  v1::Enforcement e;
  e.set_cgroup_version(facts.cgroup_version);
  e.set_memory(Contains(facts.controllers, "memory") ? "cgroup" : "rlimit");
  e.set_pids(Contains(facts.controllers, "pids") ? "cgroup" : "rlimit");
  e.set_cpu(Contains(facts.controllers, "cpu") ? "cgroup" : "");
  e.set_disk("rlimit");
  return e;
}

CgroupFacts ProbeCgroupFacts(uid_t uid) {
  CgroupFacts facts;
  const std::string root = kCgroupRoot;
  if (IsCgroup2(root)) {
    facts.cgroup_version = "v2";
    const std::string u = std::to_string(uid);
    facts.controllers =
        ReadControllers(uid == 0 ? root + "/cgroup.controllers"
                                 : root + "/user.slice/user-" + u + ".slice/user@" + u + ".service/cgroup.controllers");
    return facts;
  }
  facts.cgroup_version = IsCgroup2(root + "/unified") ? "hybrid" : "v1";
  if (uid == 0) {
    for (const char* controller : {"memory", "pids", "cpu"}) {
      if (PathExists(root + "/" + controller)) facts.controllers.push_back(controller);
    }
  }
  return facts;
}

v1::Enforcement ProbeEnforcement() { return DecideEnforcement(ProbeCgroupFacts(::geteuid())); }

std::vector<std::string> ProbeRuntimes(const std::string& path_env) {
  std::vector<std::string> dirs;
  std::istringstream in(path_env);
  for (std::string dir; std::getline(in, dir, ':');) {
    if (!dir.empty()) dirs.push_back(dir);
  }
  // podman finds runtimes through containers.conf, whose defaults include
  // sbin directories that an unprivileged user's PATH often lacks.
  for (const char* dir : {"/usr/local/bin", "/usr/local/sbin", "/usr/bin", "/usr/sbin", "/bin", "/sbin"}) {
    dirs.push_back(dir);
  }
  std::vector<std::string> found;
  for (const char* runtime : {"runc", "runsc"}) {
    for (const std::string& dir : dirs) {
      if (IsExecutableFile(dir + "/" + runtime)) {
        found.push_back(runtime);
        break;
      }
    }
  }
  return found;
}

std::vector<std::string> ProbeRuntimes() {
  const char* path = std::getenv("PATH");
  return ProbeRuntimes(path == nullptr ? "" : path);
}

std::optional<ProcStatus> ParseProcStatus(const std::string& status_text) {
  std::optional<uid_t> uid;
  std::optional<uint32_t> threads;
  std::istringstream in(status_text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string key;
    fields >> key;
    unsigned long value = 0;
    if (key == "Uid:" && fields >> value) uid = static_cast<uid_t>(value);
    if (key == "Threads:" && fields >> value) threads = static_cast<uint32_t>(value);
  }
  if (!uid || !threads) return std::nullopt;
  return ProcStatus{*uid, *threads};
}

uint32_t CountUserProcesses(uid_t uid) {
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return 0;
  uint32_t total = 0;
  while (const dirent* entry = ::readdir(proc)) {
    const std::string name = entry->d_name;
    if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    Result<std::string> text = ReadFile("/proc/" + name + "/status");
    if (!text.ok()) continue;
    std::optional<ProcStatus> status = ParseProcStatus(*text);
    if (status && status->real_uid == uid) total += status->threads;
  }
  ::closedir(proc);
  return total;
}

}  // namespace idlegrid::runtime
