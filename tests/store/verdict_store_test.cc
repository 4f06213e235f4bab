// Verification's rows (schema v15) in both store backends: a verified job's
// result is held for the verdict, the verdict's writes land together (votes,
// the task's move, provider exclusions, providers' records), a verdict for a
// task no longer where it expects changes nothing, and backtracking reopens
// a succeeded task.
#include <gtest/gtest.h>
#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <string>

#include "store/store.h"
#include "store/store_fixture.h"

namespace idlegrid::store {
namespace {

using namespace backends;  // NOLINT: the shared fixture and helpers
using google::protobuf::util::MessageDifferencer;

class VerdictStoreTest : public StoreFixture, public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override { CreateDatabase(GetParam()); }

  void CreateVerifiedJob(const std::string& id) {
    v1::JobSpec spec = Spec();
    spec.mutable_verification()->set_mode("replicate");
    Status st = store_->CreateJob(id, spec, "sha256:spec-" + id, 1000);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  // Runs attempt `attempt` of task 0 on `node` to a successful exit.
  void RunToExit(const std::string& attempt, const std::string& node, int64_t at_ms) {
    Assign("j1", 0, attempt, node, at_ms);
    ReportOk(node, Report(attempt, v1::STARTED), at_ms + 1);
    ReportOk(node, Report(attempt, v1::EXITED), at_ms + 2);
  }
  std::vector<QueuedTask> Offered(int64_t now_ms) {
    auto q = store_->QueuedTasks(100, now_ms);
    EXPECT_TRUE(q.ok()) << q.status().ToString();
    return q.ok() ? *q : std::vector<QueuedTask>{};
  }
};

INSTANTIATE_TEST_SUITE_P(Backends, VerdictStoreTest, ::testing::Values(BackendKind::kSqlite, BackendKind::kPostgres),
                         [](const auto& info) { return backends::BackendName(info.param); });

TEST_P(VerdictStoreTest, AVerifiedJobsSuccessIsHeldForTheVerdict) {
  CreateVerifiedJob("j1");
  AddNode("n1", "alice");
  RunToExit("a1", "n1", 2000);
  const v1::Task t = TaskOf("j1", 0);
  EXPECT_EQ(t.state(), v1::QUEUED) << "not accepted on one node's word";
  EXPECT_EQ(t.attempts(0).state(), v1::SUCCEEDED);
  EXPECT_EQ(t.attempts(0).vote(), "pending");
  EXPECT_TRUE(Offered(INT64_MAX - 1).empty()) << "a held task is never offered";
  auto held = store_->HeldTasks(10);
  ASSERT_TRUE(held.ok());
  ASSERT_EQ(held->size(), 1u);
  EXPECT_EQ((*held)[0].job_id, "j1");
  // An unverified job's success ends its task as before.
  CreateJob("plain");
  Assign("plain", 0, "p1", "n1");
  ReportOk("n1", Report("p1", v1::EXITED));
  EXPECT_EQ(TaskOf("plain", 0).state(), v1::SUCCEEDED);
  EXPECT_EQ(TaskOf("plain", 0).attempts(0).vote(), "");
}

TEST_P(VerdictStoreTest, MoreRunsRequeuesTheTaskAwayFromTheProvidersThatRanIt) {
  CreateVerifiedJob("j1");
  AddNode("n1", "alice");
  RunToExit("a1", "n1", 2000);
  VerdictWrite w{"j1",
                 0,
                 VerdictWrite::Expect::kHeld,
                 {v1::QUEUED, v1::FAILURE_REASON_UNSPECIFIED, "verifying", 5000, 5000},
                 "verifying: another run",
                 5000,
                 {"provider:alice"},
                 false,
                 {},
                 {}};
  auto applied = store_->ApplyVerdict(w, 5000);
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  EXPECT_TRUE(*applied);
  EXPECT_TRUE(store_->HeldTasks(10)->empty());
  auto offered = Offered(5000);
  ASSERT_EQ(offered.size(), 1u);
  EXPECT_EQ(offered[0].excluded_nodes, std::vector<std::string>{"provider:alice"});
  EXPECT_EQ(TaskOf("j1", 0).verification(), "verifying: another run");
  EXPECT_EQ(TaskOf("j1", 0).attempts(0).vote(), "pending") << "its vote waits for the second result";
  // The same verdict again finds the task no longer held: nothing changes.
  auto again = store_->ApplyVerdict(w, 6000);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
}

TEST_P(VerdictStoreTest, AcceptWritesVotesFailsTheWrongRunAndKeepsProvidersRecords) {
  CreateVerifiedJob("j1");
  AddNode("n1", "alice");
  AddNode("n2", "bob");
  RunToExit("a1", "n1", 2000);
  ASSERT_TRUE(*store_->ApplyVerdict({"j1",
                                     0,
                                     VerdictWrite::Expect::kHeld,
                                     {v1::QUEUED, {}, "verifying", 3000, 3000},
                                     "verifying",
                                     3000,
                                     {"provider:alice"},
                                     false,
                                     {},
                                     {}},
                                    3000));
  RunToExit("a2", "n2", 4000);
  ASSERT_EQ(store_->HeldTasks(10)->size(), 1u);
  VerdictWrite accept{"j1",
                      0,
                      VerdictWrite::Expect::kHeld,
                      {v1::SUCCEEDED, {}, "accepted", 5000, std::nullopt},
                      "accepted: 2 of 3",
                      std::nullopt,
                      {},
                      false,
                      {{"a1", "agreed", "", false}, {"a2", "wrong", "outvoted: out.txt differs", true}},
                      {{"alice", "sha256:img", 1, 1000, 0, 0}, {"bob", "", 0, 750, 1, 0}}};
  ASSERT_TRUE(*store_->ApplyVerdict(accept, 5000));
  const v1::Task t = TaskOf("j1", 0);
  EXPECT_EQ(t.state(), v1::SUCCEEDED);
  EXPECT_EQ(t.verification(), "accepted: 2 of 3");
  EXPECT_EQ(t.attempts(0).vote(), "agreed");
  EXPECT_EQ(t.attempts(0).state(), v1::SUCCEEDED);
  EXPECT_EQ(t.attempts(1).vote(), "wrong");
  EXPECT_EQ(t.attempts(1).state(), v1::FAILED);
  EXPECT_EQ(t.attempts(1).failure_reason(), v1::VERIFICATION_FAILED);
  EXPECT_NE(t.attempts(1).message().find("out.txt differs"), std::string::npos) << t.attempts(1).message();
  auto bob = store_->TrustOf("bob");
  ASSERT_TRUE(bob.ok());
  ASSERT_EQ(bob->size(), 1u);
  EXPECT_EQ((*bob)[0].reliability, 750u);
  EXPECT_EQ((*bob)[0].caught, 1u);
  EXPECT_EQ(store_->TrustOf("alice")->at(0).consecutive, 1u);
  // Alice's accepted result is hers to answer for; bob's wrong one is not an accepted result.
  auto alice_results = store_->ProviderResults("alice", 0, 10);
  ASSERT_TRUE(alice_results.ok()) << alice_results.status().ToString();
  ASSERT_EQ(alice_results->size(), 1u);
  EXPECT_EQ((*alice_results)[0].attempt_id, "a1");
  EXPECT_EQ((*alice_results)[0].vote, "agreed");
  EXPECT_TRUE(store_->ProviderResults("bob", 0, 10)->empty());
  Reopen();
  EXPECT_TRUE(MessageDifferencer::Equals(TaskOf("j1", 0), t)) << "all of it is durable";
}

TEST_P(VerdictStoreTest, BacktrackingReopensASucceededTaskOnly) {
  CreateVerifiedJob("j1");
  AddNode("n1", "alice");
  RunToExit("a1", "n1", 2000);
  ASSERT_TRUE(*store_->ApplyVerdict({"j1",
                                     0,
                                     VerdictWrite::Expect::kHeld,
                                     {v1::SUCCEEDED, {}, "accepted unverified", 3000, std::nullopt},
                                     "accepted unverified",
                                     std::nullopt,
                                     {},
                                     false,
                                     {{"a1", "unverified", "", false}},
                                     {}},
                                    3000));
  ASSERT_EQ(TaskOf("j1", 0).state(), v1::SUCCEEDED);
  VerdictWrite reopen{"j1",
                      0,
                      VerdictWrite::Expect::kSucceeded,
                      {v1::QUEUED, {}, "re-verifying", 4000, 4000},
                      "re-verifying",
                      4000,
                      {"provider:alice"},
                      false,
                      {{"a1", "pending", "re-verifying: provider caught", false}},
                      {}};
  ASSERT_TRUE(*store_->ApplyVerdict(reopen, 4000));
  const v1::Task t = TaskOf("j1", 0);
  EXPECT_EQ(t.state(), v1::QUEUED);
  EXPECT_EQ(t.attempts(0).vote(), "pending");
  EXPECT_EQ(Offered(4000).size(), 1u);
  EXPECT_FALSE(*store_->ApplyVerdict(reopen, 5000)) << "a queued task is not reopened again";
}

// Demote (verify::DecideDemote): the caught provider's agreeing vote stops
// counting (it is no longer one of its accepted results), and a task left
// short of its quorum is reopened with the other vote back to pending.
TEST_P(VerdictStoreTest, ADemotedVoteIsNoLongerAnAcceptedResultAndTheTaskReopens) {
  CreateVerifiedJob("j1");
  AddNode("n1", "alice");
  AddNode("n2", "mallory");
  RunToExit("a1", "n1", 2000);
  ASSERT_TRUE(*store_->ApplyVerdict({"j1",
                                     0,
                                     VerdictWrite::Expect::kHeld,
                                     {v1::QUEUED, {}, "verifying", 3000, 3000},
                                     "verifying",
                                     3000,
                                     {"provider:alice"},
                                     false,
                                     {},
                                     {}},
                                    3000));
  RunToExit("a2", "n2", 4000);
  ASSERT_TRUE(*store_->ApplyVerdict({"j1",
                                     0,
                                     VerdictWrite::Expect::kHeld,
                                     {v1::SUCCEEDED, {}, "accepted", 5000, std::nullopt},
                                     "accepted: 2 of 2",
                                     std::nullopt,
                                     {},
                                     false,
                                     {{"a1", "agreed", "", false}, {"a2", "agreed", "", false}},
                                     {}},
                                    5000));
  ASSERT_EQ(store_->ProviderResults("mallory", 0, 10)->size(), 1u);
  VerdictWrite demote{"j1",
                      0,
                      VerdictWrite::Expect::kSucceeded,
                      {v1::QUEUED, {}, "re-verifying", 6000, 6000},
                      "re-verifying: provider mallory was proven wrong",
                      6000,
                      {"provider:alice", "provider:mallory"},
                      true,
                      {{"a2", "demoted", "its provider mallory was proven wrong (attempt m9)", false},
                       {"a1", "pending", "re-verifying: it agreed with provider mallory", false}},
                      {}};
  ASSERT_TRUE(*store_->ApplyVerdict(demote, 6000));
  const v1::Task t = TaskOf("j1", 0);
  EXPECT_EQ(t.state(), v1::QUEUED);
  EXPECT_EQ(t.attempts(0).vote(), "pending");
  EXPECT_EQ(t.attempts(1).vote(), "demoted");
  EXPECT_EQ(t.attempts(1).state(), v1::SUCCEEDED) << "demoting proves the run wrong on nothing";
  EXPECT_EQ(t.attempts(1).vote_reason(), "its provider mallory was proven wrong (attempt m9)");
  EXPECT_TRUE(store_->ProviderResults("mallory", 0, 10)->empty()) << "no longer an accepted result of mallory";
  EXPECT_TRUE(store_->ProviderResults("alice", 0, 10)->empty()) << "alice's claim is under test again";
  auto offered = Offered(6000);
  ASSERT_EQ(offered.size(), 1u);
  EXPECT_EQ(offered[0].excluded_nodes, (std::vector<std::string>{"provider:alice", "provider:mallory"}));
  EXPECT_FALSE(*store_->ApplyVerdict(demote, 7000)) << "applied once";
}

TEST_P(VerdictStoreTest, AKnownAnswerCheckIsFoundByItsExclusionAndCanBeWithdrawn) {
  CreateVerifiedJob("j1");
  AddNode("n1", "alice");
  RunToExit("a1", "n1", 2000);
  ASSERT_TRUE(*store_->ApplyVerdict({"j1",
                                     0,
                                     VerdictWrite::Expect::kHeld,
                                     {v1::QUEUED, {}, "v", 3000, 3000},
                                     "v",
                                     3000,
                                     {"provider:alice", "n9"},
                                     false,
                                     {},
                                     {}},
                                    3000));
  EXPECT_TRUE(store_->TasksExcluding("only-provider:", 10)->empty());
  // Sent to mallory only: the list is replaced, not appended to.
  ASSERT_FALSE(*store_->ApplyVerdict({"j1",
                                      0,
                                      VerdictWrite::Expect::kSucceeded,
                                      {v1::QUEUED, {}, "c", 4000, 4000},
                                      "c",
                                      4000,
                                      {"only-provider:mallory"},
                                      true,
                                      {},
                                      {}},
                                     4000))
      << "the task is queued, not succeeded";
  ASSERT_TRUE(*store_->ApplyVerdict({"j1",
                                     0,
                                     VerdictWrite::Expect::kQueued,
                                     {v1::QUEUED, {}, "c", 4000, 4000},
                                     "c",
                                     4000,
                                     {"only-provider:mallory"},
                                     true,
                                     {},
                                     {}},
                                    4000));
  auto offered = Offered(5000);
  ASSERT_EQ(offered.size(), 1u);
  EXPECT_EQ(offered[0].excluded_nodes, std::vector<std::string>{"only-provider:mallory"});
  auto waiting = store_->TasksExcluding("only-provider:", 10);
  ASSERT_TRUE(waiting.ok()) << waiting.status().ToString();
  ASSERT_EQ(waiting->size(), 1u);
  EXPECT_EQ((*waiting)[0].first.job_id, "j1");
  EXPECT_EQ((*waiting)[0].second, 4000);
  EXPECT_TRUE(store_->TasksExcluding("nobody:", 10)->empty());
  // Withdrawn: back to SUCCEEDED, its exclusions gone.
  ASSERT_TRUE(*store_->ApplyVerdict({"j1",
                                     0,
                                     VerdictWrite::Expect::kQueued,
                                     {v1::SUCCEEDED, {}, "w", 6000, std::nullopt},
                                     "w",
                                     std::nullopt,
                                     {},
                                     true,
                                     {},
                                     {}},
                                    6000));
  EXPECT_EQ(TaskOf("j1", 0).state(), v1::SUCCEEDED);
  EXPECT_TRUE(store_->TasksExcluding("only-provider:", 10)->empty());
}

TEST_P(VerdictStoreTest, UpgradingFromV14KeepsJobsAndAddsEmptyVotes) {
  CreateJob("j1");
  Assign("j1", 0, "a1", "n1");
  ReportOk("n1", Report("a1", v1::EXITED), 4000);
  const v1::Job before = Job("j1");
  store_.reset();
  ASSERT_TRUE(db_->Exec(kUndoV18).ok());
  ASSERT_TRUE(db_->Exec(kUndoV17).ok());
  ASSERT_TRUE(db_->Exec(kUndoV16).ok());
  ASSERT_TRUE(db_->Exec("ALTER TABLE attempts DROP COLUMN vote").ok());
  ASSERT_TRUE(db_->Exec("ALTER TABLE attempts DROP COLUMN vote_reason").ok());
  ASSERT_TRUE(db_->Exec("ALTER TABLE tasks DROP COLUMN verification").ok());
  ASSERT_TRUE(db_->Exec("DROP TABLE provider_trust").ok());
  ASSERT_TRUE(db_->SetSchemaVersion(14).ok());
  Open();
  EXPECT_EQ(*db_->SchemaVersion(), LatestSchemaVersion(GetParam()));
  EXPECT_GE(LatestSchemaVersion(GetParam()), 15);
  EXPECT_TRUE(MessageDifferencer::Equals(Job("j1"), before));
  EXPECT_TRUE(store_->TrustOf("anyone")->empty());
}

}  // namespace
}  // namespace idlegrid::store
