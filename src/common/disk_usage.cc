#include "common/disk_usage.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/unique_fd.h"

namespace idlegrid {
namespace {

uint64_t Charge(const struct stat& st) {
  const uint64_t allocated = static_cast<uint64_t>(st.st_blocks) * 512;
  const uint64_t length = st.st_size > 0 ? static_cast<uint64_t>(st.st_size) : 0;
  return std::max(allocated, length);
}

// Opens directory `name` in `parent` for reading, never through a link.
// One this process owns but may not read is made owner-accessible first,
// through a descriptor of the directory itself, so a link swapped in
// meanwhile is never what gets the new mode.
int OpenDirAt(int parent, const char* name) {
  const int fd = ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0 || errno != EACCES) return fd;
  UniqueFd handle(::openat(parent, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st;
  if (handle.get() < 0 || ::fstat(handle.get(), &st) != 0 || st.st_uid != ::geteuid()) {
    errno = EACCES;
    return -1;
  }
  const std::string self = "/proc/self/fd/" + std::to_string(handle.get());
  if (::chmod(self.c_str(), (st.st_mode & 07777) | S_IRWXU) != 0) {
    errno = EACCES;
    return -1;
  }
  return ::openat(handle.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

Status Unreadable(const std::string& path, int err) {
  return Status::Internal("cannot read " + path + ": " + std::strerror(err));
}

// Adds what the entries of the open directory `dir` (at `path`, on device
// `dev`) are charged to `total`. Takes ownership of `dir`.
Status AddEntries(UniqueFd dir, const std::string& path, dev_t dev, int depth, uint64_t& total) {
  if (depth > kMaxTreeDepth) {
    return Status::Internal(path + " is nested more than " + std::to_string(kMaxTreeDepth) + " directories deep");
  }
  DIR* stream = ::fdopendir(dir.get());
  if (stream == nullptr) return Unreadable(path, errno);
  const int fd = dir.Release();  // the stream owns it now
  struct Closer {
    DIR* stream;
    ~Closer() { ::closedir(stream); }
  } closer{stream};
  while (true) {
    errno = 0;
    const dirent* entry = ::readdir(stream);
    if (entry == nullptr) {
      if (errno != 0) return Unreadable(path, errno);
      return Status::Ok();
    }
    const char* name = entry->d_name;
    if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
    struct stat st;
    if (::fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;  // removed since it was listed
      return Unreadable(path + "/" + name, errno);
    }
    total += Charge(st);
    if (!S_ISDIR(st.st_mode) || st.st_dev != dev) continue;
    UniqueFd child(OpenDirAt(fd, name));
    if (child.get() < 0) {
      // Gone, or replaced by something else (a link) since its stat: what
      // it is now is charged at the next walk.
      if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) continue;
      return Unreadable(path + "/" + name, errno);
    }
    IG_RETURN_IF_ERROR(AddEntries(std::move(child), path + "/" + name, dev, depth + 1, total));
  }
}

}  // namespace

Result<uint64_t> MeasureTree(const std::string& root) {
  UniqueFd dir(OpenDirAt(AT_FDCWD, root.c_str()));
  if (dir.get() < 0) {
    if (errno == ENOENT) return Status::NotFound(root + " does not exist");
    return Unreadable(root, errno);
  }
  struct stat st;
  if (::fstat(dir.get(), &st) != 0) return Unreadable(root, errno);
  uint64_t total = Charge(st);
  IG_RETURN_IF_ERROR(AddEntries(std::move(dir), root, st.st_dev, 1, total));
  return total;
}

}  // namespace idlegrid
