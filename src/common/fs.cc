#include "common/fs.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace idlegrid {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status WriteFileAtomic(const std::string& path, const std::string& content, int mode) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return Status::Internal("cannot create " + tmp + ": " + std::strerror(errno));
  ::fchmod(fd, static_cast<mode_t>(mode));
  size_t off = 0;
  while (off < content.size()) {
    ssize_t n = ::write(fd, content.data() + off, content.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return Status::Internal("write " + tmp + ": " + std::strerror(errno));
    }
    off += static_cast<size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::Internal("rename " + tmp + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

Status MakeDirs(const std::string& path, int mode) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return Status::Internal("cannot create directory " + path + ": " + ec.message());
  ::chmod(path.c_str(), static_cast<mode_t>(mode));
  return Status::Ok();
}

Status RemoveTree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) return Status::Internal("cannot remove " + path + ": " + ec.message());
  return Status::Ok();
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

Result<FileLock> FileLock::Acquire(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Internal("cannot open lock file " + path + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    std::string holder;
    char buf[32] = {0};
    if (::pread(fd, buf, sizeof(buf) - 1, 0) > 0) holder = std::string(" (pid ") + buf + ")";
    ::close(fd);
    return Status::FailedPrecondition("data directory is in use by another process" + holder + "; lock file " + path);
  }
  std::string pid = std::to_string(::getpid());
  if (::ftruncate(fd, 0) == 0) {
    [[maybe_unused]] ssize_t n = ::pwrite(fd, pid.data(), pid.size(), 0);
  }
  return FileLock(fd);
}

FileLock::FileLock(FileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

std::vector<std::string> RegularFilesUnder(const std::string& root) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_symlink(ec)) {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec)) out.push_back(std::filesystem::relative(it->path(), root, ec).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

Status LinkOrCopyFile(const std::string& from, const std::string& to) {
  if (::link(from.c_str(), to.c_str()) == 0) return Status::Ok();
  if (errno != EXDEV && errno != EPERM) {
    return Status::Internal("cannot link " + from + " as " + to + ": " + std::strerror(errno));
  }
  std::error_code ec;
  std::filesystem::copy_file(from, to, ec);
  if (ec) return Status::Internal("cannot copy " + from + " to " + to + ": " + ec.message());
  std::filesystem::permissions(to, std::filesystem::perms(0444), ec);
  return Status::Ok();
}

Status LinkTree(const std::string& from, const std::string& to) {
  if (::mkdir(to.c_str(), 0755) != 0) return Status::Internal("mkdir " + to + ": " + std::strerror(errno));
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(from, ec)) names.push_back(e.path().filename().string());
  if (ec) return Status::Internal("reading " + from + ": " + ec.message());
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    const std::string src = from + "/" + name;
    const std::string dst = to + "/" + name;
    struct stat st {};
    if (::lstat(src.c_str(), &st) != 0) return Status::Internal("lstat " + src + ": " + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) {
      IG_RETURN_IF_ERROR(LinkTree(src, dst));
    } else if (S_ISREG(st.st_mode)) {
      IG_RETURN_IF_ERROR(LinkOrCopyFile(src, dst));
    } else {
      return Status::InvalidArgument(src + " is neither a regular file nor a directory");
    }
  }
  return Status::Ok();
}

}  // namespace idlegrid
