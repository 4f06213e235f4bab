#pragma once
// A std::mutex the thread-safety analysis knows (common/thread_annotations.h),
// its scoped lock, and a condition variable that waits on it.
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "common/thread_annotations.h"

namespace idlegrid {

class IG_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() IG_ACQUIRE() { mu_.lock(); }
  void Unlock() IG_RELEASE() { mu_.unlock(); }
  // BasicLockable, for std::condition_variable_any (CondVar below).
  void lock() IG_ACQUIRE() { mu_.lock(); }
  void unlock() IG_RELEASE() { mu_.unlock(); }

 private:
  std::mutex mu_;
};

// Holds `mu` from construction to destruction.
class IG_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) IG_ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() IG_RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// Waits with a Mutex held; the mutex is released while waiting and held
// again on return, as with std::condition_variable.
class CondVar {
 public:
  // Until `done()` (evaluated with `mu` held) or `timeout` passes; returns done().
  template <typename Rep, typename Period, typename Predicate>
  bool WaitFor(Mutex* mu, std::chrono::duration<Rep, Period> timeout, Predicate done) IG_REQUIRES(mu) {
    return cv_.wait_for(*mu, timeout, std::move(done));
  }
  // Until notified (or woken spuriously) or `timeout` passes.
  template <typename Rep, typename Period>
  void WaitFor(Mutex* mu, std::chrono::duration<Rep, Period> timeout) IG_REQUIRES(mu) {
    cv_.wait_for(*mu, timeout);
  }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable_any cv_;
};

}  // namespace idlegrid
