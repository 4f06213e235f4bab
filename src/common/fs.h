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
