#include "coordinator/change_signal.h"

#include <chrono>

namespace idlegrid::coordinator {

void ChangeSignal::Notify() {
  MutexLock lock(&mu_);
  ++version_;
  due_ = true;
  cv_.NotifyAll();
}

uint64_t ChangeSignal::version() {
  MutexLock lock(&mu_);
  return version_;
}

uint64_t ChangeSignal::WaitForChange(uint64_t known, int wait_ms) {
  MutexLock lock(&mu_);
  cv_.WaitFor(&mu_, std::chrono::milliseconds(wait_ms),
              [&]() IG_REQUIRES(mu_) { return version_ != known || stopping_; });
  return version_;
}

bool ChangeSignal::WaitForPass(int period_ms) {
  MutexLock lock(&mu_);
  cv_.WaitFor(&mu_, std::chrono::milliseconds(period_ms), [&]() IG_REQUIRES(mu_) { return due_ || stopping_; });
  if (stopping_) return false;
  due_ = false;
  return true;
}

bool ChangeSignal::Stop() {
  MutexLock lock(&mu_);
  if (stopping_) return false;
  stopping_ = true;
  cv_.NotifyAll();
  return true;
}

}  // namespace idlegrid::coordinator
