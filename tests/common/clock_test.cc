// The process clock's step absorber (common/clock.h), on plain readings.
#include "common/clock.h"

#include <gtest/gtest.h>

namespace idlegrid {
namespace {

constexpr double kWall = 1.8e12;  // some wall time, ms

TEST(StepAbsorber, FollowsAWallClockThatDoesNotStep) {
  StepAbsorber a;
  EXPECT_EQ(a.Next(100, kWall), int64_t(kWall));
  EXPECT_EQ(a.Next(600, kWall + 500), int64_t(kWall + 500));
  EXPECT_EQ(a.Next(10'600, kWall + 10'500), int64_t(kWall + 10'500));
}

TEST(StepAbsorber, AStepAheadIsTakenInAtTenPercentAndReportedOnce) {
  StepAbsorber a;
  a.Next(0, kWall);
  int64_t stepped = 0;
  // The wall clock jumps ten minutes ahead; one second passes.
  EXPECT_EQ(a.Next(1000, kWall + 600'000 + 1000, &stepped), int64_t(kWall + 1100));
  EXPECT_EQ(stepped, 600'000);
  // A heartbeat silence measured across the step reads 1.1 s, not 601 s.
  EXPECT_EQ(a.Next(2000, kWall + 600'000 + 2000, &stepped), int64_t(kWall + 2200));
  EXPECT_EQ(stepped, 0) << "reported again";
  // Stepped back to the true time: that is reported too, and taken in.
  EXPECT_EQ(a.Next(3000, kWall + 3000, &stepped), int64_t(kWall + 3100));
  EXPECT_EQ(stepped, -600'000);
  // Ahead again, and this time left there until caught up.
  a.Next(4000, kWall + 600'000 + 4000, &stepped);
  EXPECT_EQ(stepped, 600'000);
  // It catches up in time: 600 s at 10 % takes 6000 s.
  int64_t now = a.Next(6'002'000, kWall + 600'000 + 6'002'000, &stepped);
  EXPECT_EQ(now, int64_t(kWall + 600'000 + 6'002'000));
  EXPECT_EQ(a.Next(6'003'000, kWall + 600'000 + 6'003'000), int64_t(kWall + 600'000 + 6'003'000));
}

TEST(StepAbsorber, AStepBackNeverMakesTimeGoBackwards) {
  StepAbsorber a;
  a.Next(0, kWall);
  int64_t stepped = 0;
  int64_t last = a.Next(1000, kWall - 600'000 + 1000, &stepped);
  EXPECT_EQ(last, int64_t(kWall + 900));
  EXPECT_EQ(stepped, -600'000);
  for (double t = 2000; t < 20'000; t += 1000) {
    int64_t now = a.Next(t, kWall - 600'000 + t);
    EXPECT_EQ(now - last, 900) << "at " << t;  // 10 % slower, never backwards
    last = now;
  }
}

TEST(StepAbsorber, ASteadyClockThatDoesNotMoveHoldsTheTime) {
  StepAbsorber a;
  a.Next(50, kWall);
  EXPECT_EQ(a.Next(50, kWall + 600'000), int64_t(kWall));
  EXPECT_EQ(a.Next(40, kWall), int64_t(kWall)) << "a steady reading that went back is no time at all";
}

TEST(StepAbsorber, AStepOfHoursIsTakenAtOnce) {
  StepAbsorber a;
  a.Next(0, kWall);
  int64_t stepped = 0;
  // A clock years off at boot, set right by NTP: absorbing it would take weeks.
  EXPECT_EQ(a.Next(1000, kWall + 1000 + 3 * 3'600'000.0, &stepped), int64_t(kWall + 1000 + 3 * 3'600'000.0));
  EXPECT_EQ(stepped, 3 * 3'600'000);
  EXPECT_EQ(a.Next(2000, kWall + 2000 + 3 * 3'600'000.0, &stepped), int64_t(kWall + 2000 + 3 * 3'600'000.0));
  EXPECT_EQ(stepped, 0);
}

}  // namespace
}  // namespace idlegrid
