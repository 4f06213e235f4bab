#pragma once
// Small filesystem helpers with Status errors.
#include <string>
#include <vector>

#include "common/status.h"

namespace idlegrid {

Result<std::string> ReadFile(const std::string& path);
// Writes via a temp file + fsync + rename, so readers never see half a file.
Status WriteFileAtomic(const std::string& path, const std::string& content, int mode = 0644);
Status MakeDirs(const std::string& path, int mode = 0755);
Status RemoveTree(const std::string& path);
bool PathExists(const std::string& path);
// Regular files under `root` as sorted relative paths. Symlinks (and what they
// point to) and special files a hostile job leaves behind are skipped, never
// followed.
std::vector<std::string> RegularFilesUnder(const std::string& root);
// Makes `to` (which must not exist) a tree mirroring the directory `from`:
// directories created mode 0755, each regular file a hard link to `from`'s,
// or a copy (mode 0444) where the two are on different filesystems. Neither
// symlinks nor special files are followed or copied: InvalidArgument naming
// one. The links share their files' modes: a caller that must keep `from`
// intact gives them read-only files and a read-only mount.
Status LinkTree(const std::string& from, const std::string& to);
// Hard-links the file `from` as `to`, or copies it (mode 0444) across filesystems.
Status LinkOrCopyFile(const std::string& from, const std::string& to);

// An exclusive, advisory lock on a file (flock). Released when destroyed or
// when the process dies, so a kill -9 never leaves a stale lock behind.
class FileLock {
 public:
  // Fails with FailedPrecondition if another process holds it.
  static Result<FileLock> Acquire(const std::string& path);
  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&&) = delete;
  FileLock(const FileLock&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace idlegrid
