#pragma once
// Time is injected so pure code and tests never read the wall clock directly.
#include <atomic>
#include <cstdint>

namespace idlegrid {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the Unix epoch.
  virtual int64_t NowMs() const = 0;
};

class SystemClock : public Clock {
 public:
  int64_t NowMs() const override;
  static SystemClock* Get();
};

class ManualClock : public Clock {
 public:
  explicit ManualClock(int64_t now_ms = 1'000'000) : now_ms_(now_ms) {}
  int64_t NowMs() const override { return now_ms_.load(); }
  void AdvanceMs(int64_t ms) { now_ms_ += ms; }

 private:
  std::atomic<int64_t> now_ms_;
};

}  // namespace idlegrid
