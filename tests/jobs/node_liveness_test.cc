// One node's liveness bookkeeping (jobs/node_liveness.h) on plain
// times: interval 5 s, margin 3 (timeout 15 s), confirmation one interval.
#include <gtest/gtest.h>

#include "jobs/node_liveness.h"

namespace idlegrid::jobs {
namespace {

constexpr jobs::LivenessParams kParams{5000, 3};
constexpr int64_t kT0 = 1'000'000;

TEST(NodeLivenessTest, SilentNodeTurnsSuspectThenOfflineAtLaterChecks) {
  NodeLiveness n;
  n.Restart(kT0);
  EXPECT_EQ(n.Check(kParams, kT0 + 5000, 0).state, jobs::Liveness::kOnline);
  EXPECT_EQ(n.Check(kParams, kT0 + 8000, 0).state, jobs::Liveness::kLate);
  EXPECT_EQ(n.Check(kParams, kT0 + 15000, 0).state, jobs::Liveness::kLate) << "at the timeout, not past it";
  EXPECT_FALSE(n.suspect());
  EXPECT_EQ(n.Check(kParams, kT0 + 16000, 0).state, jobs::Liveness::kSuspect);
  EXPECT_TRUE(n.suspect());
  EXPECT_EQ(n.Check(kParams, kT0 + 20000, 0).state, jobs::Liveness::kSuspect) << "confirmed one interval on";
  EXPECT_EQ(n.Check(kParams, kT0 + 21000, 0).state, jobs::Liveness::kOffline);
  EXPECT_FALSE(n.suspect()) << "an offline node starts over";
}

TEST(NodeLivenessTest, AStalledCheckConfirmsNothing) {
  NodeLiveness n;
  n.Restart(kT0);
  EXPECT_EQ(n.Check(kParams, kT0 + 16000, 0).state, jobs::Liveness::kSuspect);
  // The coordinator itself ran 3 s late (over half an interval): no evidence.
  EXPECT_EQ(n.Check(kParams, kT0 + 30000, 3000).state, jobs::Liveness::kSuspect);
  EXPECT_EQ(n.Check(kParams, kT0 + 31000, 0).state, jobs::Liveness::kOffline);
}

TEST(NodeLivenessTest, AnyMessageClearsSuspicion) {
  NodeLiveness n;
  n.Restart(kT0);
  ASSERT_EQ(n.Check(kParams, kT0 + 16000, 0).state, jobs::Liveness::kSuspect);
  n.HeardFrom(kT0 + 17000);
  EXPECT_FALSE(n.suspect());
  EXPECT_EQ(n.Check(kParams, kT0 + 22000, 0).state, jobs::Liveness::kOnline);
  EXPECT_EQ(n.last_heartbeat_ms(), kT0) << "a report is no heartbeat";
  EXPECT_EQ(n.last_heard_ms(), kT0 + 17000);
  n.HeardFrom(kT0 + 10000);  // an older message read late never moves it back
  EXPECT_EQ(n.last_heard_ms(), kT0 + 17000);
}

TEST(NodeLivenessTest, PeekDoesNotRecord) {
  NodeLiveness n;
  n.Restart(kT0);
  EXPECT_EQ(n.Peek(kParams, kT0 + 16000).state, jobs::Liveness::kSuspect);
  EXPECT_FALSE(n.suspect());
  // Had Peek recorded the suspicion, this would confirm it.
  EXPECT_EQ(n.Check(kParams, kT0 + 21000, 0).state, jobs::Liveness::kSuspect);
}

TEST(NodeLivenessTest, HeartbeatGapsFeedLatenessAndTheLongestGapOnlyWhileOnline) {
  NodeLiveness n;
  n.Restart(kT0);
  n.OnHeartbeat(kT0 + 60000, /*online=*/false, 5000);  // back after a long absence
  EXPECT_EQ(n.max_gap_ms(), 0);
  EXPECT_EQ(n.lateness(), 0);
  n.OnHeartbeat(kT0 + 62000, /*online=*/true, 5000);  // early: on time
  EXPECT_EQ(n.max_gap_ms(), 2000);
  EXPECT_EQ(n.lateness(), 0);
  n.OnHeartbeat(kT0 + 72000, /*online=*/true, 5000);  // one interval late: late = 1
  EXPECT_EQ(n.max_gap_ms(), 10000);
  EXPECT_DOUBLE_EQ(n.lateness(), 0.1);
  EXPECT_EQ(n.last_heartbeat_ms(), kT0 + 72000);
  EXPECT_EQ(n.last_heard_ms(), kT0 + 72000);
}

TEST(NodeLivenessTest, SequenceGapsAreLostHeartbeatsAndARestartedAgentIsNoLoss) {
  NodeLiveness n;
  n.OnHandshake(1, 0);
  n.OnHandshake(2, 0);
  EXPECT_EQ(n.loss(), 0);
  n.OnHandshake(5, 0);  // 3 and 4 never arrived: 2 of 3 lost
  EXPECT_NEAR(n.loss(), 0.1 * 2.0 / 3.0, 1e-12);
  const double after_gap = n.loss();
  n.OnHandshake(1, 0);  // the agent restarted
  EXPECT_EQ(n.loss(), after_gap);
  n.OnHandshake(2, 0);
  EXPECT_NEAR(n.loss(), 0.9 * after_gap, 1e-12) << "a heartbeat that arrived lowers it";
  n.OnHandshake(0, 0);  // an agent that sends no sequence says nothing
  EXPECT_NEAR(n.loss(), 0.9 * after_gap, 1e-12);
}

TEST(NodeLivenessTest, RoundTripIsSmoothedFromTheFirstReport) {
  NodeLiveness n;
  EXPECT_EQ(n.rtt_ms(), 0);
  n.OnHandshake(1, 0);
  EXPECT_EQ(n.rtt_ms(), 0) << "no report yet";
  n.OnHandshake(2, 40'000);
  EXPECT_DOUBLE_EQ(n.rtt_ms(), 40);
  n.OnHandshake(3, 140'000);
  EXPECT_DOUBLE_EQ(n.rtt_ms(), 0.8 * 40 + 0.2 * 140);
}

TEST(NodeLivenessTest, JitterAndStallsComeFromGapsWhileOnline) {
  NodeLiveness n;
  n.Restart(kT0);
  int64_t t = kT0;
  for (int i = 0; i < 10; ++i) n.OnHeartbeat(t += 5000, true, 5000);
  EXPECT_NEAR(n.jitter_ms(), 0, 1e-9) << "a steady rhythm has no jitter";
  EXPECT_EQ(n.stalls(), 0u);
  n.OnHeartbeat(t += 9000, true, 5000);
  EXPECT_GT(n.jitter_ms(), 100) << "one 4 s deviation shows";
  EXPECT_EQ(n.stalls(), 0u) << "late but under twice the interval";
  n.OnHeartbeat(t += 11000, true, 5000);
  EXPECT_EQ(n.stalls(), 1u);
  n.OnHeartbeat(t += 60000, false, 5000);  // back from offline: not a stall
  EXPECT_EQ(n.stalls(), 1u);
}

}  // namespace
}  // namespace idlegrid::jobs
