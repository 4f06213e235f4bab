// The verdict on a task of a verified job, over its runs as the store holds
// them: a table of the decisions replicate and adaptive make.
#include "verify/task_verdict.h"

#include <gtest/gtest.h>

namespace idlegrid::verify {
namespace {

RunRecord Rec(const std::string& id, const std::string& provider, const std::string& digest,
              const std::string& vote = "pending", v1::TaskState state = v1::SUCCEEDED) {
  return {id, provider, state, vote, {{"out.txt", digest, std::nullopt}}};
}

VerificationSpec Replicate() {
  VerificationSpec s;
  s.mode = Mode::kReplicate;
  s.replicas = 2;
  s.quorum = 2;
  s.max_replicas = 4;
  s.margin = 1;
  return s;
}

VerificationSpec Adaptive() {
  VerificationSpec s = Replicate();
  s.mode = Mode::kAdaptive;
  s.margin = 2;
  s.max_replicas = 6;
  s.trust_threshold = 10;
  s.audit_floor = 0.12;
  return s;
}

TEST(TaskVerdict, AFirstReplicatedResultAsksForAnotherProvider) {
  TaskVerdict v = DecideTask({Replicate(), {Rec("a1", "alice", "sha256:x")}});
  EXPECT_EQ(v.outcome, TaskOutcome::kMoreRuns);
  EXPECT_EQ(v.exclude_providers, std::vector<std::string>{"alice"});
  EXPECT_TRUE(v.votes.empty()) << "the first result's vote waits";
  EXPECT_NE(v.line.find("another run on a provider not yet used"), std::string::npos) << v.line;
}

TEST(TaskVerdict, TwoAgreeingProvidersAreAccepted) {
  TaskVerdict v = DecideTask({Replicate(), {Rec("a1", "alice", "sha256:x"), Rec("a2", "bob", "sha256:x")}});
  ASSERT_EQ(v.outcome, TaskOutcome::kAccept);
  ASSERT_EQ(v.votes.size(), 2u);
  EXPECT_EQ(v.votes[0].vote, "agreed");
  EXPECT_EQ(v.votes[1].vote, "agreed");
  EXPECT_EQ(v.verified, (std::vector<std::string>{"alice", "bob"}));
  EXPECT_TRUE(v.caught.empty());
}

TEST(TaskVerdict, ASplitAsksForATieBreakerAwayFromBothProviders) {
  TaskVerdict v = DecideTask({Replicate(), {Rec("a1", "alice", "sha256:x"), Rec("a2", "mallory", "sha256:bad")}});
  EXPECT_EQ(v.outcome, TaskOutcome::kMoreRuns);
  EXPECT_EQ(v.exclude_providers, (std::vector<std::string>{"alice", "mallory"}));
}

TEST(TaskVerdict, TheTieBreakerConvictsTheOddOneOut) {
  TaskVerdict v = DecideTask(
      {Replicate(),
       {Rec("a1", "alice", "sha256:x"), Rec("a2", "mallory", "sha256:bad"), Rec("a3", "carol", "sha256:x")}});
  ASSERT_EQ(v.outcome, TaskOutcome::kAccept);
  EXPECT_EQ(v.caught, std::vector<std::string>{"mallory"});
  bool wrong_failed = false;
  for (const auto& vote : v.votes) {
    if (vote.attempt_id == "a2") {
      EXPECT_EQ(vote.vote, "wrong");
      EXPECT_TRUE(vote.failed);
      wrong_failed = true;
    } else {
      EXPECT_EQ(vote.vote, "agreed");
      EXPECT_FALSE(vote.failed);
    }
  }
  EXPECT_TRUE(wrong_failed);
}

// Issue 32: with three provider accounts and a lead of two, one liar used to
// hold every task open, waiting for a fourth provider that did not exist.
TEST(TaskVerdict, ALiarAmongThreeAccountsIsOutvotedByTheMajorityRule) {
  VerificationSpec s = Replicate();
  s.margin = 2;
  s.max_replicas = 6;
  const std::vector<RunRecord> runs = {Rec("a1", "alice", "sha256:x"), Rec("a2", "mallory", "sha256:bad"),
                                       Rec("a3", "carol", "sha256:x")};
  TaskVerdictInput in{s, runs};
  in.providers = std::set<std::string>{"alice", "mallory", "carol"};
  TaskVerdict v = DecideTask(in);
  ASSERT_EQ(v.outcome, TaskOutcome::kAccept) << v.line;
  EXPECT_EQ(v.caught, std::vector<std::string>{"mallory"});
  EXPECT_NE(v.line.find("settled by the majority rule"), std::string::npos) << v.line;

  // A fourth account that has not run it: the margin is still reachable.
  in.providers->insert("dave");
  v = DecideTask(in);
  EXPECT_EQ(v.outcome, TaskOutcome::kMoreRuns) << v.line;
  EXPECT_TRUE(v.caught.empty());

  // Unknown providers (no bound): as before, another run is asked for.
  in.providers.reset();
  EXPECT_EQ(DecideTask(in).outcome, TaskOutcome::kMoreRuns);
}

TEST(TaskVerdict, NoQuorumWithinTheRunsAllowedFailsAndConvictsNobody) {
  VerificationSpec s = Replicate();
  s.max_replicas = 2;
  TaskVerdict v = DecideTask({s, {Rec("a1", "alice", "sha256:x"), Rec("a2", "bob", "sha256:y")}});
  ASSERT_EQ(v.outcome, TaskOutcome::kFail);
  EXPECT_TRUE(v.caught.empty());
  ASSERT_EQ(v.votes.size(), 2u);
  EXPECT_EQ(v.votes[0].vote, "no_quorum");
  EXPECT_FALSE(v.votes[0].failed);
}

TEST(TaskVerdict, FailedRunsNeitherVoteNorCountAsReplicas) {
  VerificationSpec s = Replicate();
  s.max_replicas = 2;
  // A run that failed on its own (the job's exit code) is retried by the
  // usual rules; it does not use up one of the two replicas.
  TaskVerdict v = DecideTask({s, {Rec("a0", "bob", "", "", v1::FAILED), Rec("a1", "alice", "sha256:x")}});
  EXPECT_EQ(v.outcome, TaskOutcome::kMoreRuns);
}

TEST(TaskVerdict, NothingPendingChangesNothing) {
  TaskVerdict v = DecideTask({Replicate(), {Rec("a1", "alice", "sha256:x", "agreed")}});
  EXPECT_EQ(v.outcome, TaskOutcome::kNothing);
}

TEST(TaskVerdict, AdaptiveReplicatesANewcomersResult) {
  TaskVerdictInput in{Adaptive(), {Rec("a1", "newbie", "sha256:x")}};
  in.consecutive_valid = 3;
  in.draw = 0.99;
  EXPECT_EQ(DecideTask(in).outcome, TaskOutcome::kMoreRuns) << "below the threshold every result is replicated";
}

TEST(TaskVerdict, AdaptiveAcceptsATrustedProvidersResultUnverifiedUnlessTheAuditIsDrawn) {
  TaskVerdictInput in{Adaptive(), {Rec("a1", "veteran", "sha256:x")}};
  in.consecutive_valid = 20;
  in.draw = 0.5;
  TaskVerdict v = DecideTask(in);
  ASSERT_EQ(v.outcome, TaskOutcome::kAccept);
  ASSERT_EQ(v.votes.size(), 1u);
  EXPECT_EQ(v.votes[0].vote, "unverified");
  EXPECT_TRUE(v.verified.empty()) << "an unverified result earns no trust";
  in.draw = 0.11;  // under the floor of 0.12 (1/20 is less)
  EXPECT_EQ(DecideTask(in).outcome, TaskOutcome::kMoreRuns);
}

TEST(TaskVerdict, KnownAnswerChecksTakeTheAuditFloorsPlaceWhereOneCanReachTheProvider) {
  TaskVerdictInput in{Adaptive(), {Rec("a1", "veteran", "sha256:x")}};
  in.consecutive_valid = 20;
  in.draw = 0.11;  // under the floor of 0.12, over 1/20
  in.spec.challenge_rate = 0.05;
  in.known_answer = true;  // the job has one, but the veteran voted in it
  in.check_can_reach = false;
  EXPECT_EQ(DecideTask(in).outcome, TaskOutcome::kMoreRuns) << "no check can reach it: the floor holds";
  in.check_can_reach = true;
  EXPECT_EQ(DecideTask(in).outcome, TaskOutcome::kAccept) << "a check can reach it: 1/count alone";
  in.draw = 0.04;
  EXPECT_EQ(DecideTask(in).outcome, TaskOutcome::kMoreRuns) << "1/20 still audits";
  in.draw = 0.11;
  in.spec.challenge_rate = 0;
  EXPECT_EQ(DecideTask(in).outcome, TaskOutcome::kMoreRuns) << "checks off: the floor holds";
}

TEST(TaskVerdict, AReopenedResultIsJudgedAgainstTheAuditRun) {
  // Backtracking set a1's vote back to pending; the audit run a2 disagrees.
  TaskVerdictInput in{Adaptive(),
                      {Rec("a1", "mallory", "sha256:bad"), Rec("a2", "alice", "sha256:x"), Rec("a3", "bob", "sha256:x"),
                       Rec("a4", "carol", "sha256:x")}};
  TaskVerdict v = DecideTask(in);
  ASSERT_EQ(v.outcome, TaskOutcome::kAccept) << v.line;
  EXPECT_EQ(v.caught, std::vector<std::string>{"mallory"});
}

VerificationSpec Challenge() {
  VerificationSpec s;
  s.mode = Mode::kChallenge;
  s.challenge_rate = 0.05;
  return s;
}

TEST(TaskVerdict, ChallengeReplicatesUntilTheJobHasAKnownAnswer) {
  TaskVerdictInput in{Challenge(), {Rec("a1", "alice", "sha256:x")}};
  TaskVerdict first = DecideTask(in);
  EXPECT_EQ(first.outcome, TaskOutcome::kMoreRuns);
  in.runs.push_back(Rec("a2", "bob", "sha256:x"));
  TaskVerdict known = DecideTask(in);
  ASSERT_EQ(known.outcome, TaskOutcome::kAccept);
  EXPECT_EQ(known.votes.size(), 2u);
}

TEST(TaskVerdict, ChallengeTakesAResultOnItsWordOnceAKnownAnswerExists) {
  TaskVerdictInput in{Challenge(), {Rec("a1", "alice", "sha256:x")}};
  in.known_answer = true;
  TaskVerdict v = DecideTask(in);
  ASSERT_EQ(v.outcome, TaskOutcome::kAccept);
  ASSERT_EQ(v.votes.size(), 1u);
  EXPECT_EQ(v.votes[0].vote, "unverified");
  in.provider_on_probation = true;  // caught before, nothing verified since
  EXPECT_EQ(DecideTask(in).outcome, TaskOutcome::kMoreRuns);
}

TEST(TaskVerdict, ChallengeStillReplicatesASupplyShareToAddKnownAnswers) {
  VerificationSpec spec = Challenge();
  spec.audit_floor = 0.12;
  TaskVerdictInput in{spec, {Rec("a1", "alice", "sha256:x")}};
  in.known_answer = true;
  in.draw = 0.11;
  EXPECT_EQ(DecideTask(in).outcome, TaskOutcome::kMoreRuns) << "under the supply rate: a new known answer";
  in.draw = 0.12;
  TaskVerdict v = DecideTask(in);
  ASSERT_EQ(v.outcome, TaskOutcome::kAccept);
  EXPECT_EQ(v.votes[0].vote, "unverified");
}

TEST(TaskVerdict, AKnownAnswerCheckPassesOrConvictsAndTheKnownAnswerStands) {
  for (const VerificationSpec& spec : {Challenge(), Replicate()}) {
    TaskVerdictInput in{spec,
                        {Rec("a1", "alice", "sha256:x", "agreed"), Rec("a2", "bob", "sha256:x", "agreed"),
                         Rec("a3", "mallory", "sha256:x")}};
    TaskVerdict pass = DecideTask(in);
    ASSERT_EQ(pass.outcome, TaskOutcome::kAccept);
    ASSERT_EQ(pass.votes.size(), 1u);
    EXPECT_EQ(pass.votes[0].vote, "agreed");
    EXPECT_EQ(pass.verified, std::vector<std::string>{"mallory"});
    in.runs[2] = Rec("a3", "mallory", "sha256:lie");
    TaskVerdict fail = DecideTask(in);
    ASSERT_EQ(fail.outcome, TaskOutcome::kAccept) << "one wrong answer never outvotes a known one";
    ASSERT_EQ(fail.votes.size(), 1u);
    EXPECT_EQ(fail.votes[0].vote, "wrong");
    EXPECT_TRUE(fail.votes[0].failed);
    EXPECT_EQ(fail.votes[0].reason.rfind("challenge_failed", 0), 0u) << fail.votes[0].reason;
    EXPECT_EQ(fail.caught, std::vector<std::string>{"mallory"});
  }
}

}  // namespace
}  // namespace idlegrid::verify

namespace idlegrid::verify {
namespace {

// Demote: a caught provider's agreeing votes stop counting; a task left short
// of its quorum is reopened with the others' votes as the claim under test.
TEST(TaskVerdict, DemoteTable) {
  struct Case {
    const char* name;
    VerificationSpec spec;
    std::vector<RunRecord> runs;
    bool changed, reopen;
    std::vector<std::pair<std::string, std::string>> votes;  // attempt, vote
    std::vector<std::string> exclude;
  };
  const Case cases[] = {
      {"not a voter here",
       Replicate(),
       {Rec("a1", "alice", "sha256:x", "agreed"), Rec("a2", "bob", "sha256:x", "agreed")},
       false,
       false,
       {},
       {}},
      {"a wrong vote is not demoted again",
       Replicate(),
       {Rec("a1", "alice", "sha256:x", "agreed"), Rec("a2", "bob", "sha256:x", "agreed"),
        Rec("a3", "mallory", "sha256:bad", "wrong", v1::FAILED)},
       false,
       false,
       {},
       {}},
      {"two of two: the other alone is no quorum",
       Replicate(),
       {Rec("a1", "alice", "sha256:x", "agreed"), Rec("a2", "mallory", "sha256:x", "agreed")},
       true,
       true,
       {{"a2", "demoted"}, {"a1", "pending"}},
       {"alice", "mallory"}},
      {"three agreed: two others still a quorum",
       Replicate(),
       {Rec("a1", "alice", "sha256:x", "agreed"), Rec("a2", "mallory", "sha256:x", "agreed"),
        Rec("a3", "bob", "sha256:x", "agreed")},
       true,
       false,
       {{"a2", "demoted"}},
       {}},
      {"two others of one provider are one opinion",
       Replicate(),
       {Rec("a1", "alice", "sha256:x", "agreed"), Rec("a2", "mallory", "sha256:x", "agreed"),
        Rec("a3", "alice", "sha256:x", "agreed")},
       true,
       true,
       {{"a2", "demoted"}, {"a1", "pending"}, {"a3", "pending"}},
       {"alice", "mallory"}},
      {"adaptive: quorum of two as well",
       Adaptive(),
       {Rec("a1", "mallory", "sha256:x", "agreed"), Rec("a2", "bob", "sha256:x", "agreed"),
        Rec("a3", "carol", "sha256:y", "wrong", v1::FAILED)},
       true,
       true,
       {{"a1", "demoted"}, {"a2", "pending"}},
       {"mallory", "bob", "carol"}},
  };
  for (const Case& c : cases) {
    DemoteDecision d = DecideDemote(c.spec, "mallory", "m9", c.runs);
    EXPECT_EQ(d.changed, c.changed) << c.name;
    EXPECT_EQ(d.reopen, c.reopen) << c.name;
    std::vector<std::pair<std::string, std::string>> votes;
    for (const VoteWrite& v : d.votes) {
      votes.emplace_back(v.attempt_id, v.vote);
      EXPECT_FALSE(v.failed) << c.name << ": demoting proves nobody wrong";
    }
    EXPECT_EQ(votes, c.votes) << c.name;
    EXPECT_EQ(d.exclude_providers, c.exclude) << c.name;
    if (c.changed) EXPECT_NE(d.line.find("mallory"), std::string::npos) << c.name << ": " << d.line;
  }
}

// After a reopen, the new run settles the claim; a demoted vote that differs
// from what is then accepted is wrong too, and one that agrees is left alone.
TEST(TaskVerdict, AReopenedDemotedTaskIsSettledByTheNextRun) {
  TaskVerdict agree = DecideTask({Replicate(),
                                  {Rec("a1", "alice", "sha256:x", "pending"),
                                   Rec("a2", "mallory", "sha256:x", "demoted"), Rec("a3", "bob", "sha256:x")}});
  ASSERT_EQ(agree.outcome, TaskOutcome::kAccept);
  EXPECT_TRUE(agree.caught.empty());
  EXPECT_EQ(agree.verified, (std::vector<std::string>{"alice", "bob"})) << "the demoted vote counts for nothing";

  VerificationSpec s = Replicate();
  s.max_replicas = 6;
  TaskVerdict fake =
      DecideTask({s,
                  {Rec("a1", "oscar", "sha256:fake", "pending"), Rec("a2", "mallory", "sha256:fake", "demoted"),
                   Rec("a3", "bob", "sha256:x"), Rec("a4", "carol", "sha256:x")}});
  ASSERT_EQ(fake.outcome, TaskOutcome::kAccept) << fake.line;
  EXPECT_EQ(fake.caught, (std::vector<std::string>{"oscar", "mallory"}));
  for (const VoteWrite& v : fake.votes) {
    if (v.attempt_id == "a1" || v.attempt_id == "a2") {
      EXPECT_EQ(v.vote, "wrong") << v.attempt_id;
      EXPECT_TRUE(v.failed) << v.attempt_id;
    }
  }
}

}  // namespace
}  // namespace idlegrid::verify
