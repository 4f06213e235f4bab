// The quorum decision (verify/quorum.h), as a table of replica results.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "verify/quorum.h"

namespace idlegrid::verify {
namespace {

// "p1:A" is a result from provider p1 whose single output has digest A;
// "p1:!" one whose output is missing (malformed for a named comparison).
std::vector<ReplicaResult> Results(const std::vector<std::string>& specs) {
  std::vector<ReplicaResult> out;
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string& s = specs[i];
    const size_t colon = s.find(':');
    ReplicaResult r;
    r.attempt_id = "a" + std::to_string(i + 1);
    r.provider = s.substr(0, colon);
    r.node_id = "n" + std::to_string(i + 1);
    const std::string digest = s.substr(colon + 1);
    if (digest != "!") r.outputs.push_back({"out.bin", digest, std::nullopt});
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::string> WrongIds(const QuorumDecision& d) {
  std::vector<std::string> ids;
  for (const Vote& v : d.wrong) ids.push_back(v.attempt_id);
  return ids;
}

using Ids = std::vector<std::string>;

struct Case {
  const char* name;
  ReplicationRule rule;
  std::vector<std::string> results;
  uint32_t started;
  uint32_t running;
  Verdict verdict;
  uint32_t more_runs;
  Ids agreeing;
  Ids wrong;
  Ids ignored;
};

TEST(Quorum, DecisionTable) {
  const ReplicationRule two{2, 2, 4};
  const ReplicationRule three{3, 2, 5};
  const ReplicationRule lead2{2, 2, 6, 2};
  const Case cases[] = {
      {"nothing yet, nothing started", two, {}, 0, 0, Verdict::kNeedMoreRuns, 2, {}, {}, {}},
      {"one in, one running", two, {"p1:A"}, 2, 1, Verdict::kWait, 0, {}, {}, {}},
      {"two agree", two, {"p1:A", "p2:A"}, 2, 0, Verdict::kAccept, 0, {"a1", "a2"}, {}, {}},
      {"1-1 tie: one more run", two, {"p1:A", "p2:B"}, 2, 0, Verdict::kNeedMoreRuns, 1, {}, {}, {}},
      {"tie broken", two, {"p1:A", "p2:B", "p3:B"}, 3, 0, Verdict::kAccept, 0, {"a2", "a3"}, {"a1"}, {}},
      {"three-way split, one run left", two, {"p1:A", "p2:B", "p3:C"}, 3, 0, Verdict::kNeedMoreRuns, 1, {}, {}, {}},
      {"four-way split: fail", two, {"p1:A", "p2:B", "p3:C", "p4:D"}, 4, 0, Verdict::kFail, 0, {}, {}, {}},
      {"same provider counts once", two, {"p1:A", "p1:A"}, 2, 0, Verdict::kNeedMoreRuns, 1, {}, {}, {"a2"}},
      {"same provider, then a distinct one",
       two,
       {"p1:A", "p1:A", "p2:A"},
       3,
       0,
       Verdict::kAccept,
       0,
       {"a1", "a3"},
       {},
       {"a2"}},
      {"2 of 3 accept early", three, {"p1:A", "p2:A"}, 3, 1, Verdict::kAccept, 0, {"a1", "a2"}, {}, {}},
      {"2 of 3 with a dissenter", three, {"p1:A", "p2:B", "p3:A"}, 3, 0, Verdict::kAccept, 0, {"a1", "a3"}, {"a2"}, {}},
      {"malformed is wrong once decided",
       two,
       {"p1:!", "p2:A", "p3:A"},
       3,
       0,
       Verdict::kAccept,
       0,
       {"a2", "a3"},
       {"a1"},
       {}},
      {"malformed needs a replacement", two, {"p1:!", "p2:A"}, 2, 0, Verdict::kNeedMoreRuns, 1, {}, {}, {}},
      {"failed runs used the budget", two, {"p1:A"}, 4, 0, Verdict::kFail, 0, {}, {}, {}},
      {"running runs may still decide", two, {"p1:A", "p2:B"}, 4, 2, Verdict::kWait, 0, {}, {}, {}},
      // A lead of two settles a split: 2-1 is not enough, 3-1 is.
      {"margin 2: agreement needs no more", lead2, {"p1:A", "p2:A"}, 2, 0, Verdict::kAccept, 0, {"a1", "a2"}, {}, {}},
      {"margin 2: 1-1 wants two runs", lead2, {"p1:A", "p2:B"}, 2, 0, Verdict::kNeedMoreRuns, 2, {}, {}, {}},
      {"margin 2: 2-1 wants one more", lead2, {"p1:A", "p2:B", "p3:A"}, 3, 0, Verdict::kNeedMoreRuns, 1, {}, {}, {}},
      {"margin 2: 3-1 accepts",
       lead2,
       {"p1:A", "p2:B", "p3:A", "p4:A"},
       4,
       0,
       Verdict::kAccept,
       0,
       {"a1", "a3", "a4"},
       {"a2"},
       {}},
      {"margin 2: 2-2 with two runs left",
       lead2,
       {"p1:A", "p2:B", "p3:A", "p4:B"},
       4,
       0,
       Verdict::kNeedMoreRuns,
       2,
       {},
       {},
       {}},
      {"margin 2: 2-2 with one run left fails",
       lead2,
       {"p1:A", "p2:B", "p3:A", "p4:B"},
       5,
       0,
       Verdict::kFail,
       0,
       {},
       {},
       {}},
      {"margin 2: malformed counts against",
       lead2,
       {"p1:!", "p2:A", "p3:A"},
       3,
       0,
       Verdict::kNeedMoreRuns,
       1,
       {},
       {},
       {}},
  };
  CompareSpec compare;
  compare.outputs = {"out.bin"};
  for (const Case& c : cases) {
    QuorumDecision d = DecideQuorum(c.rule, compare, Results(c.results), c.started, c.running);
    EXPECT_EQ(VerdictName(d.verdict), std::string(VerdictName(c.verdict))) << c.name << ": " << d.reason;
    EXPECT_EQ(d.more_runs, c.more_runs) << c.name;
    EXPECT_EQ(d.agreeing, c.agreeing) << c.name;
    EXPECT_EQ(WrongIds(d), c.wrong) << c.name;
    EXPECT_EQ(d.ignored, c.ignored) << c.name;
    EXPECT_FALSE(d.reason.empty()) << c.name;
  }
}

// The providers that have not run a task bound the runs a split can still
// get: once the margin is out of reach, a strict majority of the distinct
// providers that voted (with the job's quorum) settles it; otherwise the task
// fails with the groups' sizes. It never waits for providers that do not exist.
TEST(Quorum, MajorityRuleWhenNoProviderIsLeftToReachTheMargin) {
  CompareSpec compare;
  compare.outputs = {"out.bin"};
  const ReplicationRule lead2{2, 2, 6, 2};
  struct FreshCase {
    const char* name;
    std::vector<std::string> results;
    uint32_t started, running, fresh;
    Verdict verdict;
    uint32_t more_runs;
    SettledBy settled_by;
    Ids agreeing, wrong;
  };
  const FreshCase cases[] = {
      // Three accounts, one lying: 2-1 cannot lead by 2 with nobody left.
      {"2-1, none left: majority",
       {"p1:A", "p2:B", "p3:A"},
       3,
       0,
       0,
       Verdict::kAccept,
       0,
       SettledBy::kMajority,
       {"a1", "a3"},
       {"a2"}},
      // The same split with a fourth account still to come waits for the margin.
      {"2-1, one left: margin",
       {"p1:A", "p2:B", "p3:A"},
       3,
       0,
       1,
       Verdict::kNeedMoreRuns,
       1,
       SettledBy::kQuorum,
       {},
       {}},
      // 1-1 with one account left: its run makes a majority either way.
      {"1-1, one left: one run", {"p1:A", "p2:B"}, 2, 0, 1, Verdict::kNeedMoreRuns, 1, SettledBy::kQuorum, {}, {}},
      {"1-1, running: wait", {"p1:A", "p2:B"}, 3, 1, 0, Verdict::kWait, 0, SettledBy::kQuorum, {}, {}},
      {"1-1, none left: no quorum", {"p1:A", "p2:B"}, 2, 0, 0, Verdict::kFail, 0, SettledBy::kQuorum, {}, {}},
      {"2-2, none left: no quorum",
       {"p1:A", "p2:B", "p3:A", "p4:B"},
       4,
       0,
       0,
       Verdict::kFail,
       0,
       SettledBy::kQuorum,
       {},
       {}},
      // A malformed result counts against the largest group.
      {"2 and a malformed, none left",
       {"p1:A", "p2:!", "p3:A"},
       3,
       0,
       0,
       Verdict::kAccept,
       0,
       SettledBy::kMajority,
       {"a1", "a3"},
       {"a2"}},
      // Agreement needs no majority rule, whoever is left.
      {"2-0, none left", {"p1:A", "p2:A"}, 2, 0, 0, Verdict::kAccept, 0, SettledBy::kQuorum, {"a1", "a2"}, {}},
  };
  for (const FreshCase& c : cases) {
    QuorumDecision d = DecideQuorum(lead2, compare, Results(c.results), c.started, c.running, c.fresh);
    EXPECT_EQ(VerdictName(d.verdict), std::string(VerdictName(c.verdict))) << c.name << ": " << d.reason;
    EXPECT_EQ(d.more_runs, c.more_runs) << c.name;
    EXPECT_EQ(d.settled_by, c.settled_by) << c.name;
    EXPECT_EQ(d.agreeing, c.agreeing) << c.name;
    EXPECT_EQ(WrongIds(d), c.wrong) << c.name;
  }
  QuorumDecision failed = DecideQuorum(lead2, compare, Results({"p1:A", "p2:B"}), 2, 0, 0u);
  EXPECT_NE(failed.reason.find("no quorum: groups of 1, 1"), std::string::npos) << failed.reason;
  QuorumDecision majority = DecideQuorum(lead2, compare, Results({"p1:A", "p2:B", "p3:A"}), 3, 0, 0u);
  EXPECT_NE(majority.reason.find("strict majority"), std::string::npos) << majority.reason;
}

TEST(Quorum, WrongVotesSayWhyAndWhoseProvider) {
  CompareSpec compare;
  compare.outputs = {"out.bin"};
  QuorumDecision d = DecideQuorum({2, 2, 4}, compare, Results({"p1:A", "p2:!", "p3:B", "p4:A"}), 4, 0);
  ASSERT_EQ(d.verdict, Verdict::kAccept);
  ASSERT_EQ(d.wrong.size(), 2u);
  EXPECT_EQ(d.wrong[0].provider, "p3");
  EXPECT_EQ(d.wrong[0].failure, VerificationFailure::kOutvoted);
  EXPECT_NE(d.wrong[0].reason.find("digests differ"), std::string::npos);
  EXPECT_EQ(d.wrong[1].provider, "p2");
  EXPECT_EQ(d.wrong[1].failure, VerificationFailure::kMalformedOutput);
  EXPECT_NE(d.wrong[1].reason.find("has no output"), std::string::npos);
  EXPECT_TRUE(ProvesProviderWrong(d.wrong[0].failure));
  EXPECT_FALSE(ProvesProviderWrong(VerificationFailure::kNoQuorum));
  EXPECT_EQ(FailureReasonOf(VerificationFailure::kNoQuorum), v1::VERIFICATION_FAILED);
  EXPECT_STREQ(FailureName(VerificationFailure::kOutvoted), "outvoted");
}

TEST(Quorum, ToleranceGroupsNearbyResults) {
  CompareSpec compare;
  compare.tolerances.push_back({"r.json", TableFormat::kJson, {}, 0.01, 0});
  std::vector<ReplicaResult> results(3);
  const char* contents[] = {R"({"x": 1.000})", R"({"x": 1.004})", R"({"x": 7})"};
  for (int i = 0; i < 3; ++i) {
    results[i].attempt_id = "a" + std::to_string(i + 1);
    results[i].provider = "p" + std::to_string(i + 1);
    results[i].outputs.push_back({"r.json", "sha256:" + std::to_string(i), contents[i]});
  }
  QuorumDecision d = DecideQuorum({3, 2, 5}, compare, results, 3, 0);
  ASSERT_EQ(d.verdict, Verdict::kAccept);
  EXPECT_EQ(d.agreeing, (Ids{"a1", "a2"}));
  ASSERT_EQ(d.wrong.size(), 1u);
  EXPECT_NE(d.wrong[0].reason.find("x: 1 vs 7"), std::string::npos) << d.wrong[0].reason;
}

}  // namespace
}  // namespace idlegrid::verify
