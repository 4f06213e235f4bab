// Staged machine faults for the e2e tests (fault_env_support.h).
#include "e2e/fault_env_support.h"

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include <chrono>
#include <map>

#include "common/fs.h"
#include "e2e/harness.h"
#include "e2e/history_check_support.h"
#include "jobs/task_state.h"

namespace idlegrid::testing {
namespace {
constexpr const char* kFakeTimeLib = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";
}  // namespace

SmallDisk::SmallDisk(std::string dir, int size_mib) : dir_(std::move(dir)) {
  mounted_ = MakeDirs(dir_, 0700);
  if (!mounted_.ok()) return;
  const std::string options = "size=" + std::to_string(size_mib) + "m,mode=0700";
  if (::mount("igtest-small-disk", dir_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
    mounted_ = Status::Internal("mount tmpfs on " + dir_ + ": " + std::strerror(errno));
  }
}

SmallDisk::~SmallDisk() {
  if (mounted_.ok()) ::umount2(dir_.c_str(), MNT_DETACH);
}

Status SmallDisk::Fill() {
  // dd stops at ENOSPC (exit 1): its file then holds every free block. What
  // the disk's user frees meanwhile is taken by the next round.
  for (int round = 0; round < 10; ++round) {
    RunCommand({"dd", "if=/dev/zero", "of=" + dir_ + "/.ballast-" + std::to_string(round), "bs=64k"}, 60);
    if (FreeBytes() == 0) return Status::Ok();
  }
  return Status::Internal(dir_ + ": still " + std::to_string(FreeBytes()) + " bytes free after 10 rounds");
}

Status SmallDisk::Drain() {
  for (int round = 0; round < 10; ++round) {
    const std::string ballast = dir_ + "/.ballast-" + std::to_string(round);
    if (::unlink(ballast.c_str()) != 0 && errno != ENOENT) {
      return Status::Internal("unlink " + ballast + ": " + std::strerror(errno));
    }
  }
  return Status::Ok();
}

uint64_t SmallDisk::FreeBytes() const {
  struct statvfs fs {};
  if (::statvfs(dir_.c_str(), &fs) != 0) return 0;
  return static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
}

SkewedClock::SkewedClock(const std::string& dir, const std::string& offset) : file_(dir + "/faketime.rc") {
  Status st = MakeDirs(dir, 0755);
  if (st.ok()) st = Set(offset);
  if (!st.ok()) ADD_FAILURE() << st.message();
}

std::string SkewedClock::Missing() {
  if (::access(kFakeTimeLib, R_OK) == 0) return "";
  return std::string(kFakeTimeLib) + " is missing (Debian's libfaketime: run scripts/install-deps.sh)";
}

Status SkewedClock::Set(const std::string& offset) {
  Status st = WriteFileAtomic(file_, offset + "\n", 0644);
  return st.WithContext(file_);
}

std::vector<std::string> SkewedClock::Env() const {
  return {std::string("LD_PRELOAD=") + kFakeTimeLib, "FAKETIME_TIMESTAMP_FILE=" + file_,
          // Re-read each second, so Set() reaches running processes.
          "FAKETIME_CACHE_DURATION=1",
          // Only the wall clock is wrong; the monotonic one is the machine's.
          "FAKETIME_DONT_FAKE_MONOTONIC=1"};
}

std::function<bool(const v1::Job&)> SucceededAtLeast(int n) {
  return [n](const v1::Job& j) {
    int done = 0;
    for (const auto& t : j.tasks()) done += t.state() == v1::SUCCEEDED;
    return done >= n || jobs::IsSettled(j);
  };
}

bool AnyRunning(const v1::Job& job) {
  for (const auto& t : job.tasks()) {
    if (t.state() == v1::RUNNING) return true;
  }
  return false;
}

void ExpectSoundHistory(const v1::Job& job, const std::vector<std::string>& node_ids) {
  std::map<std::string, double> cpus;
  for (const auto& id : node_ids) cpus[id] = 2;
  const int64_t now =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  for (const std::string& v : CheckHistory({job}, cpus, now)) ADD_FAILURE() << v;
}

}  // namespace idlegrid::testing
