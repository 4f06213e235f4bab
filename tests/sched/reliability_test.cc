#include "sched/reliability.h"

#include <gtest/gtest.h>

namespace idlegrid::sched {
namespace {

TEST(Reliability, NoHistoryScoresLikeAnUnknown) { EXPECT_DOUBLE_EQ(ScoreReliability({}).score, 0.5); }

TEST(Reliability, SuccessesRaiseTheScoreAndLostLeasesCutItHarderThanFailures) {
  double ten_ok = ScoreReliability({.succeeded = 10}).score;
  double one_lost = ScoreReliability({.succeeded = 10, .node_lost = 1}).score;
  double one_failed = ScoreReliability({.succeeded = 10, .node_failed = 1}).score;
  EXPECT_GT(ten_ok, 0.9);
  EXPECT_LT(one_lost, one_failed);
  EXPECT_LT(one_failed, ten_ok);
  EXPECT_LT(ScoreReliability({.node_lost = 3}).score, 0.1);
}

TEST(Reliability, LateHeartbeatsAndThrottlingLowerTheScore) {
  double base = ScoreReliability({.succeeded = 20}).score;
  EXPECT_NEAR(ScoreReliability({.succeeded = 20, .heartbeat_lateness = 1.0}).score, base * 0.5, 1e-9);
  EXPECT_NEAR(ScoreReliability({.succeeded = 20, .heartbeat_lateness = 7.0}).score, base * 0.5, 1e-9);  // clamped
  EXPECT_NEAR(ScoreReliability({.succeeded = 20, .throttle_reports = 2}).score, base * 0.9, 1e-9);
  EXPECT_NEAR(ScoreReliability({.succeeded = 20, .throttle_reports = 100}).score, base * 0.7, 1e-9);
}

TEST(Reliability, DetailSaysWhatTheScoreIsMadeOf) {
  auto r = ScoreReliability({.succeeded = 12, .node_lost = 1, .heartbeat_lateness = 0.03});
  EXPECT_EQ(r.detail, "12 ok, 1 lost, 0 failed; heartbeats 3% late; 0 throttled");
}

TEST(Reliability, AProviderCaughtWithAWrongResultScoresLowerAndSaysWhy) {
  ReliabilityInputs honest;
  honest.succeeded = 20;
  ReliabilityInputs caught = honest;
  caught.provider_verification = 750;
  caught.provider_caught = 1;
  const Reliability h = ScoreReliability(honest);
  const Reliability c = ScoreReliability(caught);
  EXPECT_DOUBLE_EQ(c.score, h.score * 0.75);
  EXPECT_EQ(h.detail.find("caught"), std::string::npos);
  EXPECT_NE(c.detail.find("provider caught 1 time(s) with a wrong result (750/1000)"), std::string::npos) << c.detail;
}

TEST(Reliability, EachHandshakeComponentLowersTheScoreWithinItsCap) {
  const double base = ScoreReliability({.succeeded = 20}).score;
  EXPECT_NEAR(ScoreReliability({.succeeded = 20, .heartbeat_loss = 0.1}).score, base * 0.9, 1e-9);
  EXPECT_NEAR(ScoreReliability({.succeeded = 20, .heartbeat_loss = 0.9}).score, base * 0.5, 1e-9);
  EXPECT_NEAR(ScoreReliability({.succeeded = 20, .heartbeat_jitter = 0.5}).score, base * 0.9, 1e-9);
  EXPECT_NEAR(ScoreReliability({.succeeded = 20, .heartbeat_jitter = 4}).score, base * 0.8, 1e-9);
  EXPECT_NEAR(ScoreReliability({.succeeded = 20, .rtt_ms = 500}).score, base * 0.95, 1e-9);
  EXPECT_NEAR(ScoreReliability({.succeeded = 20, .rtt_ms = 60'000}).score, base * 0.9, 1e-9);
  EXPECT_NEAR(ScoreReliability({.succeeded = 20, .stalls = 2}).score, base * 0.9, 1e-9);
  EXPECT_NEAR(ScoreReliability({.succeeded = 20, .stalls = 50}).score, base * 0.7, 1e-9);
}

TEST(Reliability, OwnerPausesAreShownButNeverHeldAgainstTheNode) {
  const Reliability base = ScoreReliability({.succeeded = 20});
  const Reliability paused = ScoreReliability({.succeeded = 20, .owner_pauses = 7, .owner_paused_ms = 3'600'000});
  EXPECT_DOUBLE_EQ(paused.score, base.score);
  EXPECT_NE(paused.detail.find("paused by its owner 7 time(s) (not held against it)"), std::string::npos)
      << paused.detail;
}

TEST(Reliability, DetailNamesEveryHandshakeComponentThatWeighs) {
  auto r =
      ScoreReliability({.succeeded = 3, .heartbeat_jitter = 0.25, .heartbeat_loss = 0.04, .rtt_ms = 250, .stalls = 1});
  EXPECT_EQ(r.detail,
            "3 ok, 0 lost, 0 failed; heartbeats 0% late; 0 throttled; 4% of heartbeats lost; jitter 25% of the "
            "interval; round trip 250 ms; 1 stall(s)");
}

}  // namespace
}  // namespace idlegrid::sched
