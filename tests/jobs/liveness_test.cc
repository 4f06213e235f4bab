#include "jobs/liveness.h"

#include <gtest/gtest.h>

#include <cmath>

namespace idlegrid::jobs {
namespace {

constexpr LivenessParams kParams{1000, 3};  // interval 1 s, base timeout 3 s

LivenessInputs Heard(int64_t last_heard, int64_t now) {
  LivenessInputs in;
  in.last_heard_ms = last_heard;
  in.now_ms = now;
  return in;
}

TEST(Liveness, OnlineThenLateWithinTheTimeout) {
  EXPECT_EQ(JudgeLiveness(kParams, Heard(10'000, 11'000)).state, Liveness::kOnline);
  EXPECT_EQ(JudgeLiveness(kParams, Heard(10'000, 11'600)).state, Liveness::kLate);
  auto v = JudgeLiveness(kParams, Heard(10'000, 13'000));
  EXPECT_EQ(v.state, Liveness::kLate);
  EXPECT_EQ(v.timeout_ms, 3000);
  EXPECT_EQ(v.suspect_since_ms, 0);
}

TEST(Liveness, PastTheTimeoutIsSuspectFirstAndOfflineOnlyOneConfirmationPeriodLater) {
  auto first = JudgeLiveness(kParams, Heard(10'000, 13'500));
  EXPECT_EQ(first.state, Liveness::kSuspect) << "never offline at the first check past the timeout";
  EXPECT_EQ(first.suspect_since_ms, 13'500);
  // A check long after the timeout ran out still only suspects: the clock
  // of the suspicion starts at the first check that saw it.
  EXPECT_EQ(JudgeLiveness(kParams, Heard(10'000, 60'000)).state, Liveness::kSuspect);

  LivenessInputs later = Heard(10'000, 13'500 + ConfirmPeriodMs(kParams) - 1);
  later.suspect_since_ms = first.suspect_since_ms;
  EXPECT_EQ(JudgeLiveness(kParams, later).state, Liveness::kSuspect);
  later.now_ms += 1;
  auto confirmed = JudgeLiveness(kParams, later);
  EXPECT_EQ(confirmed.state, Liveness::kOffline);
}

TEST(Liveness, ACheckThatRanLateBecauseTheCoordinatorStalledConfirmsNothing) {
  LivenessInputs in = Heard(10'000, 20'000);
  in.suspect_since_ms = 14'000;
  in.check_lag_ms = 5'000;  // this process did not run for 5 s
  EXPECT_EQ(JudgeLiveness(kParams, in).state, Liveness::kSuspect);
  in.check_lag_ms = 100;
  EXPECT_EQ(JudgeLiveness(kParams, in).state, Liveness::kOffline);
}

TEST(Liveness, BeingHeardFromAgainClearsTheSuspicion) {
  LivenessInputs in = Heard(19'900, 20'000);  // a report arrived 100 ms ago
  in.suspect_since_ms = 14'000;
  auto v = JudgeLiveness(kParams, in);
  EXPECT_EQ(v.state, Liveness::kOnline);
  EXPECT_EQ(v.suspect_since_ms, 0);
}

TEST(Liveness, TimeoutStretchesToAJitteryNodesOwnGapsButNotBeyondTwiceTheBase) {
  HeartbeatStats steady;
  for (int i = 0; i < 50; ++i) ObserveHeartbeatGap(steady, 1000 + (i % 2 ? 20 : -20));
  EXPECT_EQ(SilenceTimeoutMs(kParams, steady), 3000) << "a steady node keeps the base timeout";

  HeartbeatStats jittery;  // a loaded host: gaps of 1 s and 3.4 s alternate
  for (int i = 0; i < 50; ++i) ObserveHeartbeatGap(jittery, i % 2 ? 3400 : 1000);
  int64_t stretched = SilenceTimeoutMs(kParams, jittery);
  EXPECT_GT(stretched, 3000);
  EXPECT_LE(stretched, 6000);

  HeartbeatStats wild;
  for (int i = 0; i < 50; ++i) ObserveHeartbeatGap(wild, i % 2 ? 30'000 : 10);
  EXPECT_EQ(SilenceTimeoutMs(kParams, wild), 6000) << "capped: a real loss must still be found";

  HeartbeatStats few;
  for (int i = 0; i < 3; ++i) ObserveHeartbeatGap(few, 5000);
  EXPECT_EQ(SilenceTimeoutMs(kParams, few), 3000) << "too few samples to trust";
}

TEST(Liveness, NonsenseGapsAreIgnored) {
  HeartbeatStats s;
  ObserveHeartbeatGap(s, -5);
  ObserveHeartbeatGap(s, std::nan(""));
  EXPECT_EQ(s.samples, 0u);
}

}  // namespace
}  // namespace idlegrid::jobs
