// The standing reader (coordinator/standing_reader.h) on its own: a real
// SQLite store and plain queued/active values, no coordinator. No cap
// without a verified queued task; an account is proven for an image at the
// trust threshold; the verified work in flight splits by it; a provider not
// taking work keeps its standing as last read; an active attempt's job is
// read once and forgotten when no list names it.
#include "coordinator/standing_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/test_support.h"
#include "manifest/manifest.h"

namespace idlegrid::coordinator {
namespace {

const std::string kImageX = "sha256:" + std::string(64, 'a');
const std::string kImageY = "sha256:" + std::string(64, 'b');

v1::JobSpec SpecOf(const std::string& image, bool verified) {
  v1::JobSpec spec;
  spec.set_api_version("idlegrid/v1");
  spec.set_name("sweep");
  spec.set_image(image);
  spec.mutable_resources()->set_cpu(1);
  spec.mutable_resources()->set_memory_bytes(1 << 28);
  spec.set_output_path("/out");
  spec.set_runtime("runc");
  spec.set_array_count(1);
  if (verified) spec.mutable_verification()->set_mode("replicate");
  return spec;
}

store::QueuedTask Queued(const std::string& job, const std::string& image, bool verified) {
  store::QueuedTask q;
  q.job_id = job;
  q.spec = SpecOf(image, verified);
  return q;
}

store::ActiveAttempt Active(const std::string& attempt, const std::string& job, const std::string& node) {
  store::ActiveAttempt a;
  a.attempt_id = attempt;
  a.job_id = job;
  a.node_id = node;
  a.state = v1::RUNNING;
  return a;
}

class StandingReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = store::OpenSqliteStore(dir_.path() + "/state.db");
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(*store);
    policy_.unproven_share = 0.25;
    policy_.trust_threshold = 3;
    reader_ = std::make_unique<StandingReader>(store_.get(), policy_);
    store::NodeRecord n;
    n.id = "n0";
    n.name = "n0";
    ASSERT_TRUE(store_->UpsertNode(n, "tok-n0").ok());
    fleet_.provider_of = {{"n-alice", "alice"}, {"n-bob", "bob"}};
    fleet_.providers = {"alice", "bob"};
    fleet_.taking = {"alice", "bob"};
  }
  // Writes `trust` through a verdict on a throwaway verified job (the only
  // way the store takes trust records).
  void SetTrust(const std::vector<store::TrustRecord>& trust) {
    const std::string job = "trust-" + std::to_string(++trust_writes_);
    ASSERT_TRUE(store_->CreateJob(job, SpecOf(kImageY, true), "sha256:spec-" + job, 1000).ok());
    auto committed = store_->CommitAssignments({{job + "-a", job, 0, "n0", 2000}});
    ASSERT_TRUE(committed.ok() && committed->size() == 1u);
    v1::ReportAttemptRequest r;
    r.set_attempt_id(job + "-a");
    r.set_event(v1::STARTED);
    ASSERT_TRUE(store_->ApplyAttemptReport("n0", r, 2500).ok());
    r.set_event(v1::EXITED);
    ASSERT_TRUE(store_->ApplyAttemptReport("n0", r, 3000).ok());
    store::VerdictWrite w;
    w.job_id = job;
    w.index = 0;
    w.expect = store::VerdictWrite::Expect::kHeld;
    w.task.state = v1::SUCCEEDED;
    w.task.updated_ms = 4000;
    w.verification = "accepted";
    w.trust = trust;
    auto applied = store_->ApplyVerdict(w, 4000);
    ASSERT_TRUE(applied.ok() && *applied) << (applied.ok() ? "not applied" : applied.status().ToString());
  }

  testing::TempDir dir_;
  std::unique_ptr<store::Store> store_;
  verify::VerificationPolicy policy_;
  std::unique_ptr<StandingReader> reader_;
  StandingReader::Fleet fleet_;
  int trust_writes_ = 0;
};

TEST_F(StandingReaderTest, NoCapWithoutAVerifiedQueuedTaskOrWithoutAShare) {
  const auto open = reader_->Read({Queued("j1", kImageX, false)}, {Active("a1", "j1", "n-alice")}, fleet_);
  EXPECT_EQ(open.unproven_share, 1);
  EXPECT_EQ(open.verified_in_flight, 0u);

  verify::VerificationPolicy uncapped = policy_;
  uncapped.unproven_share = 1;
  StandingReader none(store_.get(), uncapped);
  EXPECT_EQ(none.Read({Queued("j1", kImageX, true)}, {}, fleet_).unproven_share, 1);
}

TEST_F(StandingReaderTest, AnAccountIsProvenForAnImageAtTheThresholdAndTheWorkInFlightSplitsByIt) {
  SetTrust({{"alice", kImageX, 3, 1000, 0, 0}, {"bob", kImageX, 2, 1000, 0, 0}});
  const auto s = reader_->Read(
      {Queued("j1", kImageX, true)},
      {Active("a1", "j1", "n-alice"), Active("a2", "j1", "n-bob"), Active("a3", "j1", "n-unknown")}, fleet_);
  EXPECT_EQ(s.unproven_share, 0.25);
  ASSERT_EQ(s.proven.count(kImageX), 1u);
  EXPECT_EQ(s.proven.at(kImageX), std::set<std::string>{"alice"}) << "bob is one short of the threshold";
  EXPECT_EQ(s.verified_in_flight, 3u);
  EXPECT_EQ(s.unproven_in_flight, 2u) << "bob's and the unknown node's";
}

TEST_F(StandingReaderTest, AProviderNotTakingWorkKeepsItsStandingAsLastRead) {
  SetTrust({{"alice", kImageX, 3, 1000, 0, 0}});
  const std::vector<store::QueuedTask> queued = {Queued("j1", kImageX, true)};
  ASSERT_EQ(reader_->Read(queued, {}, fleet_).proven.at(kImageX), std::set<std::string>{"alice"});
  SetTrust({{"alice", kImageX, 0, 750, 1, 0}});  // caught since
  fleet_.taking = {"bob"};
  EXPECT_EQ(reader_->Read(queued, {}, fleet_).proven.count(kImageX), 1u) << "alice's records are not read again";
  fleet_.taking = {"alice", "bob"};
  EXPECT_EQ(reader_->Read(queued, {}, fleet_).proven.count(kImageX), 0u) << "read again once alice may take work";
}

TEST_F(StandingReaderTest, AnActiveAttemptsJobIsReadOnceAndForgottenWhenNoListNamesIt) {
  // j2 exists only in these lists, never in the store: what the reader
  // knows of it comes from the pass that named it queued.
  const auto first = reader_->Read({Queued("j1", kImageX, true), Queued("j2", kImageX, true)}, {}, fleet_);
  EXPECT_EQ(first.verified_in_flight, 0u);
  const auto second = reader_->Read({Queued("j1", kImageX, true)}, {Active("a2", "j2", "n-bob")}, fleet_);
  EXPECT_EQ(second.verified_in_flight, 1u) << "known from the last pass, not read";
  reader_->Read({Queued("j1", kImageX, true)}, {}, fleet_);  // neither list names j2
  const auto fourth = reader_->Read({Queued("j1", kImageX, true)}, {Active("a2", "j2", "n-bob")}, fleet_);
  EXPECT_EQ(fourth.verified_in_flight, 0u) << "forgotten, and the store has no such job: counted unverified";
}

}  // namespace
}  // namespace idlegrid::coordinator
