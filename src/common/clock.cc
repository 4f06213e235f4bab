#include "common/clock.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>

namespace idlegrid {

int64_t StepAbsorber::Next(double steady_ms, double wall_ms, int64_t* stepped_ms) {
  if (stepped_ms != nullptr) *stepped_ms = 0;
  if (!started_) {
    started_ = true;
    last_steady_ = steady_ms;
    last_offset_ = wall_ms - steady_ms;
    value_ = wall_ms;
    return static_cast<int64_t>(std::floor(value_));
  }
  // A step is the wall clock moving against the monotonic one between two
  // readings; a slew moves them apart too slowly to count.
  const double offset = wall_ms - steady_ms;
  if (std::fabs(offset - last_offset_) > kReportStepMs && stepped_ms != nullptr) {
    *stepped_ms = static_cast<int64_t>(offset - last_offset_);
  }
  last_offset_ = offset;
  const double elapsed = std::max(0.0, steady_ms - last_steady_);
  last_steady_ = std::max(last_steady_, steady_ms);
  const double proposed = value_ + elapsed;
  const double behind = wall_ms - proposed;  // > 0: the wall clock is ahead of us
  const double room = elapsed * kSlewRate;
  value_ = proposed + std::clamp(behind, -room, room);
  return static_cast<int64_t>(std::floor(value_));
}

int64_t SystemClock::NowMs() const {
  using std::chrono::duration;
  using Ms = duration<double, std::milli>;
  static std::mutex mu;
  static StepAbsorber absorber;
  const double steady = std::chrono::duration_cast<Ms>(std::chrono::steady_clock::now().time_since_epoch()).count();
  const double wall = std::chrono::duration_cast<Ms>(std::chrono::system_clock::now().time_since_epoch()).count();
  int64_t stepped = 0;
  int64_t now = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    now = absorber.Next(steady, wall, &stepped);
  }
  if (stepped != 0) {
    spdlog::warn(
        "the system's wall clock stepped {} by {} ms; this process takes it in at most {:.0f} % faster or "
        "slower than real time, so timeouts stay true",
        stepped > 0 ? "ahead" : "back", std::llabs(stepped), StepAbsorber::kSlewRate * 100);
  }
  return now;
}

SystemClock* SystemClock::Get() {
  static SystemClock clock;
  return &clock;
}

}  // namespace idlegrid
