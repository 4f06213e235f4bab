#pragma once
// "Something changed": a version that watchers (status and log streams, a
// log read that waits) wait to move, and the loop's flag that a pass is due.
// Stop wakes everyone for good. Thread-safe; its lock is a leaf (it may be
// taken with NodeTable::mu_ held, and takes nothing itself).
#include <cstdint>

#include "common/mutex.h"
#include "common/thread_annotations.h"

namespace idlegrid::coordinator {

class ChangeSignal {
 public:
  // Moves the version, marks a pass due and wakes every waiter.
  void Notify() IG_EXCLUDES(mu_);
  uint64_t version() IG_EXCLUDES(mu_);
  // Until the version differs from `known`, wait_ms passes or Stop; returns
  // the version then.
  uint64_t WaitForChange(uint64_t known, int wait_ms) IG_EXCLUDES(mu_);
  // The loop's wait: until a pass is due or period_ms passes (a pass then
  // too: timeouts are checked at least that often). False once stopped.
  bool WaitForPass(int period_ms) IG_EXCLUDES(mu_);
  // True for the first call only.
  bool Stop() IG_EXCLUDES(mu_);

 private:
  Mutex mu_;
  CondVar cv_;
  uint64_t version_ IG_GUARDED_BY(mu_) = 0;
  bool due_ IG_GUARDED_BY(mu_) = true;
  bool stopping_ IG_GUARDED_BY(mu_) = false;
};

}  // namespace idlegrid::coordinator
