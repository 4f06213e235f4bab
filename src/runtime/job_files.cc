#include "runtime/job_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "common/unique_fd.h"
#include "runtime/runc_host.h"
#include "runtime/subprocess.h"

namespace idlegrid::runtime {
namespace {

constexpr int kMaxDepth = 256;

// Whether `st` (not ours) is out of the agent's reach as "other": a
// directory it cannot list, enter and change, or a file it cannot read.
bool OutOfReach(const struct stat& st) {
  if (S_ISDIR(st.st_mode)) return (st.st_mode & S_IRWXO) != S_IRWXO;
  if (S_ISREG(st.st_mode)) return (st.st_mode & S_IROTH) == 0;
  return false;  // links, fifos, sockets: moved and removed through their directory
}

// True when `dir` (open) holds an entry of another owner that is out of
// the agent's reach; reachable directories are walked. An unreadable
// directory counts as out of reach: only the reclaim can be sure to open it.
bool ForeignUnder(int dir, int depth) {
  if (depth > kMaxDepth) return true;
  DIR* stream = ::fdopendir(dir);
  if (stream == nullptr) {
    ::close(dir);
    return true;
  }
  const uid_t me = ::geteuid();
  bool foreign = false;
  for (dirent* e; !foreign && (e = ::readdir(stream)) != nullptr;) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    struct stat st;
    if (::fstatat(::dirfd(stream), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (st.st_uid != me && OutOfReach(st)) {
      foreign = true;
    } else if (S_ISDIR(st.st_mode)) {
      const int child = ::openat(::dirfd(stream), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      foreign = child < 0 ? errno != ENOENT : ForeignUnder(child, depth + 1);
    }
  }
  ::closedir(stream);
  return foreign;
}

// Gives the owner (the agent, after the chown) read and write on files and
// full access on directories under `dir`, which the job may have taken away.
// No process of the job is left, so nothing swaps entries meanwhile; links
// are never followed.
void GiveOwnerAccess(int dir, int depth) {
  DIR* stream = ::fdopendir(dir);
  if (stream == nullptr) {
    ::close(dir);
    return;
  }
  for (dirent* e; depth <= kMaxDepth && (e = ::readdir(stream)) != nullptr;) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    struct stat st;
    if (::fstatat(::dirfd(stream), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      ::fchmodat(::dirfd(stream), e->d_name, (st.st_mode & 07777) | S_IRWXU, 0);
      const int child = ::openat(::dirfd(stream), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (child >= 0) GiveOwnerAccess(child, depth + 1);
    } else if (S_ISREG(st.st_mode)) {
      ::fchmodat(::dirfd(stream), e->d_name, (st.st_mode & 07777) | S_IRUSR | S_IWUSR, 0);
    }
  }
  ::closedir(stream);
}

}  // namespace

Status OpenForJob(const std::vector<std::string>& dirs) {
  for (const std::string& d : dirs) {
    if (::chmod(d.c_str(), 0777) != 0) {
      return Status::Internal("cannot open " + d + " to the job user: " + std::strerror(errno));
    }
  }
  return Status::Ok();
}

namespace {

Status OpenEntries(int dir, const std::string& path, int depth) {
  if (depth > kMaxDepth) return Status::Internal(path + " is nested too deep");
  if (::fchmod(dir, 0777) != 0)
    return Status::Internal("cannot open " + path + " to the job user: " + std::strerror(errno));
  DIR* stream = ::fdopendir(dir);
  if (stream == nullptr) {
    ::close(dir);
    return Status::Internal("cannot read " + path + ": " + std::strerror(errno));
  }
  Status st = Status::Ok();
  for (dirent* e; st.ok() && (e = ::readdir(stream)) != nullptr;) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    const int fd = ::openat(::dirfd(stream), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) continue;  // a link, or gone
    struct stat st_buf;
    if (::fstat(fd, &st_buf) != 0) {
      ::close(fd);
      continue;
    }
    if (S_ISDIR(st_buf.st_mode)) {
      st = OpenEntries(fd, path + "/" + e->d_name, depth + 1);
      continue;
    }
    if (S_ISREG(st_buf.st_mode) && ::fchmod(fd, 0666) != 0) {
      st = Status::Internal("cannot open " + path + "/" + e->d_name + " to the job user: " + std::strerror(errno));
    }
    ::close(fd);
  }
  ::closedir(stream);
  return st;
}

}  // namespace

Status OpenTreeForJob(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Status::Internal("cannot open " + dir + ": " + std::strerror(errno));
  return OpenEntries(fd, dir, 0);
}

bool HoldsForeignEntries(const std::vector<std::string>& dirs) {
  for (const std::string& d : dirs) {
    const int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) continue;
      return true;
    }
    if (ForeignUnder(fd, 0)) return true;
  }
  return false;
}

Status ReclaimJobFiles(const std::vector<std::string>& dirs) {
  if (!HoldsForeignEntries(dirs)) return Status::Ok();
  if (::geteuid() == 0) {
    // Root owns nothing it cannot take back itself.
    std::vector<std::string> argv = {"chown", "-hR", "0:0", "--"};
    argv.insert(argv.end(), dirs.begin(), dirs.end());
    IG_ASSIGN_OR_RETURN(CommandOutput out, RunCommand(argv, std::chrono::minutes(5)));
    if (out.exit_code != 0) return Status::Internal("chown of the job's files failed: " + out.stderr_text);
    for (const std::string& d : dirs) {
      const int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd >= 0) GiveOwnerAccess(fd, 0);
    }
    return Status::Ok();
  }
  const std::string unshare = ResolveExecutable("unshare");
  if (unshare.empty()) return Status::FailedPrecondition("unshare (util-linux) is not installed");
  std::vector<std::string> argv = {unshare, "--map-root-user", "--map-auto", "--", "chown", "-hR", "0:0", "--"};
  argv.insert(argv.end(), dirs.begin(), dirs.end());
  IG_ASSIGN_OR_RETURN(CommandOutput out, RunCommand(argv, std::chrono::minutes(5)));
  if (out.exit_code != 0) {
    return Status::Internal("taking back the job's files (unshare --map-auto chown) failed: " + out.stderr_text);
  }
  for (const std::string& d : dirs) {
    const int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) GiveOwnerAccess(fd, 0);
  }
  return Status::Ok();
}

}  // namespace idlegrid::runtime
