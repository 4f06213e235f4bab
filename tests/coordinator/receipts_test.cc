// Receipts through the coordinator (docs/receipts.md): an EXITED report's
// statement, signed with the node's enrolled key, comes back countersigned
// and verifiable; one signed by another key, or for another lease, is
// refused and the attempt fails as the node's platform failure.
#include <gtest/gtest.h>

#include <string>

#include "advert/node_key.h"
#include "coordinator/pipeline_support.h"
#include "receipt/receipt.h"

namespace idlegrid::coordinator::testing {
namespace {

Options WithReceiptKey(const advert::NodeKey& key) {
  Options o;
  o.receipt_key = key;
  return o;
}

class ReceiptsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status init = h_.Init();
    ASSERT_TRUE(init.ok()) << init.ToString();
    auto node = h_.AddNode("node-a");
    ASSERT_TRUE(node.ok()) << node.status().ToString();
    node_ = *node;
    v1::JobSpec spec = CpuJob("metered");
    spec.set_retries(0);
    auto job = h_.Submit(spec);
    ASSERT_TRUE(job.ok()) << job.status().ToString();
    job_ = *job;
    h_.coordinator().Tick();
    auto task = h_.Task(job_);
    ASSERT_TRUE(task.ok() && task->attempts_size() == 1);
    attempt_ = task->attempts(0);
    ASSERT_TRUE(h_.Accept(node_, attempt_.id()).ok());
    ASSERT_TRUE(h_.Start(node_, attempt_.id()).ok());
    h_.clock().AdvanceMs(90'000);
  }

  // An EXITED report with the node's statement, signed by `signer`.
  v1::ReportAttemptRequest Exited(const advert::NodeKey& signer, uint64_t statement_epoch) {
    v1::ReportAttemptRequest r;
    r.set_attempt_id(attempt_.id());
    r.set_event(v1::EXITED);
    r.set_lease_epoch(attempt_.lease_epoch());
    v1::ReceiptStatement* s = r.mutable_receipt_statement();
    s->set_job_id(job_);
    s->set_task_index(0);
    s->set_attempt_id(attempt_.id());
    s->set_lease_epoch(statement_epoch);
    s->set_node_id(node_);
    s->mutable_metering()->set_run_ms(90'000);
    s->mutable_metering()->set_cpu_millis(45'000);
    s->mutable_metering()->set_cpu_source("rusage");
    s->mutable_provenance()->set_node_id(node_);
    s->mutable_provenance()->set_node_key_fingerprint(advert::KeyFingerprint(h_.KeyOf(node_).public_key()));
    *r.mutable_provenance() = s->provenance();
    r.set_receipt_signature(*receipt::SignStatement(signer, *s));
    return r;
  }

  const advert::NodeKey coordinator_key_ = advert::NodeKey::Generate();
  PipelineHarness h_{WithReceiptKey(coordinator_key_)};
  std::string node_, job_;
  v1::Attempt attempt_;
};

TEST_F(ReceiptsTest, AGenuineStatementIsCountersignedStoredAndVerifies) {
  ASSERT_TRUE(h_.coordinator().attempts().Report(node_, Exited(h_.KeyOf(node_), attempt_.lease_epoch())).ok());
  auto task = h_.Task(job_);
  ASSERT_TRUE(task.ok());
  EXPECT_EQ(task->state(), v1::SUCCEEDED);
  const v1::Attempt& a = task->attempts(0);
  ASSERT_TRUE(a.has_receipt());
  EXPECT_EQ(a.metering().cpu_millis(), 45'000u);
  const v1::Receipt& r = a.receipt();
  EXPECT_EQ(r.provider(), "operator");
  EXPECT_EQ(r.state(), "SUCCEEDED");
  EXPECT_EQ(r.started_at_ms(), a.started_at_ms());
  EXPECT_EQ(r.finished_at_ms(), a.finished_at_ms());
  EXPECT_EQ(r.node_public_key(), h_.KeyOf(node_).public_key());
  auto checked = receipt::VerifyReceipt(r, receipt::Fingerprint(coordinator_key_.public_key()));
  EXPECT_TRUE(checked.ok()) << checked.status().message();

  v1::GetReceiptRequest req;
  req.set_job_id(job_);
  auto fetched = h_.coordinator().receipts().Get(req);
  ASSERT_TRUE(fetched.ok()) << fetched.status().ToString();
  EXPECT_EQ(fetched->coordinator_signature(), r.coordinator_signature());
  req.set_task_index(1);
  EXPECT_EQ(h_.coordinator().receipts().Get(req).status().code(), Code::kNotFound);
}

TEST_F(ReceiptsTest, AStatementSignedByAnotherKeyFailsTheAttemptAsThePlatformsFault) {
  const advert::NodeKey forger = advert::NodeKey::Generate();
  ASSERT_TRUE(h_.coordinator().attempts().Report(node_, Exited(forger, attempt_.lease_epoch())).ok());
  auto task = h_.Task(job_);
  ASSERT_TRUE(task.ok());
  const v1::Attempt& a = task->attempts(0);
  EXPECT_EQ(a.state(), v1::FAILED);
  EXPECT_EQ(a.failure_reason(), v1::PLATFORM_FAILURE);
  EXPECT_NE(a.message().find("receipt was refused"), std::string::npos) << a.message();
  EXPECT_NE(a.message().find("does not verify with node " + node_), std::string::npos) << a.message();
  EXPECT_FALSE(a.has_receipt());
  EXPECT_NE(task->state(), v1::SUCCEEDED);
  v1::GetReceiptRequest req;
  req.set_job_id(job_);
  EXPECT_EQ(h_.coordinator().receipts().Get(req).status().code(), Code::kNotFound);
}

TEST_F(ReceiptsTest, AStatementForAnotherLeaseIsRefused) {
  ASSERT_TRUE(h_.coordinator().attempts().Report(node_, Exited(h_.KeyOf(node_), attempt_.lease_epoch() + 1)).ok());
  auto task = h_.Task(job_);
  ASSERT_TRUE(task.ok());
  EXPECT_EQ(task->attempts(0).failure_reason(), v1::PLATFORM_FAILURE);
  EXPECT_NE(task->attempts(0).message().find("lease epoch"), std::string::npos) << task->attempts(0).message();
  EXPECT_FALSE(task->attempts(0).has_receipt());
}

TEST_F(ReceiptsTest, AnExitWithoutAStatementIsTakenWithoutAReceipt) {
  ASSERT_TRUE(h_.Exit(node_, attempt_.id(), 0).ok());
  auto task = h_.Task(job_);
  ASSERT_TRUE(task.ok());
  EXPECT_EQ(task->state(), v1::SUCCEEDED);
  EXPECT_FALSE(task->attempts(0).has_receipt());
}

}  // namespace
}  // namespace idlegrid::coordinator::testing
