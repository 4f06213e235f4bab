// Attempt reports (coordinator/attempt_reports.h) on their own: a real SQLite
// store, receipt desk, counters and verification, a manual clock and
// recording hooks, no coordinator. A provenance is recorded as the node that
// sent it; another node's attempt reads as missing; a forged receipt
// statement fails the attempt as the node's fault and its outputs are not
// taken; an ending report reaches readiness and the ledger with the job as
// it left it; log chunks are tagged with their task and refused for another
// node's attempt.
#include "coordinator/attempt_reports.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "advert/node_key.h"
#include "common/test_support.h"
#include "manifest/manifest.h"
#include "receipt/receipt.h"
#include "coordinator/service_fixture.h"

namespace idlegrid::coordinator {
namespace {

class AttemptReportsTest : public ServiceTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(ServiceTest::SetUp());
    receipts_ = std::make_unique<ReceiptDesk>(store_.get(), std::nullopt);
    verify::VerificationPolicy policy;
    policy.default_mode = verify::Mode::kNone;
    verification_ = std::make_unique<VerificationService>(store_.get(), artifacts_.get(), nullptr, &clock_, policy,
                                                          VerificationService::kDefaultBacktrackWindowMs,
                                                          VerificationService::Hooks{}, 1);
    AttemptReports::Hooks hooks;
    hooks.public_key_of = [this](const std::string& node_id) {
      return node_id == node_ ? key_.public_key() : std::string();
    };
    hooks.judge_readiness = [this](const v1::Job& job) { judged_.push_back(job.id()); };
    hooks.settle_ledger = [this](const v1::Job& job) { settled_.push_back(job.id()); };
    hooks.changed = [this] { ++changes_; };
    reports_ = std::make_unique<AttemptReports>(store_.get(), receipts_.get(), &counters_, verification_.get(), &clock_,
                                                jobs::LogCap{}, std::move(hooks));
    for (const std::string& id : {node_, other_}) {
      store::NodeRecord n;
      n.id = id;
      n.name = id;
      n.public_key = id == node_ ? key_.public_key() : "";
      ASSERT_TRUE(store_->UpsertNode(n, "tok-" + id).ok());
    }
    v1::JobSpec spec;
    spec.set_api_version("idlegrid/v1");
    spec.set_name("sweep");
    spec.set_image("sha256:" + std::string(64, 'a'));
    spec.mutable_resources()->set_cpu(1);
    spec.mutable_resources()->set_memory_bytes(1 << 28);
    spec.set_output_path("/out");
    spec.set_runtime("runc");
    spec.set_array_count(2);
    ASSERT_TRUE(store_->CreateJob("j1", spec, manifest::SpecDigest(spec), clock_.NowMs()).ok());
    auto committed =
        store_->CommitAssignments({{"a0", "j1", 0, node_, clock_.NowMs()}, {"a1", "j1", 1, node_, clock_.NowMs()}});
    ASSERT_TRUE(committed.ok() && committed->size() == 2u);
  }
  static v1::ReportAttemptRequest Report(const std::string& attempt, v1::AttemptEvent event) {
    v1::ReportAttemptRequest r;
    r.set_attempt_id(attempt);
    r.set_event(event);
    return r;
  }
  v1::Attempt AttemptOf(uint32_t task) {
    auto job = store_->GetJob("j1");
    EXPECT_TRUE(job.ok() && job->tasks_size() > static_cast<int>(task) &&
                job->tasks(static_cast<int>(task)).attempts_size() > 0);
    return job.ok() ? job->tasks(static_cast<int>(task)).attempts(0) : v1::Attempt();
  }

  const advert::NodeKey key_ = advert::NodeKey::Generate();
  const std::string node_ = key_.node_id();
  const std::string other_ = "n-other";
  std::unique_ptr<ReceiptDesk> receipts_;
  EventCounters counters_;
  std::unique_ptr<VerificationService> verification_;
  std::unique_ptr<AttemptReports> reports_;
  std::vector<std::string> judged_, settled_;
  int changes_ = 0;
};

TEST_F(AttemptReportsTest, AProvenanceIsRecordedAsTheNodeThatSentIt) {
  v1::ReportAttemptRequest started = Report("a0", v1::STARTED);
  started.mutable_provenance()->set_node_id("n-somebody-else");
  started.mutable_provenance()->set_node_key_fingerprint("sha256:forged");
  ASSERT_TRUE(reports_->Report(node_, started).ok());
  const v1::Attempt a = AttemptOf(0);
  EXPECT_EQ(a.state(), v1::RUNNING);
  EXPECT_EQ(a.provenance().node_id(), node_);
  EXPECT_EQ(a.provenance().node_key_fingerprint(), advert::KeyFingerprint(key_.public_key()));
  EXPECT_EQ(changes_, 1);
}

TEST_F(AttemptReportsTest, AnotherNodesAttemptReadsAsMissing) {
  Status st = reports_->Report(other_, Report("a0", v1::STARTED));
  EXPECT_EQ(st.code(), Code::kNotFound) << st.ToString();
  EXPECT_EQ(AttemptOf(0).state(), v1::ASSIGNED) << "nothing applied";
  EXPECT_EQ(changes_, 0);
}

TEST_F(AttemptReportsTest, AForgedReceiptStatementFailsTheAttemptAsTheNodesFaultWithoutItsOutputs) {
  ASSERT_TRUE(reports_->Report(node_, Report("a0", v1::STARTED)).ok());
  v1::ReportAttemptRequest exited = Report("a0", v1::EXITED);
  auto* out = exited.add_outputs();
  out->set_path("result.txt");
  out->set_digest("sha256:" + std::string(64, 'b'));
  out->set_size(3);
  v1::ReceiptStatement* s = exited.mutable_receipt_statement();
  s->set_job_id("j1");
  s->set_attempt_id("a0");
  s->set_node_id(node_);
  const advert::NodeKey forger = advert::NodeKey::Generate();
  exited.set_receipt_signature(*receipt::SignStatement(forger, *s));
  ASSERT_TRUE(reports_->Report(node_, exited).ok());
  const v1::Attempt a = AttemptOf(0);
  EXPECT_EQ(a.state(), v1::FAILED);
  EXPECT_EQ(a.failure_reason(), v1::PLATFORM_FAILURE);
  EXPECT_NE(a.message().find("its receipt was refused"), std::string::npos) << a.message();
  EXPECT_EQ(a.outputs_size(), 0) << "what came with a refused statement is not taken";
}

TEST_F(AttemptReportsTest, AnEndingReportReachesReadinessAndTheLedgerWithTheJobAsItLeftIt) {
  ASSERT_TRUE(reports_->Report(node_, Report("a1", v1::STARTED)).ok());
  EXPECT_TRUE(judged_.empty()) << "a start ends nothing";
  ASSERT_TRUE(reports_->Report(node_, Report("a1", v1::EXITED)).ok());
  EXPECT_EQ(judged_, std::vector<std::string>{"j1"});
  EXPECT_EQ(settled_, std::vector<std::string>{"j1"});
  EXPECT_EQ(AttemptOf(1).state(), v1::SUCCEEDED);
}

TEST_F(AttemptReportsTest, LogChunksAreTaggedWithTheirTaskAndRefusedForAnotherNodesAttempt) {
  v1::AppendLogsRequest logs;
  auto* c = logs.add_chunks();
  c->set_attempt_id("a1");
  c->set_data("epoch 1 loss 0.5\n");
  ASSERT_TRUE(reports_->AppendLogs(node_, logs).ok());
  auto stored = store_->ReadLogs("j1", 0, 10);
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ((*stored)[0].task_index(), 1u);
  EXPECT_EQ((*stored)[0].data(), "epoch 1 loss 0.5\n");

  EXPECT_EQ(reports_->AppendLogs(other_, logs).code(), Code::kNotFound);
  EXPECT_EQ(store_->ReadLogs("j1", 0, 10)->size(), 1u) << "nothing stored for the other node";
}

}  // namespace
}  // namespace idlegrid::coordinator
