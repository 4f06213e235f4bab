#pragma once
// What a stranger's machine does to a grid, staged for real (root only): a
// small filesystem that fills up (tmpfs), and a wall clock that is off or
// jumps (libfaketime, Debian's `libfaketime`). docs/reliability.md.
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::testing {

// A tmpfs of `size_mib` mounted on `dir` (created; root's, mode 0700, until
// its user chowns it); gone (lazily unmounted) with the object. Fill() takes every byte left with a
// ballast file, as an owner's download would; Drain() gives them back.
class SmallDisk {
 public:
  SmallDisk(std::string dir, int size_mib);
  ~SmallDisk();
  SmallDisk(const SmallDisk&) = delete;
  SmallDisk& operator=(const SmallDisk&) = delete;

  const Status& mounted() const { return mounted_; }
  Status Fill();
  Status Drain();
  uint64_t FreeBytes() const;

 private:
  std::string dir_;
  Status mounted_;
};

// A wall clock set off from the host's by libfaketime: the processes started
// with Env() read CLOCK_REALTIME through it, their monotonic clocks stay true
// (as on a machine whose clock is wrong or is stepped by NTP). Set() moves
// it for running processes within about a second (the file is re-read).
class SkewedClock {
 public:
  // `offset`: libfaketime's relative form, e.g. "+10m", "-600s", "+0".
  SkewedClock(const std::string& dir, const std::string& offset);
  // Why it cannot be used here ("" when it can).
  static std::string Missing();
  Status Set(const std::string& offset);
  std::vector<std::string> Env() const;

 private:
  std::string file_;
};

// Job predicates the fault tests wait on: at least `n` tasks succeeded (or
// the job settled), and some task running.
std::function<bool(const v1::Job&)> SucceededAtLeast(int n);
bool AnyRunning(const v1::Job& job);

// The history checker (history_check_support.h) over `job`, on nodes of 2
// CPUs each (the harness's agents); each violation is a test failure.
void ExpectSoundHistory(const v1::Job& job, const std::vector<std::string>& node_ids);

}  // namespace idlegrid::testing
