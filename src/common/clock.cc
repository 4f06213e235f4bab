#include "common/clock.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <mutex>

#include <time.h>

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
  // A step is the wall clock moving against the steady one between two
  // readings; a slew moves them apart too slowly to count.
  const double offset = wall_ms - steady_ms;
  const double step = offset - last_offset_;
  last_offset_ = offset;
  if (std::fabs(step) > kReportStepMs && stepped_ms != nullptr) *stepped_ms = static_cast<int64_t>(step);
  if (std::fabs(step) > kAdoptStepMs) {
    last_steady_ = std::max(last_steady_, steady_ms);
    value_ = wall_ms;
    return static_cast<int64_t>(std::floor(value_));
  }
  const double elapsed = std::max(0.0, steady_ms - last_steady_);
  last_steady_ = std::max(last_steady_, steady_ms);
  const double proposed = value_ + elapsed;
  const double behind = wall_ms - proposed;  // > 0: the wall clock is ahead of us
  const double room = elapsed * kSlewRate;
  value_ = proposed + std::clamp(behind, -room, room);
  return static_cast<int64_t>(std::floor(value_));
}

int64_t SystemClock::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

SystemClock* SystemClock::Get() {
  static SystemClock clock;
  return &clock;
}

namespace {

double ReadMs(clockid_t id) {
  timespec ts{};
  ::clock_gettime(id, &ts);
  return static_cast<double>(ts.tv_sec) * 1000.0 + static_cast<double>(ts.tv_nsec) / 1e6;
}

}  // namespace

int64_t StepAbsorbingClock::NowMs() const {
  static std::mutex mu;
  static StepAbsorber absorber;
  int64_t stepped = 0;
  int64_t now = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    // Both readings at one moment: a thread descheduled between them (a
    // loaded host) would otherwise look like a step, then its undoing.
    double steady = 0, wall = 0;
    for (int tries = 0; tries < 3; ++tries) {
      steady = ReadMs(CLOCK_BOOTTIME);
      wall = ReadMs(CLOCK_REALTIME);
      if (ReadMs(CLOCK_BOOTTIME) - steady < 50) break;
    }
    now = absorber.Next(steady, wall, &stepped);
  }
  if (stepped != 0) {
    if (std::llabs(stepped) > StepAbsorber::kAdoptStepMs) {
      spdlog::warn("the system's wall clock stepped {} by {} ms; taken at once (more than an hour)",
                   stepped > 0 ? "ahead" : "back", std::llabs(stepped));
    } else {
      spdlog::warn(
          "the system's wall clock stepped {} by {} ms; this process takes it in at most {:.0f} % faster or "
          "slower than real time, so timeouts stay true",
          stepped > 0 ? "ahead" : "back", std::llabs(stepped), StepAbsorber::kSlewRate * 100);
    }
  }
  return now;
}

StepAbsorbingClock* StepAbsorbingClock::Get() {
  static StepAbsorbingClock clock;
  return &clock;
}

}  // namespace idlegrid
