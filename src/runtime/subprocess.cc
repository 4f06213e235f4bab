#include "runtime/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

extern char** environ;

namespace idlegrid::runtime {
namespace {

constexpr size_t kMaxCapturedBytes = 1 << 20;
// Without a pidfd we cannot poll for exit, so we look this often.
constexpr std::chrono::milliseconds kReapInterval{50};

std::string ErrnoText(int err) { return std::strerror(err); }

// Closes the file actions / attributes however Spawn leaves.
struct SpawnSetup {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  SpawnSetup() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
};

}  // namespace

Result<Subprocess> Subprocess::Spawn(const std::vector<std::string>& argv) { return Spawn(argv, {}); }

Result<Subprocess> Subprocess::Spawn(const std::vector<std::string>& argv, const std::vector<int>& pass_fds) {
  if (argv.empty()) return Status::InvalidArgument("cannot spawn an empty command");
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return Status::Internal("pipe: " + ErrnoText(errno));
  UniqueFd out_read(out_pipe[0]), out_write(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return Status::Internal("pipe: " + ErrnoText(errno));
  UniqueFd err_read(err_pipe[0]), err_write(err_pipe[1]);

  SpawnSetup setup;
  posix_spawn_file_actions_addopen(&setup.actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&setup.actions, out_write.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&setup.actions, err_write.get(), STDERR_FILENO);
  // Copies above every target first, so that moving one into place cannot
  // overwrite another still to be moved.
  std::vector<UniqueFd> high;
  for (int fd : pass_fds) {
    high.emplace_back(::fcntl(fd, F_DUPFD_CLOEXEC, 64));
    if (high.back().get() < 0) return Status::Internal("dup: " + ErrnoText(errno));
  }
  for (size_t i = 0; i < high.size(); ++i) {
    posix_spawn_file_actions_adddup2(&setup.actions, high[i].get(), static_cast<int>(STDERR_FILENO + 1 + i));
  }
  // Our pipes are O_CLOEXEC, but descriptors another thread opened without it
  // must not leak into podman (and from there into conmon).
  posix_spawn_file_actions_addclosefrom_np(&setup.actions, static_cast<int>(STDERR_FILENO + 1 + high.size()));
  sigset_t no_signals, default_signals;
  sigemptyset(&no_signals);
  sigemptyset(&default_signals);
  sigaddset(&default_signals, SIGPIPE);  // the agent may ignore SIGPIPE; podman must not inherit that
  posix_spawnattr_setsigmask(&setup.attr, &no_signals);
  posix_spawnattr_setsigdefault(&setup.attr, &default_signals);
  posix_spawnattr_setpgroup(&setup.attr, 0);
  posix_spawnattr_setflags(&setup.attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);

  std::vector<char*> c_argv;
  for (const std::string& arg : argv) c_argv.push_back(const_cast<char*>(arg.c_str()));
  c_argv.push_back(nullptr);
  pid_t pid = -1;
  const int err = ::posix_spawnp(&pid, c_argv[0], &setup.actions, &setup.attr, c_argv.data(), environ);
  if (err != 0) return Status::FailedPrecondition("cannot start " + argv[0] + ": " + ErrnoText(err));
  out_write.Reset();
  err_write.Reset();
  ::fcntl(out_read.get(), F_SETFL, O_NONBLOCK);
  ::fcntl(err_read.get(), F_SETFL, O_NONBLOCK);
  UniqueFd exit_fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));  // -1 on old kernels: we poll instead
  return Subprocess(pid, std::move(out_read), std::move(err_read), std::move(exit_fd));
}

Subprocess::Subprocess(Subprocess&& other) noexcept
    : pid_(other.pid_),
      out_(std::move(other.out_)),
      err_(std::move(other.err_)),
      exit_fd_(std::move(other.exit_fd_)),
      exited_(other.exited_),
      done_(other.done_),
      wait_status_(other.wait_status_),
      cpu_usec_(other.cpu_usec_) {
  other.pid_ = -1;
  other.exited_ = true;
  other.done_ = true;
}

Subprocess::~Subprocess() {
  if (pid_ > 0 && !exited_) {
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, &wait_status_, 0) < 0 && errno == EINTR) {
    }
  }
}

void Subprocess::Kill() {
  if (pid_ > 0 && !exited_) ::kill(pid_, SIGKILL);
}

void Subprocess::TryReap() {
  if (exited_) return;
  int status = 0;
  struct rusage usage {};
  pid_t r = ::wait4(pid_, &status, WNOHANG, &usage);
  if (r == pid_) {
    exited_ = true;
    wait_status_ = status;
    auto usec = [](const timeval& t) { return uint64_t(t.tv_sec) * 1'000'000 + uint64_t(t.tv_usec); };
    cpu_usec_ = usec(usage.ru_utime) + usec(usage.ru_stime);
  }
}

void Subprocess::Drain(UniqueFd* fd, const std::string& stream, const StreamSink& sink) {
  char buf[64 * 1024];
  // Bounded, so a flood of output cannot starve the caller's timeout checks.
  for (int i = 0; i < 16 && fd->get() >= 0; ++i) {
    ssize_t n = ::read(fd->get(), buf, sizeof buf);
    if (n > 0) {
      if (sink) sink(stream, std::string_view(buf, static_cast<size_t>(n)));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    fd->Reset();  // end of file or a read error: either way nothing more comes
  }
}

bool Subprocess::Pump(std::chrono::milliseconds max_wait, int wake_fd, const StreamSink& sink) {
  return Pump(max_wait, std::vector<int>{wake_fd}, sink);
}

bool Subprocess::Pump(std::chrono::milliseconds max_wait, const std::vector<int>& wake_fds, const StreamSink& sink) {
  if (done_) return true;
  pollfd fds[7];
  nfds_t n = 0;
  auto add = [&](int fd) {
    if (fd >= 0) fds[n++] = pollfd{fd, POLLIN, 0};
  };
  add(out_.get());
  add(err_.get());
  add(exit_fd_.get());
  for (size_t i = 0; i < wake_fds.size() && i < 4; ++i) add(wake_fds[i]);
  auto wait = std::max(max_wait, std::chrono::milliseconds(0));
  if (exit_fd_.get() < 0) wait = std::min(wait, kReapInterval);
  const int timeout_ms = static_cast<int>(std::min<long long>(wait.count(), 24LL * 3600 * 1000));
  if (::poll(fds, n, timeout_ms) < 0 && errno != EINTR) {
    // Only EFAULT/EINVAL/ENOMEM are possible; avoid a hot loop and carry on.
    ::poll(nullptr, 0, static_cast<int>(kReapInterval.count()));
  }
  Drain(&out_, "stdout", sink);
  Drain(&err_, "stderr", sink);
  TryReap();
  if (!exited_) return false;
  // The child is gone; whatever it wrote is already in the pipes.
  for (int i = 0; i < 64 && (out_.get() >= 0 || err_.get() >= 0); ++i) {
    Drain(&out_, "stdout", sink);
    Drain(&err_, "stderr", sink);
    pollfd left[2];
    nfds_t m = 0;
    for (int fd : {out_.get(), err_.get()}) {
      if (fd >= 0) left[m++] = pollfd{fd, POLLIN, 0};
    }
    if (m == 0 || ::poll(left, m, 0) <= 0) break;  // empty now, though a grandchild may hold the write end
  }
  out_.Reset();
  err_.Reset();
  exit_fd_.Reset();
  done_ = true;
  return true;
}

void ResetEventFd(int fd) {
  uint64_t count = 0;
  if (::read(fd, &count, sizeof count) < 0) return;  // EAGAIN: nothing was signalled
}

Result<CommandOutput> RunCommand(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  IG_ASSIGN_OR_RETURN(Subprocess child, Subprocess::Spawn(argv));
  CommandOutput out;
  auto collect = [&out](const std::string& stream, std::string_view data) {
    std::string& text = stream == "stdout" ? out.stdout_text : out.stderr_text;
    text.append(data.substr(0, kMaxCapturedBytes - std::min(kMaxCapturedBytes, text.size())));
  };
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!child.Pump(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()),
                     -1, collect)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      child.Kill();
      while (!child.Pump(std::chrono::milliseconds(100), -1, collect)) {
      }
      return Status::Unavailable(argv[0] + " " + (argv.size() > 1 ? argv[1] : "") + " did not finish within " +
                                 std::to_string(timeout.count()) + " ms");
    }
  }
  const int st = child.wait_status();
  out.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return out;
}

}  // namespace idlegrid::runtime
