// A provider proven wrong (verify/caught.h): penalty and backtracking, on a
// plain history.
#include <gtest/gtest.h>

#include "verify/caught.h"

namespace idlegrid::verify {
namespace {

using Ids = std::vector<std::string>;

AcceptedResult U(std::string id, std::string provider) {
  return {std::move(id), std::move(provider), Check::kUnverified, {}};
}
AcceptedResult R(std::string id, std::string provider, std::vector<std::string> vouched) {
  return {std::move(id), std::move(provider), Check::kReplicated, std::move(vouched)};
}
AcceptedResult C(std::string id, std::string provider) {
  return {std::move(id), std::move(provider), Check::kChallengePassed, {}};
}

TEST(Caught, PenaltyTable) {
  VerificationPolicy policy;
  policy.reliability_penalty = 250;
  struct Case {
    uint32_t before, after, lost;
  };
  for (const Case& c : {Case{1000, 750, 250}, Case{300, 50, 250}, Case{100, 0, 100}, Case{0, 0, 0}}) {
    CaughtOutcome out = OnCaught("x", c.before, 0, policy, Backtrack::kSinceLastVerified, {});
    EXPECT_EQ(out.reliability, c.after) << c.before;
    EXPECT_EQ(out.reliability_lost, c.lost) << c.before;
    EXPECT_EQ(out.consecutive_valid, 0u);
    EXPECT_TRUE(out.reverify.empty());
    EXPECT_TRUE(out.demote.empty());
  }
  EXPECT_EQ(ReliabilityAfterValid(999), 1000u);
  EXPECT_EQ(ReliabilityAfterValid(1000), 1000u);
  EXPECT_EQ(ReliabilityAfterValid(0), 1u);
}

TEST(Caught, BacktrackingTable) {
  const std::vector<AcceptedResult> history = {
      U("t1", "x"),                              // before x's last verified result
      R("t2", "y", {"z"}),                       // x not involved
      C("t3", "x"),                              // x's last... challenge passed
      U("t4", "x"),        R("t5", "x", {"y"}),  // x's quorum with y: the last verified one
      U("t6", "y"),                              // someone else's
      U("t7", "x"),                              // since the last verified: re-verify
      R("t8", "w", {"x"}),                       // x vouched for w: re-verify
      U("t9", "x"),
  };
  VerificationPolicy policy;
  struct Case {
    const char* name;
    Backtrack backtrack;
    uint32_t caught_before;
    Ids reverify;
    Ids demote;
  };
  const Case cases[] = {
      {"since last verified", Backtrack::kSinceLastVerified, 3, {"t7", "t9"}, {"t5", "t8"}},
      {"whole window", Backtrack::kWholeWindow, 0, {"t1", "t4", "t7", "t9"}, {"t5", "t8"}},
      {"escalating, first catch", Backtrack::kEscalating, 0, {"t7", "t9"}, {"t5", "t8"}},
      {"escalating, repeat catch", Backtrack::kEscalating, 1, {"t1", "t4", "t7", "t9"}, {"t5", "t8"}},
  };
  for (const Case& c : cases) {
    CaughtOutcome out = OnCaught("x", 1000, c.caught_before, policy, c.backtrack, history);
    EXPECT_EQ(out.reverify, c.reverify) << c.name;
    EXPECT_EQ(out.demote, c.demote) << c.name;
  }
  CaughtOutcome y = OnCaught("y", 1000, 0, policy, Backtrack::kSinceLastVerified, history);
  EXPECT_EQ(y.reverify, (Ids{"t6"}));
  EXPECT_EQ(y.demote, (Ids{"t2", "t5"}));
  EXPECT_TRUE(OnCaught("nobody", 1000, 0, policy, Backtrack::kWholeWindow, history).reverify.empty());
}

TEST(Caught, NeverVerifiedProviderRechecksEverything) {
  const std::vector<AcceptedResult> history = {U("t1", "x"), U("t2", "y"), U("t3", "x")};
  EXPECT_EQ(OnCaught("x", 1000, 0, VerificationPolicy{}, Backtrack::kSinceLastVerified, history).reverify,
            (Ids{"t1", "t3"}));
}

}  // namespace
}  // namespace idlegrid::verify
