// The verification service (coordinator/verification_service.h) on its own:
// a real SQLite store, a manual clock, a fixed random seed and recording
// hooks, no coordinator. A replicated task's first result asks for another
// run away from its provider; agreeing results are accepted and count for
// their providers; a split is settled by a lead of two and the outvoted
// provider is caught; the sweep finds a verdict the report path never made,
// at its own pace; a known-answer check its provider does not take is
// withdrawn after a minute.
#include "coordinator/verification_service.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/test_support.h"
#include "manifest/manifest.h"
#include "sched/scheduler.h"
#include "coordinator/service_fixture.h"

namespace idlegrid::coordinator {
namespace {

const std::string kImage = "sha256:" + std::string(64, 'a');

std::string Digest(char c) { return "sha256:" + std::string(64, c); }

class VerificationServiceTest : public ServiceTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(ServiceTest::SetUp());
    verify::VerificationPolicy policy;
    policy.default_mode = verify::Mode::kNone;
    VerificationService::Hooks hooks;
    hooks.provider_of = [this](const std::string& node_id) {
      auto rec = store_->GetNode(node_id);
      return rec.ok() && *rec ? (*rec)->provider : std::string("operator");
    };
    hooks.verdict_written = [this](const std::string& job_id) { verdicts_.push_back(job_id); };
    hooks.changed = [this] { ++changes_; };
    service_ = std::make_unique<VerificationService>(store_.get(), artifacts_.get(), nullptr, &clock_, policy,
                                                     VerificationService::kDefaultBacktrackWindowMs, std::move(hooks),
                                                     /*seed=*/42);
    for (const char* p : {"alice", "bob", "carol", "dave"}) AddNode(std::string("n-") + p, p);
  }

  void AddNode(const std::string& id, const std::string& provider) {
    store::NodeRecord n;
    n.id = id;
    n.name = id;
    n.provider = provider;
    ASSERT_TRUE(store_->UpsertNode(n, "tok-" + id).ok());
  }
  void CreateJob(const std::string& id, const std::string& mode) {
    v1::JobSpec spec;
    spec.set_api_version("idlegrid/v1");
    spec.set_name("sweep");
    spec.set_image(kImage);
    spec.mutable_resources()->set_cpu(1);
    spec.mutable_resources()->set_memory_bytes(1 << 28);
    spec.set_output_path("/out");
    spec.set_runtime("runc");
    spec.set_array_count(1);
    if (!mode.empty()) spec.mutable_verification()->set_mode(mode);
    ASSERT_TRUE(store_->CreateJob(id, spec, manifest::SpecDigest(spec), clock_.NowMs()).ok());
  }
  // Runs `attempt` of task 0 on `node` to a successful exit with out.txt of `digest`.
  void RunToExit(const std::string& job, const std::string& attempt, const std::string& node,
                 const std::string& digest) {
    auto committed = store_->CommitAssignments({{attempt, job, 0, node, clock_.NowMs()}});
    ASSERT_TRUE(committed.ok() && committed->size() == 1u) << job << " not assigned to " << node;
    v1::ReportAttemptRequest r;
    r.set_attempt_id(attempt);
    r.set_event(v1::STARTED);
    ASSERT_TRUE(store_->ApplyAttemptReport(node, r, clock_.NowMs()).ok());
    r.set_event(v1::EXITED);
    auto* out = r.add_outputs();
    out->set_path("out.txt");
    out->set_digest(digest);
    out->set_size(3);
    ASSERT_TRUE(store_->ApplyAttemptReport(node, r, clock_.NowMs()).ok());
  }
  v1::Task Task0(const std::string& job) {
    auto j = store_->GetJob(job);
    EXPECT_TRUE(j.ok() && j->tasks_size() > 0);
    return j.ok() && j->tasks_size() > 0 ? j->tasks(0) : v1::Task();
  }
  std::vector<std::string> OfferedExclusions(const std::string& job) {
    auto q = store_->QueuedTasks(100, clock_.NowMs());
    EXPECT_TRUE(q.ok());
    for (const auto& t : q.ok() ? *q : std::vector<store::QueuedTask>{}) {
      if (t.job_id == job) return t.excluded_nodes;
    }
    ADD_FAILURE() << job << " is not offered";
    return {};
  }
  uint32_t Caught(const std::string& provider) {
    auto records = store_->TrustOf(provider);
    EXPECT_TRUE(records.ok());
    for (const auto& r : records.ok() ? *records : std::vector<store::TrustRecord>{}) {
      if (r.image.empty()) return r.caught;
    }
    return 0;
  }
  uint32_t Consecutive(const std::string& provider) {
    auto records = store_->TrustOf(provider);
    EXPECT_TRUE(records.ok());
    for (const auto& r : records.ok() ? *records : std::vector<store::TrustRecord>{}) {
      if (!r.image.empty()) return r.consecutive;
    }
    return 0;
  }

  std::unique_ptr<VerificationService> service_;
  std::vector<std::string> verdicts_;
  int changes_ = 0;
};

TEST_F(VerificationServiceTest, ResolveFillsTheOperatorsDefaultAndRefusesAnUnknownMode) {
  v1::JobSpec plain;
  EXPECT_TRUE(service_->Resolve(&plain).ok());
  EXPECT_EQ(plain.verification().mode(), "") << "the operator's default here is none";

  verify::VerificationPolicy replicate;
  replicate.default_mode = verify::Mode::kReplicate;
  VerificationService strict(store_.get(), artifacts_.get(), nullptr, &clock_, replicate,
                             VerificationService::kDefaultBacktrackWindowMs, {}, 1);
  v1::JobSpec named;
  EXPECT_TRUE(strict.Resolve(&named).ok());
  EXPECT_EQ(named.verification().mode(), "replicate") << "written into the spec the store keeps";

  v1::JobSpec bad;
  bad.mutable_verification()->set_mode("trust-me");
  Status st = service_->Resolve(&bad);
  EXPECT_EQ(st.code(), Code::kInvalidArgument) << st.ToString();
}

TEST_F(VerificationServiceTest, AgreeingReplicasAreAcceptedAndCountForTheirProviders) {
  CreateJob("j1", "replicate");
  RunToExit("j1", "a1", "n-alice", Digest('1'));
  ASSERT_TRUE(service_->Decide("j1", 0).ok());
  EXPECT_EQ(Task0("j1").state(), v1::QUEUED) << "one provider's word is not enough";
  EXPECT_EQ(OfferedExclusions("j1"), std::vector<std::string>{std::string(sched::kProviderExclusion) + "alice"});
  EXPECT_EQ(verdicts_, std::vector<std::string>{"j1"});
  EXPECT_EQ(changes_, 1);

  RunToExit("j1", "a2", "n-bob", Digest('1'));
  ASSERT_TRUE(service_->Decide("j1", 0).ok());
  const v1::Task t = Task0("j1");
  EXPECT_EQ(t.state(), v1::SUCCEEDED) << t.verification();
  ASSERT_EQ(t.attempts_size(), 2);
  EXPECT_EQ(t.attempts(0).vote(), "agreed");
  EXPECT_EQ(t.attempts(1).vote(), "agreed");
  EXPECT_EQ(Consecutive("alice"), 1u);
  EXPECT_EQ(Consecutive("bob"), 1u);
  // Deciding again finds nothing held: nothing is written, no hook runs.
  ASSERT_TRUE(service_->Decide("j1", 0).ok());
  EXPECT_EQ(verdicts_.size(), 2u);
  EXPECT_EQ(Task0("j1").state(), v1::SUCCEEDED);
}

TEST_F(VerificationServiceTest, ASplitIsSettledByALeadOfTwoAndTheOutvotedProviderIsCaught) {
  CreateJob("j1", "replicate");
  RunToExit("j1", "a1", "n-alice", Digest('1'));
  ASSERT_TRUE(service_->Decide("j1", 0).ok());
  RunToExit("j1", "a2", "n-bob", Digest('2'));
  ASSERT_TRUE(service_->Decide("j1", 0).ok());
  EXPECT_EQ(Task0("j1").state(), v1::QUEUED) << "1-1: more runs";
  RunToExit("j1", "a3", "n-carol", Digest('1'));
  ASSERT_TRUE(service_->Decide("j1", 0).ok());
  EXPECT_EQ(Task0("j1").state(), v1::QUEUED) << "2-1 is a lead of one: more runs";
  EXPECT_EQ(Caught("bob"), 0u);
  RunToExit("j1", "a4", "n-dave", Digest('1'));
  ASSERT_TRUE(service_->Decide("j1", 0).ok());

  const v1::Task t = Task0("j1");
  EXPECT_EQ(t.state(), v1::SUCCEEDED) << t.verification();
  ASSERT_EQ(t.attempts_size(), 4);
  EXPECT_EQ(t.attempts(1).vote(), "wrong");
  EXPECT_EQ(t.attempts(1).state(), v1::FAILED);
  EXPECT_EQ(t.attempts(1).failure_reason(), v1::VERIFICATION_FAILED);
  EXPECT_EQ(Caught("bob"), 1u);
  EXPECT_EQ(Caught("alice"), 0u);
}

TEST_F(VerificationServiceTest, TheSweepDecidesWhatTheReportPathLeftHeldAtItsOwnPace) {
  CreateJob("j1", "replicate");
  CreateJob("j2", "replicate");
  RunToExit("j1", "a1", "n-alice", Digest('1'));
  service_->Sweep();  // a coordinator that crashed before its verdict, restarted
  EXPECT_EQ(Task0("j1").state(), v1::QUEUED);
  EXPECT_EQ(Task0("j1").attempts(0).vote(), "pending");
  EXPECT_EQ(verdicts_, std::vector<std::string>{"j1"});

  RunToExit("j2", "b1", "n-bob", Digest('3'));
  clock_.AdvanceMs(VerificationService::kSweepMs - 1);
  service_->Sweep();
  EXPECT_EQ(verdicts_.size(), 1u) << "a second sweep within kSweepMs reads nothing";
  auto held = store_->HeldTasks(10);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(held->size(), 1u);
  clock_.AdvanceMs(1);
  service_->Sweep();
  EXPECT_EQ(verdicts_, (std::vector<std::string>{"j1", "j2"}));
  EXPECT_TRUE(store_->HeldTasks(10)->empty());
}

TEST_F(VerificationServiceTest, AKnownAnswerCheckNotTakenWithinAMinuteIsWithdrawn) {
  CreateJob("j1", "replicate");
  RunToExit("j1", "a1", "n-alice", Digest('1'));
  ASSERT_TRUE(service_->Decide("j1", 0).ok());
  RunToExit("j1", "a2", "n-bob", Digest('1'));
  ASSERT_TRUE(service_->Decide("j1", 0).ok());
  ASSERT_EQ(Task0("j1").state(), v1::SUCCEEDED);
  // The check as SendKnownAnswerCheck writes it: the accepted task back in
  // the queue for carol alone.
  store::VerdictWrite w;
  w.job_id = "j1";
  w.index = 0;
  w.expect = store::VerdictWrite::Expect::kSucceeded;
  w.task.state = v1::QUEUED;
  w.task.updated_ms = clock_.NowMs();
  w.task.queued_ms = clock_.NowMs();
  w.verification = "known-answer check in progress";
  w.not_before_ms = clock_.NowMs();
  w.reset_exclusions = true;
  w.exclude.push_back(std::string(sched::kOnlyProvider) + "carol");
  ASSERT_TRUE(*store_->ApplyVerdict(w, clock_.NowMs()));

  clock_.AdvanceMs(VerificationService::kSweepMs);
  service_->Sweep();
  EXPECT_EQ(Task0("j1").state(), v1::QUEUED) << "carol still has time";
  clock_.AdvanceMs(VerificationService::kChallengeWaitMs);
  service_->Sweep();
  const v1::Task t = Task0("j1");
  EXPECT_EQ(t.state(), v1::SUCCEEDED) << "the agreed result stands";
  EXPECT_NE(t.verification().find("withdrawn"), std::string::npos) << t.verification();
  auto queued = store_->QueuedTasks(100, clock_.NowMs());
  ASSERT_TRUE(queued.ok());
  EXPECT_TRUE(queued->empty()) << "nothing left in the queue";
}

}  // namespace
}  // namespace idlegrid::coordinator
