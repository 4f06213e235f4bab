// The receipt desk (coordinator/receipt_desk.h) on its own: a real SQLite
// store holding one node with an enrolled key and one exited attempt, no
// coordinator. Only an exit may carry a statement, and only one its node's
// enrolled key signed; a checked statement is countersigned into a receipt
// that verifies and is read back by job, task or attempt; a statement naming
// another task, or a desk without a key, issues none.
#include "coordinator/receipt_desk.h"

#include <gtest/gtest.h>

#include <string>

#include "common/test_support.h"
#include "manifest/manifest.h"
#include "receipt/receipt.h"

namespace idlegrid::coordinator {
namespace {

class ReceiptDeskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = store::OpenSqliteStore(dir_.path() + "/state.db");
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(*store);
    store::NodeRecord n;
    n.id = node_;
    n.name = node_;
    n.provider = "alice";
    n.public_key = node_key_.public_key();
    ASSERT_TRUE(store_->UpsertNode(n, "tok-a").ok());
    v1::JobSpec spec;
    spec.set_api_version("idlegrid/v1");
    spec.set_name("metered");
    spec.set_image("sha256:" + std::string(64, 'a'));
    spec.mutable_resources()->set_cpu(1);
    spec.mutable_resources()->set_memory_bytes(1 << 28);
    spec.set_output_path("/out");
    spec.set_runtime("runc");
    spec.set_array_count(1);
    ASSERT_TRUE(store_->CreateJob("j1", spec, manifest::SpecDigest(spec), 1000).ok());
    auto committed = store_->CommitAssignments({{"a1", "j1", 0, node_, 2000}});
    ASSERT_TRUE(committed.ok() && committed->size() == 1u);
    epoch_ = (*committed)[0].lease_epoch;
    v1::ReportAttemptRequest started;
    started.set_attempt_id("a1");
    started.set_event(v1::STARTED);
    ASSERT_TRUE(store_->ApplyAttemptReport(node_, started, 3000).ok());
  }
  // The exit with a statement for task `task` signed by `signer`.
  v1::ReportAttemptRequest Exited(const advert::NodeKey& signer, uint32_t task = 0) {
    v1::ReportAttemptRequest r;
    r.set_attempt_id("a1");
    r.set_event(v1::EXITED);
    r.set_lease_epoch(epoch_);
    v1::ReceiptStatement* s = r.mutable_receipt_statement();
    s->set_job_id("j1");
    s->set_task_index(task);
    s->set_attempt_id("a1");
    s->set_lease_epoch(epoch_);
    s->set_node_id(node_);
    s->mutable_metering()->set_run_ms(90'000);
    s->mutable_metering()->set_cpu_source("rusage");
    s->mutable_provenance()->set_node_id(node_);
    s->mutable_provenance()->set_node_key_fingerprint(advert::KeyFingerprint(node_key_.public_key()));
    r.set_receipt_signature(*receipt::SignStatement(signer, *s));
    return r;
  }
  // Applies the exit to the store, as the coordinator does between the
  // check and the issue, and returns the job as it left it.
  v1::Job Apply(const v1::ReportAttemptRequest& exit) {
    EXPECT_TRUE(store_->ApplyAttemptReport(node_, exit, 93'000).ok());
    auto job = store_->GetJob("j1");
    EXPECT_TRUE(job.ok());
    return job.ok() ? *job : v1::Job();
  }

  testing::TempDir dir_;
  std::unique_ptr<store::Store> store_;
  const advert::NodeKey node_key_ = advert::NodeKey::Generate();
  const std::string node_ = node_key_.node_id();  // a node's id derives from its key
  const advert::NodeKey coordinator_key_ = advert::NodeKey::Generate();
  uint64_t epoch_ = 0;
};

TEST_F(ReceiptDeskTest, OnlyAnExitSignedByTheNodesEnrolledKeyCarriesAStatement) {
  ReceiptDesk desk(store_.get(), coordinator_key_);
  v1::ReportAttemptRequest plain;
  plain.set_attempt_id("a1");
  plain.set_event(v1::EXITED);
  EXPECT_TRUE(desk.CheckStatement(node_, plain).ok()) << "no statement: nothing to check";

  EXPECT_TRUE(desk.CheckStatement(node_, Exited(node_key_)).ok());
  const advert::NodeKey forger = advert::NodeKey::Generate();
  EXPECT_EQ(desk.CheckStatement(node_, Exited(forger)).code(), Code::kPermissionDenied);

  v1::ReportAttemptRequest early = Exited(node_key_);
  early.set_event(v1::STARTED);
  Status st = desk.CheckStatement(node_, early);
  EXPECT_EQ(st.code(), Code::kPermissionDenied);
  EXPECT_NE(st.message().find("only an exit carries one"), std::string::npos) << st.message();
  EXPECT_EQ(desk.CheckStatement("node-unknown", Exited(node_key_)).code(), Code::kPermissionDenied);
}

TEST_F(ReceiptDeskTest, ACheckedStatementIsCountersignedStoredAndReadBack) {
  ReceiptDesk desk(store_.get(), coordinator_key_);
  const v1::ReportAttemptRequest exit = Exited(node_key_);
  ASSERT_TRUE(desk.CheckStatement(node_, exit).ok());
  desk.Issue(node_, Apply(exit), exit);

  v1::GetReceiptRequest req;
  req.set_job_id("j1");
  auto r = desk.Get(req);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->provider(), "alice");
  EXPECT_EQ(r->node_public_key(), node_key_.public_key());
  auto checked = receipt::VerifyReceipt(*r, receipt::Fingerprint(coordinator_key_.public_key()));
  EXPECT_TRUE(checked.ok()) << checked.status().message();
  req.set_attempt_id("a1");
  EXPECT_TRUE(desk.Get(req).ok());
  req.set_attempt_id("a-other");
  auto none = desk.Get(req);
  EXPECT_EQ(none.status().code(), Code::kNotFound);
  EXPECT_NE(none.status().message().find("attempt a-other"), std::string::npos) << none.status().message();
}

TEST_F(ReceiptDeskTest, AStatementNamingAnotherTaskOrADeskWithoutAKeyIssuesNone) {
  ReceiptDesk unkeyed(store_.get(), std::nullopt);
  const v1::ReportAttemptRequest exit = Exited(node_key_);
  EXPECT_TRUE(unkeyed.CheckStatement(node_, exit).ok()) << "statements are still checked";
  const v1::Job job = Apply(exit);
  unkeyed.Issue(node_, job, exit);
  v1::GetReceiptRequest req;
  req.set_job_id("j1");
  EXPECT_EQ(unkeyed.Get(req).status().code(), Code::kNotFound);

  ReceiptDesk desk(store_.get(), coordinator_key_);
  desk.Issue(node_, job, Exited(node_key_, /*task=*/7));
  EXPECT_EQ(desk.Get(req).status().code(), Code::kNotFound) << "a statement for task 7 is not task 0's receipt";
}

}  // namespace
}  // namespace idlegrid::coordinator
