#pragma once
// Small helpers shared by tests that build and run real programs (gcc, nvcc,
// podman). Header-only so any test binary can include it.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace idlegrid::testing {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs `command` through /bin/sh (test code only: the commands are our own).
inline CommandResult RunShell(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen(("(" + command + ") 2>&1").c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, n);
  int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

inline bool HaveCommand(const std::string& name) { return RunShell("command -v " + name).exit_code == 0; }

// A fresh directory under /tmp, removed with everything in it when destroyed.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "idlegrid-test") {
    std::string tmpl = "/tmp/" + prefix + ".XXXXXX";
    path_ = ::mkdtemp(tmpl.data()) ? tmpl : "";
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Explicit, low rlimits, as the agent sets: podman's defaults for root can
// exceed what runc may set where podman lacks CAP_SYS_RESOURCE, and runc then
// refuses to start. The test programs do not fork.
inline const std::string kPodmanUlimitFlags = "--ulimit nofile=1024:1024 --ulimit nproc=1024:1024";

}  // namespace idlegrid::testing
