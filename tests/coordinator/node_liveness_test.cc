// One node's liveness bookkeeping (coordinator/node_liveness.h) on plain
// times: interval 5 s, margin 3 (timeout 15 s), confirmation one interval.
#include <gtest/gtest.h>

#include "coordinator/node_liveness.h"

namespace idlegrid::coordinator {
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

}  // namespace
}  // namespace idlegrid::coordinator
