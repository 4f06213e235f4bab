// Adaptive replication and challenges (verify/adaptive.h, verify/challenge.h).
#include <gtest/gtest.h>

#include "verify/adaptive.h"
#include "verify/challenge.h"
#include "verify/standing.h"

namespace idlegrid::verify {
namespace {

TEST(Adaptive, ReplicationTable) {
  const AdaptiveRule rule{10, 0.05};
  struct Case {
    uint32_t count;
    double draw;
    bool replicate;
    double probability;
    bool trusted;
  };
  const Case cases[] = {
      {0, 0.999, true, 1, false},      // a newcomer: always
      {9, 0.999, true, 1, false},      // one short of the threshold: always
      {10, 0.099, true, 0.1, true},    // 1/10
      {10, 0.1, false, 0.1, true},     // draw == probability: not replicated
      {20, 0.049, true, 0.05, true},   // 1/20 == floor
      {100, 0.049, true, 0.05, true},  // 1/100 < floor: the floor holds
      {100, 0.05, false, 0.05, true}, {1000000, 0.0, true, 0.05, true},
  };
  for (const Case& c : cases) {
    ReplicationChoice choice = ChooseReplication(rule, c.count, c.draw);
    EXPECT_EQ(choice.replicate, c.replicate) << c.count << " " << c.draw;
    EXPECT_DOUBLE_EQ(choice.probability, c.probability) << c.count;
    EXPECT_EQ(choice.trusted, c.trusted) << c.count;
  }
}

TEST(Adaptive, ZeroThresholdStillReplicatesANewcomer) {
  ReplicationChoice choice = ChooseReplication({0, 0.1}, 0, 0.99);
  EXPECT_TRUE(choice.replicate);
  EXPECT_FALSE(choice.trusted);
}

TEST(Adaptive, CountTable) {
  EXPECT_EQ(CountAfterVerification(0, true), 1u);
  EXPECT_EQ(CountAfterVerification(41, true), 42u);
  EXPECT_EQ(CountAfterVerification(41, false), 0u);
  EXPECT_EQ(CountAfterVerification(0xffffffffu, true), 0xffffffffu);
}

TEST(Adaptive, HonestNewcomerIsTrustedAfterThresholdVerifiedResults) {
  const AdaptiveRule rule{10, 0.12};
  uint32_t count = 0;
  int verified = 0;
  while (!ChooseReplication(rule, count, 0.5).trusted) {
    count = CountAfterVerification(count, true);
    ++verified;
  }
  EXPECT_EQ(verified, 10);
}

TEST(Challenge, ShouldChallengeTable) {
  EXPECT_FALSE(ShouldChallenge(0, 0));
  EXPECT_TRUE(ShouldChallenge(0.05, 0.049));
  EXPECT_FALSE(ShouldChallenge(0.05, 0.05));
  EXPECT_TRUE(ShouldChallenge(1, 0.999));
}

TEST(Challenge, ReplicateUnderChallengeTable) {
  // known answer, probation, supply rate, draw -> replicate
  EXPECT_TRUE(ReplicateUnderChallenge(false, false, 0, 0.99));    // the job's first known answer
  EXPECT_TRUE(ReplicateUnderChallenge(true, true, 0, 0.99));      // on probation
  EXPECT_TRUE(ReplicateUnderChallenge(true, false, 0.1, 0.099));  // supply
  EXPECT_FALSE(ReplicateUnderChallenge(true, false, 0.1, 0.1));
  EXPECT_FALSE(ReplicateUnderChallenge(true, false, 0, 0));  // no supply: on its word
}

TEST(Standing, UnprovenMayTakeTable) {
  const StandingRule off;  // share 1: no cap
  EXPECT_TRUE(UnprovenMayTake(off, 99, 100, true));
  const StandingRule five{0.05};
  EXPECT_TRUE(UnprovenMayTake(five, 0, 1000, true));
  EXPECT_FALSE(UnprovenMayTake(five, 1, 10, true)) << "2 of 11 is over 5%";
  EXPECT_TRUE(UnprovenMayTake(five, 1, 10, false)) << "nobody proven: a grid of newcomers runs";
  EXPECT_TRUE(UnprovenMayTake(five, 1, 39, true)) << "2 of 40 is 5%";
  EXPECT_FALSE(UnprovenMayTake(five, 1, 38, true));
  EXPECT_FALSE(UnprovenMayTake(five, 50, 1000, true));
  EXPECT_TRUE(UnprovenMayTake(five, 49, 1000, true));
}

TEST(Challenge, JudgeTable) {
  CompareSpec compare;
  compare.outputs = {"answer"};
  const std::vector<OutputFile> known = {{"answer", "sha256:good", std::nullopt}};
  struct Case {
    const char* name;
    std::vector<OutputFile> answer;
    bool passed;
    const char* says;
  };
  const Case cases[] = {
      {"right", {{"answer", "sha256:good", std::nullopt}}, true, ""},
      {"wrong", {{"answer", "sha256:bad", std::nullopt}}, false, "answer: digests differ"},
      {"missing", {{"other", "sha256:good", std::nullopt}}, false, "malformed answer: has no output \"answer\""},
  };
  for (const Case& c : cases) {
    Result<ChallengeVerdict> v = JudgeChallenge(compare, known, c.answer);
    ASSERT_TRUE(v.ok()) << c.name;
    EXPECT_EQ(v->passed, c.passed) << c.name;
    EXPECT_NE(v->reason.find(c.says), std::string::npos) << c.name << ": " << v->reason;
  }
  Result<ChallengeVerdict> broken = JudgeChallenge(compare, {}, known);
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("known answer"), std::string::npos);
}

}  // namespace
}  // namespace idlegrid::verify
