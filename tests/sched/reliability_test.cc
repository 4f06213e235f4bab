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

}  // namespace
}  // namespace idlegrid::sched
