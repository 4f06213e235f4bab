// Attempts' countersigned receipts (schema v14) in both store backends:
// stored after the exit, read back with the job (its metering with it),
// kept across a reopen, and absent for attempts stored before v14.
#include <gtest/gtest.h>
#include <google/protobuf/util/message_differencer.h>

#include <string>

#include "store/store.h"
#include "store/store_fixture.h"

namespace idlegrid::store {
namespace {

using namespace backends;  // NOLINT: the shared fixture and helpers
using google::protobuf::util::MessageDifferencer;

class ReceiptStoreTest : public StoreFixture, public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override { CreateDatabase(GetParam()); }
};

INSTANTIATE_TEST_SUITE_P(Backends, ReceiptStoreTest, ::testing::Values(BackendKind::kSqlite, BackendKind::kPostgres),
                         [](const auto& info) { return backends::BackendName(info.param); });

v1::Receipt Receipt(const std::string& attempt_id) {
  v1::Receipt r;
  r.set_version(1);
  r.mutable_statement()->set_attempt_id(attempt_id);
  r.mutable_statement()->set_job_id("j1");
  r.mutable_statement()->mutable_metering()->set_cpu_millis(1234);
  r.mutable_statement()->mutable_metering()->set_run_ms(2000);
  r.mutable_statement()->mutable_metering()->set_cpu_source("rusage");
  r.set_node_public_key(std::string(32, '\x01'));
  r.set_node_signature(std::string(64, '\x02'));
  r.set_provider("acme");
  r.set_price_per_hour_micro(2'500'000);
  r.set_charge_micro(1388);
  r.set_coordinator_public_key(std::string(32, '\x03'));
  r.set_coordinator_signature(std::string(64, '\x04'));
  return r;
}

TEST_P(ReceiptStoreTest, AStoredReceiptReadsBackWithItsMetering) {
  CreateJob("j1");
  Assign("j1", 0, "a1", "n1");
  ReportOk("n1", Report("a1", v1::STARTED), 3000);
  ReportOk("n1", Report("a1", v1::EXITED), 5000);
  EXPECT_FALSE(TaskOf("j1", 0).attempts(0).has_receipt()) << "none until one is stored";
  const v1::Receipt r = Receipt("a1");
  ASSERT_TRUE(store_->PutReceipt("a1", r).ok());
  v1::Attempt a = TaskOf("j1", 0).attempts(0);
  ASSERT_TRUE(a.has_receipt());
  EXPECT_TRUE(MessageDifferencer::Equals(a.receipt(), r)) << a.receipt().DebugString();
  EXPECT_EQ(a.metering().cpu_millis(), 1234u);
  EXPECT_EQ(a.metering().cpu_source(), "rusage");
  EXPECT_EQ(a.state(), v1::SUCCEEDED) << "storing a receipt changes nothing else";
  Reopen();
  EXPECT_TRUE(MessageDifferencer::Equals(TaskOf("j1", 0).attempts(0).receipt(), r));
}

TEST_P(ReceiptStoreTest, AReceiptForNoAttemptIsNotFound) {
  Status st = store_->PutReceipt("a-missing", Receipt("a-missing"));
  EXPECT_EQ(st.code(), Code::kNotFound) << st.ToString();
}

TEST_P(ReceiptStoreTest, UpgradingFromV13KeepsOldAttemptsWithoutReceipts) {
  CreateJob("j1");
  Assign("j1", 0, "a1", "n1");
  ReportOk("n1", Report("a1", v1::EXITED), 4000);
  const v1::Job before = Job("j1");
  store_.reset();
  // Back to v13 (the ledger's tables stay): v14 added the receipt column.
  ASSERT_TRUE(db_->Exec(kUndoV18).ok());
  ASSERT_TRUE(db_->Exec(kUndoV17).ok());
  ASSERT_TRUE(db_->Exec(kUndoV16).ok());
  ASSERT_TRUE(db_->Exec(kUndoV15).ok());
  ASSERT_TRUE(db_->Exec("ALTER TABLE attempts DROP COLUMN receipt").ok());
  ASSERT_TRUE(db_->SetSchemaVersion(13).ok());
  Open();
  EXPECT_EQ(*db_->SchemaVersion(), LatestSchemaVersion(GetParam()));
  EXPECT_GE(LatestSchemaVersion(GetParam()), 14);
  const v1::Job after = Job("j1");
  EXPECT_TRUE(MessageDifferencer::Equals(after, before));
  EXPECT_FALSE(after.tasks(0).attempts(0).has_receipt());
  ASSERT_TRUE(store_->PutReceipt("a1", Receipt("a1")).ok());
  EXPECT_TRUE(TaskOf("j1", 0).attempts(0).has_receipt());
}

TEST_P(ReceiptStoreTest, AReceiptThatDoesNotParseIsDataLoss) {
  CreateJob("j1");
  Assign("j1", 0, "a1", "n1");
  ASSERT_TRUE(db_->Exec(GetParam() == BackendKind::kSqlite
                            ? "UPDATE attempts SET receipt = x'0aff' WHERE id = 'a1'"
                            : "UPDATE attempts SET receipt = '\\x0aff'::bytea WHERE id = 'a1'")
                  .ok());
  auto job = store_->GetJob("j1");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), Code::kDataLoss);
  EXPECT_NE(job.status().message().find("receipt of attempt a1"), std::string::npos) << job.status().message();
}

}  // namespace
}  // namespace idlegrid::store
