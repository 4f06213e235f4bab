#include "runtime/enforcement_probe.h"

#include <dirent.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>

#include "common/fs.h"
#include "runtime/subprocess.h"

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

// Where `runtime` is on `path_env` or in the system directories podman itself
// searches, or "" when it is nowhere.
std::string FindRuntime(const std::string& runtime, const std::string& path_env) {
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
  for (const std::string& dir : dirs) {
    if (IsExecutableFile(dir + "/" + runtime)) return dir + "/" + runtime;
  }
  return "";
}

// The flag a line of Go's flag listing (`runsc flags`) names: Go prints each
// flag as "  -NAME[ TYPE]" and its usage on lines starting "    \t", so
// "  -nvproxy" -> "nvproxy", "  -fdlimit int" -> "fdlimit", a usage line -> "".
std::string FlagNamed(const std::string& line) {
  if (line.rfind("  -", 0) != 0) return "";
  const size_t start = line.find_first_not_of('-', 2);
  if (start == std::string::npos || start > 4) return "";
  return line.substr(start, line.find_first_of(" \t=", start) - start);
}

// The release date in `runsc --version`: Debian's "runsc version
// 0.0~20221219.0" and gVisor's "runsc version release-20231009.0" both
// carry it as the first 8 digits starting "20"; "" when there are none.
std::string RunscRelease(const std::string& version_text) {
  const std::string first_line = version_text.substr(0, version_text.find('\n'));
  for (size_t i = 0; i + 8 <= first_line.size(); ++i) {
    const std::string candidate = first_line.substr(i, 8);
    const bool digits = std::all_of(candidate.begin(), candidate.end(), [](char c) { return c >= '0' && c <= '9'; });
    const bool starts_run = i == 0 || first_line[i - 1] < '0' || first_line[i - 1] > '9';
    if (digits && starts_run && candidate.rfind("20", 0) == 0) return candidate;
  }
  return "";
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
  std::vector<std::string> found;
  for (const char* runtime : {"runc", "runsc"}) {
    if (!FindRuntime(runtime, path_env).empty()) found.push_back(runtime);
  }
  return found;
}

std::vector<std::string> ProbeRuntimes() {
  const char* path = std::getenv("PATH");
  return ProbeRuntimes(path == nullptr ? "" : path);
}

// The flag list, not the release date, decides: a distribution's version
// string has its own shape (Debian's "0.0~20221219.0"), a build may leave
// nvproxy out, and the list is exactly what this binary accepts. Newer
// gVisor calls the flag legacy (it turns nvproxy on by itself when the OCI
// spec names NVIDIA devices) but still accepts it.
std::string RunscNvproxyUnavailable(const std::string& flags_text, const std::string& version_text) {
  bool listed_any = false;
  std::istringstream in(flags_text);
  for (std::string line; std::getline(in, line);) {
    const std::string flag = FlagNamed(line);
    if (flag == "nvproxy") return "";
    listed_any = listed_any || !flag.empty();
  }
  if (!listed_any) return "`runsc flags` listed no flags, so whether runsc has --nvproxy is unknown";
  const std::string release = RunscRelease(version_text);
  return (release.empty() ? std::string("this runsc") : "runsc release " + release) +
         " has no --nvproxy (gVisor added it in 2023)";
}

std::string ProbeRunscGpuUnavailable(const std::string& path_env) {
  const std::string runsc = FindRuntime("runsc", path_env);
  if (runsc.empty()) return "runsc (gVisor) is not installed (apt-get install runsc)";
  constexpr std::chrono::seconds kTimeout{5};
  Result<CommandOutput> flags = RunCommand({runsc, "flags"}, kTimeout);
  if (!flags.ok()) return "cannot run `" + runsc + " flags`: " + flags.status().message();
  if (flags->exit_code != 0) {
    return "`" + runsc + " flags` exited " + std::to_string(flags->exit_code) + ": " +
           Trimmed(Tail(flags->stderr_text, 200));
  }
  Result<CommandOutput> version = RunCommand({runsc, "--version"}, kTimeout);
  // Go's flag package prints the list on stderr.
  return RunscNvproxyUnavailable(flags->stdout_text + flags->stderr_text, version.ok() ? version->stdout_text : "");
}

std::string ProbeRunscGpuUnavailable() {
  const char* path = std::getenv("PATH");
  return ProbeRunscGpuUnavailable(path == nullptr ? "" : path);
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
