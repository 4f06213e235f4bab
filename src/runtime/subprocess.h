#pragma once
// Child processes without a shell: argv only, stdin from /dev/null, stdout and
// stderr on pipes the parent reads. Used by PodmanRuntime; not thread-safe per
// object (one thread owns a Subprocess).
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/unique_fd.h"

namespace idlegrid::runtime {

// Called with "stdout" or "stderr" and a chunk of that stream.
using StreamSink = std::function<void(const std::string& stream, std::string_view data)>;

using idlegrid::UniqueFd;

class Subprocess {
 public:
  // Starts argv[0], searched on PATH. The child gets no other descriptors of
  // ours, default signal handling and its own process group (so a Ctrl-C meant
  // for the agent is not forwarded into a container by podman's sig-proxy).
  // FailedPrecondition when the program cannot be started (e.g. not installed).
  static Result<Subprocess> Spawn(const std::vector<std::string>& argv);
  // The same, and the child gets `pass_fds` (ours, left open) as its
  // descriptors 3, 4, ... in order.
  static Result<Subprocess> Spawn(const std::vector<std::string>& argv, const std::vector<int>& pass_fds);

  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&&) = delete;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  // A child still running is SIGKILLed and reaped: no zombie is left behind.
  ~Subprocess();

  // Waits at most `max_wait` for output, for the child to exit, or for
  // `wake_fd` (-1: none) to become readable; output read meanwhile goes to
  // `sink`. Returns true once the child has exited and what it left in the
  // pipes has been delivered (later calls return true at once). Output that a
  // grandchild writes after the child exited is not waited for.
  bool Pump(std::chrono::milliseconds max_wait, int wake_fd, const StreamSink& sink);
  // The same, woken by any of `wake_fds` (-1 entries ignored; at most 4).
  bool Pump(std::chrono::milliseconds max_wait, const std::vector<int>& wake_fds, const StreamSink& sink);

  // SIGKILLs the child itself (not its descendants).
  void Kill();
  pid_t pid() const { return pid_; }
  // waitpid status; meaningful once Pump returned true.
  int wait_status() const { return wait_status_; }
  // User + system CPU time of the child and the descendants it waited for
  // (wait4's rusage); meaningful once Pump returned true.
  uint64_t cpu_usec() const { return cpu_usec_; }

 private:
  Subprocess(pid_t pid, UniqueFd out, UniqueFd err, UniqueFd exit_fd)
      : pid_(pid), out_(std::move(out)), err_(std::move(err)), exit_fd_(std::move(exit_fd)) {}
  void TryReap();
  // Reads what `fd` has without blocking; closes it on end of file.
  void Drain(UniqueFd* fd, const std::string& stream, const StreamSink& sink);

  pid_t pid_ = -1;
  UniqueFd out_;
  UniqueFd err_;
  UniqueFd exit_fd_;  // pidfd, readable when the child exits; -1 if the kernel has none
  bool exited_ = false;
  bool done_ = false;
  int wait_status_ = 0;
  uint64_t cpu_usec_ = 0;
};

struct CommandOutput {
  int exit_code = -1;  // 128 + signal when killed by a signal
  std::string stdout_text;
  std::string stderr_text;
};

// For quoting a tool's output in an error: its last `n` bytes, and without
// trailing newlines and spaces.
inline std::string Tail(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(s.size() - n); }
inline std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Empties an eventfd used to wake a Pump (nothing to do when it was not
// signalled), so the next Pump waits again.
void ResetEventFd(int fd);

// Runs argv to completion and collects its output (each stream capped at
// 1 MiB; the excess is dropped). Unavailable when it runs past `timeout`
// (it is then SIGKILLed); Spawn's errors otherwise. A non-zero exit is not an
// error here: look at exit_code.
Result<CommandOutput> RunCommand(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);

}  // namespace idlegrid::runtime
