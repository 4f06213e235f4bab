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

// Pure: wall time that does not step. It follows the system's wall clock,
// but a step of that clock (NTP correcting a wrong clock, an operator's
// `date -s`) is taken in gradually: the result runs at most kSlewRate
// faster or slower than the monotonic clock until it has caught up. So
// durations measured on it (a node's heartbeat silence, an
// acknowledgement's timeout, a lease) stay true within 10 %, and times it
// stamps never go backwards. A step larger than kAdoptStepMs (a clock
// hours or years off at boot, set right later) is taken at once: absorbing
// it would leave the clock wrong for days.
class StepAbsorber {
 public:
  static constexpr double kSlewRate = 0.1;
  // Steps larger than this are worth a log line (Next's `stepped_ms`).
  static constexpr int64_t kReportStepMs = 1000;
  static constexpr int64_t kAdoptStepMs = 3'600'000;

  // The time for this moment, given both clocks' readings (ms; `steady_ms`
  // never decreases, and must count time suspended: CLOCK_BOOTTIME).
  // `stepped_ms`, when given, gets the step the wall clock took since the
  // last reading (its move against the steady clock) when larger than
  // kReportStepMs, else 0.
  int64_t Next(double steady_ms, double wall_ms, int64_t* stepped_ms = nullptr);

 private:
  bool started_ = false;
  double last_steady_ = 0, last_offset_ = 0, value_ = 0;
};

// The system's wall clock, as it is.
class SystemClock : public Clock {
 public:
  int64_t NowMs() const override;
  static SystemClock* Get();
};

// The system's wall clock through a StepAbsorber, steady time read from
// CLOCK_BOOTTIME (which, unlike CLOCK_MONOTONIC, runs on while the machine
// is suspended, so a resume is no step). The coordinator's clock: it judges
// durations (liveness, acknowledgement and lease timeouts) from the times it
// stamps. Not for calendar decisions or for times compared with another
// process's clock while a step is being absorbed (docs/reliability.md).
// gRPC deadlines are std::chrono::system_clock points: take them from there.
class StepAbsorbingClock : public Clock {
 public:
  int64_t NowMs() const override;
  static StepAbsorbingClock* Get();
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
